package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

// fastValid is validJSON's own verdict, before json.Valid is asked.
func fastValid(b []byte) bool {
	v := validator{b: b}
	return v.value(0) && skipSpace(b, v.i) == len(b)
}

var jsonDocs = []string{
	`{}`, ` {"a": 1} `, `{"a": [1, -2.5e+3, 0, 0.1, 1E9, true, false, null, "s\n\u00e9\"", {}, []]}`,
	`{"data": {"text/plain": "` + strings.Repeat("y", 1<<16) + `"}, "metadata": {}}`,
	"{\"raw\": \"\xff bytes json.Valid takes\"}",
	`[]`, `"x"`, `0`, `-0`, `1.5`,
	// invalid
	`{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`, `"\q"`, `"\u12"`,
	"\"ctl \x01\"", `{"a":1}}`, `{} {}`, ``, `   `, `{"a":[}`, `NaN`,
	strings.Repeat("[", 600) + strings.Repeat("]", 600),
	strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
}

// validJSON is json.Valid, and its fast pass never accepts what json.Valid
// rejects.
func TestValidJSONAsEncodingJSON(t *testing.T) {
	for _, d := range jsonDocs {
		checkValid(t, d)
	}
	for _, d := range jsonDocs[:10] {
		if !fastValid([]byte(d)) {
			t.Errorf("%.60q: not valid by the fast pass", d)
		}
	}
}

func checkValid(t *testing.T, d string) {
	t.Helper()
	want := json.Valid([]byte(d))
	if got := validJSON([]byte(d)); got != want {
		t.Errorf("validJSON(%.60q) = %v, json.Valid %v", d, got, want)
	}
	if fastValid([]byte(d)) && !want {
		t.Errorf("fast pass accepts %.60q, which json.Valid rejects", d)
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, d := range jsonDocs {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, d string) { checkValid(t, d) })
}

func BenchmarkValid1MB(b *testing.B) {
	doc := []byte(`{"name": "stdout", "text": "` + strings.Repeat("x", 1<<20) + `\n"}`)
	b.SetBytes(int64(len(doc)))
	b.Run("validJSON", func(b *testing.B) {
		for b.Loop() {
			validJSON(doc)
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		for b.Loop() {
			json.Valid(doc)
		}
	})
}
