package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testKey = "sk-test-0123456789SECRETabcdef"

// newTest starts a scripted server and a provider pointed at it, with its
// own HTTP transport so that no idle connection outlives the test.
func newTest(t *testing.T, turns ...scripted.Turn) (*scripted.Server, *Provider) {
	t.Helper()
	srv := scripted.New(t)
	srv.Enqueue(turns...)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	p, err := New(Config{APIKey: testKey, BaseURL: srv.OpenAIURL(), Model: "gpt-4.1", HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	return srv, p
}

func userText(s string) messages.APIMessage {
	return messages.APIMessage{Role: messages.RoleUser, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: s}}}
}

// collect reads a stream to its end; err is nil after io.EOF.
func collect(t *testing.T, s provider.Stream) ([]provider.Event, error) {
	t.Helper()
	defer s.Close()
	var evs []provider.Event
	for {
		ev, err := s.Next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func run(t *testing.T, p provider.Provider, req provider.Request) ([]provider.Event, error) {
	t.Helper()
	s, err := p.Stream(context.Background(), req)
	if err != nil {
		return nil, err
	}
	return collect(t, s)
}

func simpleReq() provider.Request {
	return provider.Request{System: "be brief", Messages: []messages.APIMessage{userText("hi")}}
}

func TestStreams(t *testing.T) {
	call := func(id, name, in string) provider.Event {
		return provider.Event{Type: provider.EventToolCall, ToolCall: &provider.ToolCall{ID: id, Name: name, Input: json.RawMessage(in)}}
	}
	text := func(s string) provider.Event { return provider.Event{Type: provider.EventText, Text: s} }
	done := func(r provider.StopReason) provider.Event {
		return provider.Event{Type: provider.EventDone, StopReason: r}
	}
	usage := func(u provider.Usage) provider.Event { return provider.Event{Type: provider.EventUsage, Usage: &u} }
	tests := []struct {
		name string
		turn scripted.Turn
		want []provider.Event
	}{
		{"text", scripted.Reply(scripted.Text("Hel", "lo", " world"), scripted.UsageStep(scripted.Usage{Input: 10, Output: 3, CacheRead: 4})),
			[]provider.Event{text("Hel"), text("lo"), text(" world"), usage(provider.Usage{InputTokens: 10, OutputTokens: 3, CacheReadTokens: 4}), done(provider.StopEndTurn)}},
		{"reasoning", scripted.Reply(scripted.Reasoning("thin", "king"), scripted.Text("answer")),
			[]provider.Event{{Type: provider.EventReasoning, Text: "thin"}, {Type: provider.EventReasoning, Text: "king"}, text("answer"), done(provider.StopEndTurn)}},
		{"tool call in pieces", scripted.Reply(scripted.Text("let me look"), scripted.ToolCall("call_1", "read_file", `{"pa`, `th"`, `: "a`, `.txt"`, `}`)),
			[]provider.Event{text("let me look"), call("call_1", "read_file", `{"path": "a.txt"}`), done(provider.StopToolUse)}},
		{"parallel tool calls", scripted.Reply(
			scripted.ToolCall("call_a", "read_file", `{"path":`, `"a"}`),
			scripted.ToolCall("call_b", "list_files", `{}`),
			scripted.ToolCall("call_c", "read_file", `{"path":"c"}`),
			scripted.UsageStep(scripted.Usage{Input: 5, Output: 7})),
			[]provider.Event{call("call_a", "read_file", `{"path":"a"}`), call("call_b", "list_files", `{}`), call("call_c", "read_file", `{"path":"c"}`),
				usage(provider.Usage{InputTokens: 5, OutputTokens: 7}), done(provider.StopToolUse)}},
		{"tool call without arguments", scripted.Reply(scripted.ToolCall("call_1", "list_files")),
			[]provider.Event{call("call_1", "list_files", `{}`), done(provider.StopToolUse)}},
		{"vLLM null choices usage chunk", scripted.Reply(scripted.Text("ok"), scripted.UsageStep(scripted.Usage{Input: 3, Output: 1, NullChoices: true})),
			[]provider.Event{text("ok"), usage(provider.Usage{InputTokens: 3, OutputTokens: 1}), done(provider.StopEndTurn)}},
		{"ping comments ignored", scripted.Reply(scripted.Ping(), scripted.Text("a"), scripted.Ping()),
			[]provider.Event{text("a"), done(provider.StopEndTurn)}},
		{"max tokens", scripted.Reply(scripted.Text("cut"), scripted.Stop("max_tokens")),
			[]provider.Event{text("cut"), done(provider.StopMaxTokens)}},
		{"content filter", scripted.Reply(scripted.Stop("content_filter")),
			[]provider.Event{done(provider.StopOther)}},
		{"reasoning field (Ollama)", scripted.Reply(scripted.Raw(`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning":"hmm"},"finish_reason":null}]}`)),
			[]provider.Event{{Type: provider.EventReasoning, Text: "hmm"}, done(provider.StopEndTurn)}},
		{"unindexed whole tool calls in one chunk", scripted.Reply(scripted.Raw(`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[` +
			`{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},` +
			`{"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`)),
			[]provider.Event{call("c1", "f", `{"a":1}`), call("c2", "g", `{}`), done(provider.StopToolUse)}},
		{"stop after tool calls (Ollama)", scripted.Reply(scripted.ToolCall("c1", "f", `{}`), scripted.Stop("end_turn")),
			[]provider.Event{call("c1", "f", `{}`), done(provider.StopToolUse)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, p := newTest(t, tt.turn)
			got, err := run(t, p, simpleReq())
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("events:\n got %s\nwant %s", dump(got), dump(tt.want))
			}
		})
	}
}

func dump(evs []provider.Event) string {
	b, _ := json.Marshal(evs)
	return string(b)
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name       string
		turn       scripted.Turn
		status     int
		typ        string
		retryable  bool
		retryAfter time.Duration
	}{
		{"429 with Retry-After", scripted.Fail(429, "2"), 429, "rate_limit_error", true, 2 * time.Second},
		{"429 with fractional Retry-After", scripted.Fail(429, "0.5"), 429, "rate_limit_error", true, 500 * time.Millisecond},
		{"500", scripted.Fail(500, ""), 500, "server_error", true, 0},
		{"503", scripted.Fail(503, "1"), 503, "server_error", true, time.Second},
		{"400", scripted.Turn{Status: 400, ErrorMessage: "bad tools"}, 400, "invalid_request_error", false, 0},
		{"401", scripted.Fail(401, ""), 401, "authentication_error", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, p := newTest(t, tt.turn)
			_, err := run(t, p, simpleReq())
			ae, ok := provider.AsAPIError(err)
			if !ok {
				t.Fatalf("err = %v (%T), want *provider.APIError", err, err)
			}
			if ae.Status != tt.status || ae.Type != tt.typ || ae.Retryable != tt.retryable || ae.RetryAfter != tt.retryAfter || ae.Provider != "openai" {
				t.Errorf("got %+v", *ae)
			}
			if !strings.Contains(err.Error(), fmt.Sprint(tt.status)) {
				t.Errorf("error %q does not name the status", err)
			}
		})
	}
}

func TestMidStreamErrors(t *testing.T) {
	t.Run("error chunk", func(t *testing.T) {
		_, p := newTest(t, scripted.Reply(scripted.Text("partial"), scripted.StreamError("server_error", "the model crashed")))
		evs, err := run(t, p, simpleReq())
		if len(evs) != 1 || evs[0].Text != "partial" {
			t.Errorf("events before the error: %s", dump(evs))
		}
		ae, ok := provider.AsAPIError(err)
		if !ok || !ae.Retryable || ae.Status != 0 || ae.Type != "server_error" || ae.Message != "the model crashed" {
			t.Fatalf("err = %#v", err)
		}
	})
	t.Run("dropped connection", func(t *testing.T) {
		_, p := newTest(t, scripted.Reply(scripted.Text("partial"), scripted.Disconnect()))
		_, err := run(t, p, simpleReq())
		ae, ok := provider.AsAPIError(err)
		if !ok || !ae.Retryable {
			t.Fatalf("err = %v, want a retryable APIError", err)
		}
	})
	t.Run("garbage chunk", func(t *testing.T) {
		_, p := newTest(t, scripted.Reply(scripted.Raw(`{not json`)))
		_, err := run(t, p, simpleReq())
		ae, ok := provider.AsAPIError(err)
		if !ok || ae.Retryable {
			t.Fatalf("err = %v, want a non-retryable APIError", err)
		}
	})
}

func TestClientTimeout(t *testing.T) {
	srv := scripted.New(t)
	srv.Enqueue(scripted.Reply(scripted.Text("a"), scripted.Stall()))
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	p, err := New(Config{APIKey: testKey, BaseURL: srv.OpenAIURL(), Model: "gpt-4.1", HTTPClient: &http.Client{Transport: tr, Timeout: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(t, p, simpleReq())
	ae, ok := provider.AsAPIError(err)
	if !ok || !ae.Retryable || ae.Type != "timeout" {
		t.Fatalf("err = %v, want a retryable timeout APIError", err)
	}
}

func TestCancel(t *testing.T) {
	t.Run("ctx", func(t *testing.T) {
		_, p := newTest(t, scripted.Reply(scripted.Text("a"), scripted.Stall()))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := p.Stream(ctx, simpleReq())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if ev, err := s.Next(); err != nil || ev.Text != "a" {
			t.Fatalf("first event: %+v, %v", ev, err)
		}
		cancel()
		if _, err := s.Next(); !errors.Is(err, context.Canceled) {
			t.Fatalf("after cancel: %v, want context.Canceled", err)
		}
	})
	t.Run("Close from another goroutine", func(t *testing.T) {
		_, p := newTest(t, scripted.Reply(scripted.Text("a"), scripted.Delay(time.Hour), scripted.Text("never")))
		s, err := p.Stream(context.Background(), simpleReq())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			s.Close()
			s.Close()
		}()
		_, err = s.Next()
		<-closed
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("after Close: %v, want context.Canceled", err)
		}
		if _, err2 := s.Next(); err2 == nil {
			t.Fatal("Next after the end returned no error")
		}
	})
}

func TestRequestMapping(t *testing.T) {
	srv, p := newTest(t, scripted.Reply(scripted.Text("ok")))
	input := json.RawMessage(`{"code":"print(1)"}`)
	history := []messages.APIMessage{
		{Role: messages.RoleUser, Content: []messages.ContentBlock{
			{Type: messages.BlockText, Text: "look at this"},
			{Type: messages.BlockImage, Source: &messages.ImageSource{Type: "base64", MediaType: "image/png", Data: "iVBORw0KGgo="}},
		}},
		{Role: messages.RoleAssistant, Content: []messages.ContentBlock{
			{Type: messages.BlockThinking, Thinking: "hmm", Signature: "sig"},
			{Type: messages.BlockText, Text: "running it"},
			{Type: messages.BlockToolUse, ID: "call_1", Name: "execute_code", Input: input},
			{Type: messages.BlockToolUse, ID: "call_2", Name: "list_files"},
			{Type: messages.BlockToolUse, ID: "call_3", Name: "read_file"},
		}},
		{Role: messages.RoleUser, Content: []messages.ContentBlock{
			{Type: messages.BlockToolResult, ToolUseID: "call_1", Content: []messages.ContentBlock{
				{Type: messages.BlockText, Text: "1"},
				{Type: messages.BlockImage, Source: &messages.ImageSource{Type: "url", URL: "https://example.com/p.png"}},
			}},
			{Type: messages.BlockToolResult, ToolUseID: "call_2", IsError: true, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: "denied"}}},
			// A tool's failure says "Error:" itself (agent.Tool.Execute): not twice.
			{Type: messages.BlockToolResult, ToolUseID: "call_3", IsError: true, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: "Error: no such file"}}},
			{Type: messages.BlockText, Text: "and now?"},
		}},
	}
	for i, m := range history {
		if err := m.Validate(); err != nil {
			t.Fatalf("history[%d]: %v", i, err)
		}
	}
	tools := []provider.Tool{{Name: "execute_code", Description: "run code", InputSchema: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}`)}}
	if _, err := run(t, p, provider.Request{System: "sys", Messages: history, Tools: tools, MaxTokens: 100}); err != nil {
		t.Fatal(err)
	}
	r, _ := srv.Last()
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
	var got map[string]any
	if err := json.Unmarshal(r.Raw, &got); err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	wantJSON := `{
	  "model": "gpt-4.1", "stream": true, "stream_options": {"include_usage": true}, "max_tokens": 100,
	  "messages": [
	    {"role": "system", "content": "sys"},
	    {"role": "user", "content": [
	      {"type": "text", "text": "look at this"},
	      {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
	    {"role": "assistant", "content": "running it", "tool_calls": [
	      {"id": "call_1", "type": "function", "function": {"name": "execute_code", "arguments": "{\"code\":\"print(1)\"}"}},
	      {"id": "call_2", "type": "function", "function": {"name": "list_files", "arguments": "{}"}},
	      {"id": "call_3", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
	    {"role": "tool", "tool_call_id": "call_1", "content": "1"},
	    {"role": "tool", "tool_call_id": "call_2", "content": "Error: denied"},
	    {"role": "tool", "tool_call_id": "call_3", "content": "Error: no such file"},
	    {"role": "user", "content": [
	      {"type": "text", "text": "[image from the result of tool call call_1]"},
	      {"type": "image_url", "image_url": {"url": "https://example.com/p.png"}},
	      {"type": "text", "text": "and now?"}]}
	  ],
	  "tools": [{"type": "function", "function": {"name": "execute_code", "description": "run code",
	    "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}}}]
	}`
	if err := json.Unmarshal([]byte(wantJSON), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("request body:\n got %s\nwant %s", r.Raw, wantJSON)
	}
}

func TestKeyNeverInErrors(t *testing.T) {
	turns := []scripted.Turn{
		{Status: 401, ErrorType: "invalid_request_error", ErrorMessage: "Incorrect API key provided: " + testKey},
		scripted.Reply(scripted.StreamError("server_error", "bad key "+testKey)),
		scripted.Reply(scripted.Disconnect()),
	}
	srv, p := newTest(t, turns...)
	for i := range turns {
		_, err := run(t, p, simpleReq())
		if err == nil {
			t.Fatalf("turn %d: no error", i)
		}
		for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err), errors.Unwrap(err).Error()} {
			if strings.Contains(s, testKey) || strings.Contains(s, "0123456789SECRET") {
				t.Errorf("turn %d: the key leaks: %s", i, s)
			}
		}
	}
	if len(srv.Requests()) != len(turns) {
		t.Errorf("server saw %d requests", len(srv.Requests()))
	}
	cfg := Config{APIKey: testKey, Model: "gpt-4.1"}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v %#v %s %q", cfg, cfg, p, p), fmt.Sprintf("%+v %#v", p, p), slogText(cfg, p)} {
		if strings.Contains(s, testKey) {
			t.Errorf("the key leaks when printing: %s", s)
		}
	}
}

func slogText(vs ...any) string {
	var b strings.Builder
	l := slog.New(slog.NewTextHandler(&b, nil))
	for _, v := range vs {
		l.Info("x", "v", v)
	}
	return b.String()
}

func BenchmarkStream10k(b *testing.B) {
	srv := scripted.New(b)
	tr := &http.Transport{}
	b.Cleanup(tr.CloseIdleConnections)
	cfg := Config{APIKey: testKey, Model: "gpt-4.1"}
	cfg.BaseURL = srv.OpenAIURL()
	cfg.HTTPClient = &http.Client{Transport: tr}
	p, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	pieces := make([]string, 10_000)
	for i := range pieces {
		pieces[i] = "tok "
	}
	b.ReportAllocs()
	for b.Loop() {
		srv.Enqueue(scripted.Reply(scripted.Text(pieces...)))
		s, err := p.Stream(context.Background(), simpleReq())
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			ev, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if ev.Type == provider.EventText {
				n++
			}
		}
		s.Close()
		if n != len(pieces) {
			b.Fatalf("%d text events, want %d", n, len(pieces))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pieces)), "ns/token")
}

func TestConfig(t *testing.T) {
	if _, err := New(Config{BaseURL: "localhost:11434"}); err == nil {
		t.Error("a base URL without a scheme was accepted")
	}
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stream(context.Background(), simpleReq()); !errors.Is(err, provider.ErrNotConfigured) {
		t.Errorf("no model: %v", err)
	}
	if p.Name() != "openai" {
		t.Errorf("Name = %q", p.Name())
	}
	o, _ := New(Config{Name: "ollama", BaseURL: "http://localhost:11434/v1", Model: "qwen2.5-coder"})
	if o.Name() != "ollama" || o.Model().InputPrice != 0 || o.Model().ID != "qwen2.5-coder" {
		t.Errorf("ollama: %q %+v", o.Name(), o.Model())
	}
	c, _ := New(Config{Model: "gpt-4.1", Info: &provider.ModelInfo{InputPrice: 1}})
	if c.Model().InputPrice != 1 || c.Model().OutputPrice != 0 || c.Model().ID != "gpt-4.1" {
		t.Errorf("override: %+v", c.Model())
	}
}

func TestKnownModel(t *testing.T) {
	tests := []struct {
		id    string
		ok    bool
		price float64
	}{
		{"gpt-4.1", true, 2},
		{"gpt-4.1-2025-04-14", true, 2},
		{"gpt-4.1-mini", true, 0.4},
		{"gpt-4.1-mini-2025-04-14", true, 0.4},
		{"gpt-4o", true, 2.5},
		{"o3-pro", true, 20},
		{"o4-mini", true, 1.1},
		{"gpt-4.10", false, 0},
		{"qwen2.5-coder", false, 0},
	}
	for _, tt := range tests {
		m, ok := KnownModel(tt.id)
		if ok != tt.ok || m.InputPrice != tt.price || m.ID != tt.id {
			t.Errorf("KnownModel(%q) = %+v, %v", tt.id, m, ok)
		}
	}
}
