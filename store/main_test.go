package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentkernel/agentkernel/messages"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		os.Exit(crashChild())
	}
	goleak.VerifyTestMain(m)
}

func newStore(t testing.TB, opts ...func(*Options)) *Store {
	t.Helper()
	o := Options{Dir: t.TempDir(), Debounce: 20 * time.Millisecond}
	for _, f := range opts {
		f(&o)
	}
	s, err := Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newSession(t testing.TB, s *Store) string {
	t.Helper()
	ss, err := s.CreateSession(context.Background(), NewSession{Model: "m", Provider: "p"})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return ss.ID
}

func say(ts int64, kind messages.Say, text string) messages.UIMessage {
	return messages.UIMessage{TS: ts, Type: messages.TypeSay, Say: kind, Text: text}
}

func ask(ts int64, kind messages.Ask, text string) messages.UIMessage {
	return messages.UIMessage{TS: ts, Type: messages.TypeAsk, Ask: kind, Text: text}
}

func userText(ts int64, text string) messages.APIMessage {
	return messages.APIMessage{Role: messages.RoleUser, TS: ts, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: text}}}
}

func assistantText(ts int64, text string) messages.APIMessage {
	return messages.APIMessage{Role: messages.RoleAssistant, TS: ts, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: text}}}
}

func toolUse(ts int64, id string) messages.APIMessage {
	return messages.APIMessage{Role: messages.RoleAssistant, TS: ts, Content: []messages.ContentBlock{
		{Type: messages.BlockText, Text: "running"},
		{Type: messages.BlockToolUse, ID: id, Name: "execute_command", Input: json.RawMessage(`{"command":"ls"}`)},
	}}
}

func toolResult(ts int64, id, out string) messages.APIMessage {
	return messages.APIMessage{Role: messages.RoleUser, TS: ts, Content: []messages.ContentBlock{
		{Type: messages.BlockToolResult, ToolUseID: id, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: out}}},
	}}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func equalJSON(t testing.TB, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func tsList(ms []messages.UIMessage) string {
	out := ""
	for _, m := range ms {
		out += fmt.Sprintf("%d ", m.TS)
	}
	return out
}
