package jsonscan

import (
	"encoding/json"
	"testing"
)

var values = []string{
	`null`, `true`, `false`, `0`, `-0`, `12`, `-3.25e+10`, `1E5`, `0.5`, `""`, `"a\"b\\c\/d\b\f\n\r\t"`,
	`"\u00e9\u4E2D"`, `"héllo 世界"`, `[]`, `[1,"a",[null,{}]]`, `{}`, `{"a":{"b":[1,2,{"c":"d"}]},"e":null}`,
	" { \"a\" : [ 1 , 2 ] } ", `"\ud83d\ude00"`,
	// not JSON, or not taken
	`nul`, `tru`, `01`, `-`, `1.`, `.5`, `1e`, `+1`, `"a`, `"\x"`, `"\u12"`, "\"a\x01\"", `[1,]`, `{"a"}`, `{"a":1,}`,
	`{,}`, `[1 2]`, `{"a":1 "b":2}`, `}`, ``, `"a" "b"`, "\"\xff\"",
}

// TestSkipAgreesWithEncodingJSON: a value Skip takes is valid JSON, and
// every valid value of the list is taken.
func TestSkipAgreesWithEncodingJSON(t *testing.T) {
	for _, v := range values {
		s := New([]byte(v))
		s.Skip()
		if got, want := s.End(), json.Valid([]byte(v)); got != want {
			t.Errorf("%q: taken %v, valid %v", v, got, want)
		}
	}
}

// TestString: strings are decoded as encoding/json decodes them; those the
// decoders read differently (surrogate halves, invalid UTF-8) are refused.
func TestString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		want string
	}{
		{`"plain"`, true, "plain"},
		{`"a\nb\u0041\u00e9"`, true, "a\nbAé"},
		{`"\ud83d\ude00"`, false, ""},
		{`"\udc00"`, false, ""},
		{"\"\xff\"", false, ""},
		{`5`, false, ""},
		{`null`, false, ""},
	} {
		s := New([]byte(tc.in))
		got := s.String()
		if s.End() != tc.ok || got != tc.want {
			t.Errorf("%s: %q %v, want %q %v", tc.in, got, !s.failed, tc.want, tc.ok)
		}
	}
}

func TestInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		want int64
	}{
		{`0`, true, 0}, {`-7`, true, -7}, {`123456789012345678`, true, 123456789012345678},
		{`1234567890123456789`, false, 0}, {`01`, false, 0}, {`1.0`, false, 0}, {`1e2`, false, 0}, {`-`, false, 0}, {`"1"`, false, 0},
	} {
		s := New([]byte(tc.in))
		got := s.Int()
		if s.End() != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("%s: %d %v, want %d %v", tc.in, got, !s.failed, tc.want, tc.ok)
		}
	}
}

func TestObject(t *testing.T) {
	s := New([]byte(` {"a": "x", "b": [1, 2], "c": null} `))
	var a string
	var keys []string
	s.Enter('{')
	for i := 0; s.More('}', i); i++ {
		k := string(s.Key())
		keys = append(keys, k)
		switch k {
		case "a":
			a = s.String()
		case "c":
			if !s.IsNull() {
				s.Fail()
			}
		default:
			s.Skip()
		}
	}
	if !s.End() || a != "x" || len(keys) != 3 {
		t.Fatalf("ok %v a %q keys %q", !s.failed, a, keys)
	}
	s = New([]byte(`{"a\u0062": 1}`))
	s.Enter('{')
	if s.More('}', 0); s.Key() != nil || !s.failed {
		t.Fatal("a key with an escape was taken")
	}
}

func FuzzSkip(f *testing.F) {
	for _, v := range values {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := New(b)
		s.Skip()
		if s.End() && !json.Valid(b) {
			t.Fatalf("took %q, which is not JSON", b)
		}
	})
}

func FuzzString(f *testing.F) {
	for _, v := range values {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := New(b)
		got := s.String()
		if !s.End() {
			return
		}
		var want string
		if err := json.Unmarshal(b, &want); err != nil || got != want {
			t.Fatalf("%q: %q, encoding/json %q (%v)", b, got, want, err)
		}
	})
}
