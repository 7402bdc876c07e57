package wire

import (
	"encoding/json"
	"testing"
)

var headerDocs = []string{
	`{"msg_id":"a1","session":"s","username":"u","date":"2026-12-03T10:00:00.000000Z","msg_type":"execute_request","version":"5.4"}`,
	`{ "msg_id" : "a" , "msg_type" : "stream" }`,
	`{"msg_id":"a","extra":{"x":[1,2.5e3,true,null,"y"]},"msg_type":"status","subshell_id":"ss"}`,
	`{"MSG_ID":"a","msg_type":"t"}`,
	`{"msg_ſd":"a","msg_type":"t"}`,
	`{"msg_id":null,"msg_type":"t"}`,
	`{"msg_id":5,"msg_type":"t"}`,
	`{"msg_id":"a","msg_id":"b","msg_type":"t"}`,
	`{"msg_id":"\u00e9\n\"","msg_type":"t\ud83d\ude00"}`,
	"{\"msg_id\":\"\xff\",\"msg_type\":\"t\"}",
	`{"msg_id":"a",}`,
	`{"msg_id":"a"} x`,
	`{}`, ` {} `, `null`, `[]`, `"x"`, ``, `{`,
	`{"date":"2026-12-03T10:00:00.000000+00:00","username":"","session":""}`,
}

// checkHeader compares decodeHeader with json.Unmarshal on b, into a
// header that already holds values (both merge).
func checkHeader(t *testing.T, b string) {
	start := Header{MsgID: "old", Version: "5.0"}
	got, want := start, start
	err := decodeHeader([]byte(b), &got)
	wantErr := json.Unmarshal([]byte(b), &want)
	if (err != nil) != (wantErr != nil) || got != want {
		t.Errorf("decodeHeader(%q) = %+v, %v; encoding/json: %+v, %v", b, got, err, want, wantErr)
	}
}

func TestDecodeHeader(t *testing.T) {
	for _, d := range headerDocs {
		checkHeader(t, d)
	}
	var h Header
	if !fastHeader([]byte(headerDocs[0]), &h) || h.MsgType != "execute_request" {
		t.Errorf("an ordinary header took the slow path: %+v", h)
	}
}

func FuzzDecodeHeader(f *testing.F) {
	for _, d := range headerDocs {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, b string) { checkHeader(t, b) })
}

func BenchmarkDecodeHeader(b *testing.B) {
	doc := []byte(headerDocs[0])
	b.Run("decodeHeader", func(b *testing.B) {
		for b.Loop() {
			var h Header
			if err := decodeHeader(doc, &h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		for b.Loop() {
			var h Header
			if err := json.Unmarshal(doc, &h); err != nil {
				b.Fatal(err)
			}
		}
	})
}
