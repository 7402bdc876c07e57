package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

// streamContents are stream contents of the shapes kernels send, and of
// those DecodeStream leaves to encoding/json.
var streamContents = []string{
	`{"name": "stdout", "text": "hello\n"}`,
	`{"name":"stderr","text":"a\tb \"q\" \\ \/ \b\f\r\u001b[31mred\u001b[0m"}`,
	`{"text": "only text"}`,
	`{}`,
	` { "name" : "stdout" , "text" : "x" } `,
	`{"name": "stdout", "text": "é ü 日本 \u00e9 \ud83d\ude00 \ud83d lone \ude00 half \ud83d\u0041"}`,
	`{"name": "stdout", "text": "` + strings.Repeat("x", 1<<20) + `"}`,
	`{"Name": "stdout", "text": "case-insensitive key"}`,
	`{"name": "stdout", "text": "a", "text": "duplicate"}`,
	`{"name": "stdout", "text": null}`,
	`{"name": "stdout", "text": 3}`,
	`{"name": "stdout", "text": "x", "extra": [1, 2]}`,
	"{\"name\": \"stdout\", \"text\": \"bad utf-8 \xff\xfe\"}",
	"{\"name\": \"stdout\", \"text\": \"raw control \x01\"}",
	`{"name": "stdout", "text": "bad escape \q"}`,
	`{"name": "stdout", "text": "short \u12"}`,
	`{"name": "stdout", "text": "unterminated`,
	`{"name": "stdout", "text": "x"} trailing`,
	`{"name": "stdout" "text": "x"}`,
	`{"name": "stdout",}`,
	`[]`,
	``,
}

// DecodeStream gives what encoding/json gives, error or not.
func TestDecodeStreamAsEncodingJSON(t *testing.T) {
	for _, c := range streamContents {
		checkStream(t, c)
	}
}

func checkStream(t *testing.T, c string) {
	t.Helper()
	var want Stream
	wantErr := json.Unmarshal([]byte(c), &want)
	m := &Message{Header: Header{MsgType: MsgStream}, Content: json.RawMessage(c)}
	if len(c) == 0 {
		wantErr = json.Unmarshal(emptyObject, &want) // DecodeContent's rule
	}
	got, err := m.DecodeStream()
	if (err != nil) != (wantErr != nil) || got != want {
		t.Errorf("DecodeStream(%.80q) = %.80q, %v; encoding/json: %.80q, %v", c, got, err, want, wantErr)
	}
}

func FuzzDecodeStream(f *testing.F) {
	for _, c := range streamContents {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, c string) { checkStream(t, c) })
}

func BenchmarkDecodeStream1MB(b *testing.B) {
	m := &Message{Header: Header{MsgType: MsgStream},
		Content: json.RawMessage(`{"name": "stdout", "text": "` + strings.Repeat("x", 1<<20) + `\n"}`)}
	b.SetBytes(int64(len(m.Content)))
	b.Run("DecodeStream", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.DecodeStream(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DecodeContent", func(b *testing.B) {
		for b.Loop() {
			var s Stream
			if err := m.DecodeContent(&s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
