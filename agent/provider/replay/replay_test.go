package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/anthropic"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const secretKey = "sk-live-abcdefghijklmnopqrstuvwxyz"

func client(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func newProviders(t *testing.T, srv *scripted.Server) map[string]provider.Provider {
	t.Helper()
	o, err := openai.New(openai.Config{APIKey: secretKey, BaseURL: srv.OpenAIURL(), Model: "gpt-4.1", HTTPClient: client(t)})
	if err != nil {
		t.Fatal(err)
	}
	a, err := anthropic.New(anthropic.Config{APIKey: secretKey, BaseURL: srv.AnthropicURL(), Model: "claude-sonnet-4-5", HTTPClient: client(t)})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]provider.Provider{"openai": o, "anthropic": a}
}

// outcome is what one model call gave.
type outcome struct {
	Events []provider.Event
	Err    string
	API    *provider.APIError
}

func call(t *testing.T, p provider.Provider, req provider.Request) outcome {
	t.Helper()
	var o outcome
	s, err := p.Stream(context.Background(), req)
	if err == nil {
		defer s.Close()
		for {
			var ev provider.Event
			ev, err = s.Next()
			if err != nil {
				break
			}
			o.Events = append(o.Events, ev)
		}
	}
	if err != nil && err != io.EOF {
		o.Err = err.Error()
		if ae, ok := provider.AsAPIError(err); ok {
			c := *ae
			c.Err = nil
			o.API = &c
		}
	}
	return o
}

func text(role messages.Role, s string) messages.APIMessage {
	return messages.APIMessage{Role: role, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: s}}}
}

var tools = []provider.Tool{{Name: "list_files"}, {Name: "read_file"}}

// conversation drives p through a scripted conversation the way the task
// loop would, recording tool results and approvals with rec (if not nil)
// and checking them against pl (if not nil).
func conversation(t *testing.T, p provider.Provider, rec *Recorder, pl *Player) []outcome {
	t.Helper()
	var outs []outcome
	hist := []messages.APIMessage{text(messages.RoleUser, "list the files; my key is "+secretKey)}
	req := func() provider.Request { return provider.Request{System: "sys", Messages: hist, Tools: tools} }

	o := call(t, p, req()) // 1: a tool call
	outs = append(outs, o)
	if len(o.Events) < 2 || o.Events[1].ToolCall == nil {
		t.Fatalf("call 1: %+v", o)
	}
	tc := o.Events[1].ToolCall
	result := "a.txt\nb.txt\n" + "API_KEY=" + secretKey
	if rec != nil {
		if err := rec.RecordApproval("list_files {}", "allow"); err != nil {
			t.Fatal(err)
		}
		if err := rec.RecordToolResult(tc.ID, result); err != nil {
			t.Fatal(err)
		}
	}
	if pl != nil {
		if a, err := pl.NextApproval("list_files {}"); err != nil || a != "allow" {
			t.Errorf("NextApproval = %q, %v", a, err)
		}
		if r, ok := pl.ToolResult(tc.ID); !ok || strings.Contains(r, secretKey) || !strings.HasPrefix(r, "a.txt\nb.txt\nAPI_KEY=") {
			t.Errorf("ToolResult = %q, %v", r, ok)
		}
	}
	hist = append(hist,
		messages.APIMessage{Role: messages.RoleAssistant, Content: []messages.ContentBlock{
			{Type: messages.BlockText, Text: o.Events[0].Text},
			{Type: messages.BlockToolUse, ID: tc.ID, Name: tc.Name, Input: tc.Input}}},
		messages.APIMessage{Role: messages.RoleUser, Content: []messages.ContentBlock{
			{Type: messages.BlockToolResult, ToolUseID: tc.ID, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: result}}}}},
	)
	outs = append(outs, call(t, p, req())) // 2: 429
	outs = append(outs, call(t, p, req())) // 3: mid-stream error
	outs = append(outs, call(t, p, req())) // 4: the answer
	return outs
}

func script(srv *scripted.Server) {
	srv.Enqueue(
		scripted.Reply(scripted.Text("Let me look."), scripted.ToolCall("call_1", "list_files", `{`, `}`),
			scripted.UsageStep(scripted.Usage{Input: 120, Output: 9})),
		scripted.Fail(429, "2"),
		scripted.Reply(scripted.Text("par"), scripted.StreamError("overloaded_error", "Overloaded")),
		scripted.Reply(scripted.Reasoning("the key is "+secretKey), scripted.Signature("sig"),
			scripted.Text("Two files: a.txt and b.txt"), scripted.UsageStep(scripted.Usage{Input: 200, Output: 12, CacheRead: 50})),
	)
}

func TestRecordThenReplay(t *testing.T) {
	for _, name := range []string{"openai", "anthropic"} {
		t.Run(name, func(t *testing.T) {
			srv := scripted.New(t)
			script(srv)
			p := newProviders(t, srv)[name]
			path := filepath.Join(t.TempDir(), "run.jsonl")
			rec, err := Create(path, p, &RecorderOptions{Secrets: []string{secretKey}})
			if err != nil {
				t.Fatal(err)
			}
			recorded := conversation(t, rec, rec, nil)
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			if err := rec.Close(); !errors.Is(err, net.ErrClosed) {
				t.Errorf("second Close: %v", err)
			}
			if recorded[1].API == nil || recorded[1].API.Status != 429 || recorded[2].API == nil || !recorded[2].API.Retryable {
				t.Fatalf("recorded errors: %+v %+v", recorded[1], recorded[2])
			}
			data, err := os.ReadFile(path)
			if os.Getenv("REPLAY_SHOW") != "" {
				t.Logf("%s", data)
			}
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(data, []byte(secretKey)) || bytes.Contains(data, []byte("abcdefghijklmnop")) {
				t.Errorf("the cassette holds the key:\n%s", data)
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
				t.Errorf("cassette mode %v", st.Mode().Perm())
			}

			pl, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if pl.Calls() != 4 || pl.Name() != "replay" || pl.RecordedProvider() != name || pl.Model() != p.Model() {
				t.Errorf("player: %d calls, %q, %q, %+v", pl.Calls(), pl.Name(), pl.RecordedProvider(), pl.Model())
			}
			replayed := conversation(t, pl, nil, pl)
			// What the model said is scrubbed in the cassette: scrub the
			// recorded outcome the same way before comparing.
			want := scrubOutcomes(recorded)
			if !reflect.DeepEqual(replayed, want) {
				a, _ := json.MarshalIndent(replayed, "", " ")
				b, _ := json.MarshalIndent(want, "", " ")
				t.Errorf("replay differs:\n got %s\nwant %s", a, b)
			}
			if pl.Remaining() != 0 {
				t.Errorf("Remaining = %d", pl.Remaining())
			}
			_, err = pl.Stream(context.Background(), provider.Request{Messages: []messages.APIMessage{text(messages.RoleUser, "more?")}})
			if !errors.Is(err, ErrExhausted) || !strings.Contains(err.Error(), "call 5") || !strings.Contains(err.Error(), "more?") {
				t.Errorf("past the end: %v", err)
			}
			if _, err := pl.NextApproval("again"); !errors.Is(err, ErrExhausted) {
				t.Errorf("approval past the end: %v", err)
			}
		})
	}
}

func scrubOutcomes(outs []outcome) []outcome {
	sc := newScrubber([]string{secretKey}, false)
	var res []outcome
	for _, o := range outs {
		c := outcome{Err: sc.scrub(o.Err), API: o.API}
		for _, ev := range o.Events {
			c.Events = append(c.Events, sc.event(ev))
		}
		res = append(res, c)
	}
	return res
}

// record makes a cassette from the scripted conversation.
func record(t *testing.T) string {
	t.Helper()
	srv := scripted.New(t)
	script(srv)
	path := filepath.Join(t.TempDir(), "run.jsonl")
	rec, err := Create(path, newProviders(t, srv)["openai"], nil)
	if err != nil {
		t.Fatal(err)
	}
	conversation(t, rec, rec, nil)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDivergence(t *testing.T) {
	path := record(t)
	tests := []struct {
		name string
		req  provider.Request
		what string
	}{
		{"other text", provider.Request{Messages: []messages.APIMessage{text(messages.RoleUser, "list the folders")}, Tools: tools}, "last user message"},
		{"other tools", provider.Request{Messages: []messages.APIMessage{text(messages.RoleUser, "list the files; my key is "+secretKey)}, Tools: tools[:1]}, "tools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = pl.Stream(context.Background(), tt.req)
			var de *DivergenceError
			if !errors.As(err, &de) || de.Call != 1 || de.What != tt.what {
				t.Fatalf("err = %v", err)
			}
			msg := err.Error()
			for _, s := range []string{"call 1", tt.what, path} {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not say %q", msg, s)
				}
			}
			if tt.what == "last user message" && (!strings.Contains(msg, "list the folders") || !strings.Contains(msg, "list the files")) {
				t.Errorf("error %q does not show both texts", msg)
			}
			if pl.Remaining() != 4 {
				t.Errorf("a diverged call was consumed")
			}
		})
	}
	t.Run("approval", func(t *testing.T) {
		pl, _ := Open(path)
		_, err := pl.NextApproval("write_file x")
		var de *DivergenceError
		if !errors.As(err, &de) || de.Approval != 1 || !strings.Contains(err.Error(), "approval 1") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestBadCassettes(t *testing.T) {
	good, err := os.ReadFile(record(t))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(good)), "\n")
	header := lines[0]
	tests := []struct {
		name, data, want string
	}{
		{"empty", "", "empty"},
		{"not JSON", header + "{not json\n", "line 2: invalid JSON"},
		{"truncated last line", string(good[:len(good)-20]), "invalid JSON"},
		{"no header", strings.Join(lines[1:], ""), "line 1: the first line"},
		{"wrong version", strings.Replace(header, `"version":1`, `"version":9`, 1), "version 9"},
		{"unknown kind", header + `{"kind":"mystery"}` + "\n", `line 2: unknown line kind "mystery"`},
		{"unknown field", header + `{"kind":"approval","ask":"a","answer":"b","extra":1}` + "\n", "line 2: invalid JSON"},
		{"gap in calls", header + `{"kind":"call","call":2,"request":{"messages":1,"last":"","lastSHA256":""}}` + "\n", "call 1 is missing"},
		{"bad event", header + `{"kind":"call","call":1,"request":{"messages":1,"last":"","lastSHA256":""},"events":[{"type":"bogus"}]}` + "\n", `line 2: call 1 event 1: unknown event type "bogus"`},
		{"a text file", "hello\n", "line 1: invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tt.data), "x.jsonl")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "x.jsonl") {
				t.Errorf("err = %v, want it to say %q", err, tt.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := Open(filepath.Join(t.TempDir(), "nope.jsonl"))
		if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "nope.jsonl") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("recorded without done", func(t *testing.T) {
		data := header + `{"kind":"call","call":1,"request":{"messages":0,"last":"","lastSHA256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},"events":[{"type":"text","text":"a"}]}` + "\n"
		pl, err := Load(strings.NewReader(data), "x")
		if err != nil {
			t.Fatal(err)
		}
		o := call(t, pl, provider.Request{})
		if len(o.Events) != 1 || !strings.Contains(o.Err, "without a done event") {
			t.Errorf("%+v", o)
		}
	})
}

func TestAbortedCall(t *testing.T) {
	srv := scripted.New(t)
	srv.Enqueue(scripted.Reply(scripted.Text("a", "b"), scripted.Stall()))
	var buf bytes.Buffer
	rec, err := NewRecorder(newProviders(t, srv)["openai"], &buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := provider.Request{Messages: []messages.APIMessage{text(messages.RoleUser, "go")}}
	s, err := rec.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { defer close(done); s.Close() }()
	if _, err := s.Next(); !errors.Is(err, context.Canceled) {
		t.Errorf("after Close: %v", err)
	}
	<-done
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	cassette := bytes.Clone(buf.Bytes())
	pl, err := Load(&buf, "buf")
	if err != nil {
		t.Fatal(err)
	}
	o := call(t, pl, req)
	if len(o.Events) != 2 || !strings.Contains(o.Err, "cut short") {
		t.Errorf("replayed: %+v", o)
	}
	// The replayed error wraps context.Canceled, as the original did.
	pl, _ = Load(bytes.NewReader(cassette), "again")
	ps, err := pl.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	for {
		if _, err = ps.Next(); err != nil {
			break
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("replayed abort: %v, want context.Canceled", err)
	}
}

func TestPlayStreamCancel(t *testing.T) {
	path := record(t)
	pl, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req := provider.Request{System: "sys", Messages: []messages.APIMessage{text(messages.RoleUser, "list the files; my key is "+secretKey)}, Tools: tools}
	s, err := pl.Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := s.Next(); !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %v", err)
	}
	s.Close()
	s.Close()
}

func TestScrub(t *testing.T) {
	sc := newScrubber([]string{"hunter2hunter2"}, true)
	tests := []struct{ in, want string }{
		{"key sk-proj-AbCdEf0123456789xyz here", "key [REDACTED] here"},
		{"sk-ant-api03-abcdefghijklmnop", "[REDACTED]"},
		{"Authorization: Bearer abc.def.ghi123", "Authorization: [REDACTED]"},
		{`{"api_key": "abcd1234efgh"}`, `{"api_key": "[REDACTED]"}`},
		{"x-api-key: zzzzzzzzzzzz", "x-api-key: [REDACTED]"},
		{"OPENAI_API_KEY=abc123456789", "OPENAI_API_KEY=[REDACTED]"},
		{"pw hunter2hunter2", "pw [REDACTED]"},
		{"plain text stays", "plain text stays"},
	}
	for _, tt := range tests {
		if got := sc.scrub(tt.in); got != tt.want {
			t.Errorf("scrub(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
