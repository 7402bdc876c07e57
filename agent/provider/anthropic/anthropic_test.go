package anthropic

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

const testKey = "sk-ant-test-0123456789SECRETabcdef"

func newTest(t *testing.T, cfg Config, turns ...scripted.Turn) (*scripted.Server, *Provider) {
	t.Helper()
	srv := scripted.New(t)
	srv.Enqueue(turns...)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cfg.APIKey = testKey
	cfg.BaseURL = srv.AnthropicURL()
	if cfg.Model == "" {
		cfg.Model = "claude-sonnet-4-5"
	}
	cfg.HTTPClient = &http.Client{Transport: tr}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv, p
}

func userText(s string) messages.APIMessage {
	return messages.APIMessage{Role: messages.RoleUser, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: s}}}
}

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

func dump(evs []provider.Event) string {
	b, _ := json.Marshal(evs)
	return string(b)
}

func TestStreams(t *testing.T) {
	call := func(id, name, in string) provider.Event {
		return provider.Event{Type: provider.EventToolCall, ToolCall: &provider.ToolCall{ID: id, Name: name, Input: json.RawMessage(in)}}
	}
	text := func(s string) provider.Event { return provider.Event{Type: provider.EventText, Text: s} }
	reason := func(s string) provider.Event { return provider.Event{Type: provider.EventReasoning, Text: s} }
	done := func(r provider.StopReason) provider.Event {
		return provider.Event{Type: provider.EventDone, StopReason: r}
	}
	usage := func(u provider.Usage) provider.Event { return provider.Event{Type: provider.EventUsage, Usage: &u} }
	zero := usage(provider.Usage{})
	tests := []struct {
		name string
		turn scripted.Turn
		want []provider.Event
	}{
		{"text with pings and usage", scripted.Reply(scripted.Ping(), scripted.Text("Hel", "lo"), scripted.Ping(), scripted.Text(" world"),
			scripted.UsageStep(scripted.Usage{Input: 10, Output: 3, CacheRead: 100, CacheWrite: 50})),
			[]provider.Event{text("Hel"), text("lo"), text(" world"),
				usage(provider.Usage{InputTokens: 10, OutputTokens: 3, CacheReadTokens: 100, CacheWriteTokens: 50}), done(provider.StopEndTurn)}},
		{"thinking with signature", scripted.Reply(scripted.Reasoning("thin", "king"), scripted.Signature("c2lnbmF0dXJl"), scripted.Text("answer")),
			[]provider.Event{reason("thin"), reason("king"), {Type: provider.EventReasoning, Signature: "c2lnbmF0dXJl"}, text("answer"), zero, done(provider.StopEndTurn)}},
		{"tool call in pieces", scripted.Reply(scripted.Text("let me look"), scripted.ToolCall("toolu_1", "read_file", `{"pa`, `th"`, `: "a`, `.txt"`, `}`)),
			[]provider.Event{text("let me look"), call("toolu_1", "read_file", `{"path": "a.txt"}`), zero, done(provider.StopToolUse)}},
		{"parallel tool calls", scripted.Reply(
			scripted.ToolCall("toolu_a", "read_file", `{"path":`, `"a"}`),
			scripted.ToolCall("toolu_b", "list_files"),
			scripted.ToolCall("toolu_c", "read_file", `{"path":"c"}`)),
			[]provider.Event{call("toolu_a", "read_file", `{"path":"a"}`), call("toolu_b", "list_files", `{}`), call("toolu_c", "read_file", `{"path":"c"}`),
				zero, done(provider.StopToolUse)}},
		{"max tokens", scripted.Reply(scripted.Text("cut"), scripted.Stop("max_tokens")),
			[]provider.Event{text("cut"), zero, done(provider.StopMaxTokens)}},
		{"refusal", scripted.Reply(scripted.Stop("refusal")),
			[]provider.Event{zero, done(provider.StopOther)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, p := newTest(t, Config{}, tt.turn)
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

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name       string
		turn       scripted.Turn
		status     int
		typ        string
		retryable  bool
		retryAfter time.Duration
	}{
		{"429 with Retry-After", scripted.Fail(429, "3"), 429, "rate_limit_error", true, 3 * time.Second},
		{"529 overloaded", scripted.Fail(529, ""), 529, "overloaded_error", true, 0},
		{"500", scripted.Fail(500, ""), 500, "api_error", true, 0},
		{"400", scripted.Turn{Status: 400, ErrorMessage: "messages: roles must alternate"}, 400, "invalid_request_error", false, 0},
		{"401", scripted.Fail(401, ""), 401, "authentication_error", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, p := newTest(t, Config{}, tt.turn)
			_, err := run(t, p, simpleReq())
			ae, ok := provider.AsAPIError(err)
			if !ok {
				t.Fatalf("err = %v (%T), want *provider.APIError", err, err)
			}
			if ae.Status != tt.status || ae.Type != tt.typ || ae.Retryable != tt.retryable || ae.RetryAfter != tt.retryAfter || ae.Provider != "anthropic" {
				t.Errorf("got %+v", *ae)
			}
		})
	}
}

func TestMidStreamErrors(t *testing.T) {
	tests := []struct {
		name      string
		steps     []scripted.Step
		typ       string
		retryable bool
	}{
		{"overloaded event", []scripted.Step{scripted.Text("partial"), scripted.StreamError("overloaded_error", "Overloaded")}, "overloaded_error", true},
		{"api_error event", []scripted.Step{scripted.Text("partial"), scripted.StreamError("api_error", "Internal server error")}, "api_error", true},
		{"invalid request event", []scripted.Step{scripted.Text("partial"), scripted.StreamError("invalid_request_error", "nope")}, "invalid_request_error", false},
		{"dropped connection", []scripted.Step{scripted.Text("partial"), scripted.Disconnect()}, "connection_error", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, p := newTest(t, Config{}, scripted.Reply(tt.steps...))
			evs, err := run(t, p, simpleReq())
			if len(evs) != 1 || evs[0].Text != "partial" {
				t.Errorf("events before the error: %s", dump(evs))
			}
			ae, ok := provider.AsAPIError(err)
			if !ok || ae.Retryable != tt.retryable || ae.Status != 0 || ae.Type != tt.typ {
				t.Fatalf("err = %v (%#v)", err, err)
			}
		})
	}
}

func TestClientTimeout(t *testing.T) {
	srv := scripted.New(t)
	srv.Enqueue(scripted.Reply(scripted.Text("a"), scripted.Stall()))
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	p, err := New(Config{APIKey: testKey, BaseURL: srv.AnthropicURL(), Model: "claude-sonnet-4-5", HTTPClient: &http.Client{Transport: tr, Timeout: 200 * time.Millisecond}})
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
		_, p := newTest(t, Config{}, scripted.Reply(scripted.Text("a"), scripted.Stall()))
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
		_, p := newTest(t, Config{}, scripted.Reply(scripted.Text("a"), scripted.Delay(time.Hour), scripted.Text("never")))
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
	})
}

func TestRequestMapping(t *testing.T) {
	srv, p := newTest(t, Config{ThinkingBudget: 2048}, scripted.Reply(scripted.Text("ok")))
	history := []messages.APIMessage{
		{Role: messages.RoleUser, Content: []messages.ContentBlock{
			{Type: messages.BlockText, Text: "look at this"},
			{Type: messages.BlockImage, Source: &messages.ImageSource{Type: "base64", MediaType: "image/png", Data: "iVBORw0KGgo="}},
		}},
		{Role: messages.RoleAssistant, Content: []messages.ContentBlock{
			{Type: messages.BlockThinking, Thinking: "hmm", Signature: "sig1"},
			{Type: messages.BlockThinking, Thinking: "unsigned, from another model"},
			{Type: messages.BlockText, Text: "running it"},
			{Type: messages.BlockToolUse, ID: "toolu_1", Name: "execute_code", Input: json.RawMessage(`{"code":"print(1)"}`)},
			{Type: messages.BlockToolUse, ID: "toolu_2", Name: "list_files"},
		}},
		{Role: messages.RoleUser, Content: []messages.ContentBlock{
			{Type: messages.BlockToolResult, ToolUseID: "toolu_1", Content: []messages.ContentBlock{
				{Type: messages.BlockText, Text: "1"},
				{Type: messages.BlockImage, Source: &messages.ImageSource{Type: "url", URL: "https://example.com/p.png"}},
			}},
			{Type: messages.BlockToolResult, ToolUseID: "toolu_2", IsError: true, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: "denied"}}},
			{Type: messages.BlockText, Text: "and now?"},
		}},
	}
	for i, m := range history {
		if err := m.Validate(); err != nil {
			t.Fatalf("history[%d]: %v", i, err)
		}
	}
	tools := []provider.Tool{{Name: "execute_code", Description: "run code",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string"}},"required":["code"],"additionalProperties":false}`)}}
	if _, err := run(t, p, provider.Request{System: "sys", Messages: history, Tools: tools}); err != nil {
		t.Fatal(err)
	}
	r, _ := srv.Last()
	if got := r.Header.Get("X-Api-Key"); got != testKey {
		t.Errorf("x-api-key = %q", got)
	}
	var got, want map[string]any
	if err := json.Unmarshal(r.Raw, &got); err != nil {
		t.Fatal(err)
	}
	wantJSON := `{
	  "model": "claude-sonnet-4-5", "max_tokens": 64000, "stream": true,
	  "thinking": {"type": "enabled", "budget_tokens": 2048},
	  "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
	  "messages": [
	    {"role": "user", "content": [
	      {"type": "text", "text": "look at this"},
	      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]},
	    {"role": "assistant", "content": [
	      {"type": "thinking", "thinking": "hmm", "signature": "sig1"},
	      {"type": "text", "text": "running it"},
	      {"type": "tool_use", "id": "toolu_1", "name": "execute_code", "input": {"code": "print(1)"}},
	      {"type": "tool_use", "id": "toolu_2", "name": "list_files", "input": {}}]},
	    {"role": "user", "content": [
	      {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
	        {"type": "text", "text": "1"},
	        {"type": "image", "source": {"type": "url", "url": "https://example.com/p.png"}}]},
	      {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true, "content": [{"type": "text", "text": "denied"}]},
	      {"type": "text", "text": "and now?", "cache_control": {"type": "ephemeral"}}]}
	  ],
	  "tools": [{"name": "execute_code", "description": "run code", "cache_control": {"type": "ephemeral"},
	    "input_schema": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"], "additionalProperties": false}}]
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
		{Status: 401, ErrorType: "authentication_error", ErrorMessage: "invalid x-api-key " + testKey},
		scripted.Reply(scripted.StreamError("api_error", "bad key "+testKey)),
		scripted.Reply(scripted.Disconnect()),
	}
	srv, p := newTest(t, Config{}, turns...)
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
	cfg := Config{APIKey: testKey, Model: "claude-sonnet-4-5"}
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
	cfg := Config{APIKey: testKey, Model: "claude-sonnet-4-5"}
	cfg.BaseURL = srv.AnthropicURL()
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
	if _, err := New(Config{BaseURL: "api.anthropic.com"}); err == nil {
		t.Error("a base URL without a scheme was accepted")
	}
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stream(context.Background(), simpleReq()); !errors.Is(err, provider.ErrNotConfigured) {
		t.Errorf("no model: %v", err)
	}
	c, _ := New(Config{Model: "claude-opus-4-1", Info: &provider.ModelInfo{InputPrice: 1}})
	if c.Model().InputPrice != 1 || c.Model().ID != "claude-opus-4-1" {
		t.Errorf("override: %+v", c.Model())
	}
	tests := []struct {
		id    string
		ok    bool
		price float64
	}{
		{"claude-sonnet-4-5", true, 3},
		{"claude-sonnet-4-5-20250929", true, 3},
		{"claude-opus-4-1-20250805", true, 15},
		{"claude-opus-4-5", true, 5},
		{"claude-opus-4-20250514", true, 15},
		{"claude-haiku-4-5", true, 1},
		{"claude-3-7-sonnet-latest", true, 3},
		{"claude-unknown", false, 0},
	}
	for _, tt := range tests {
		m, ok := KnownModel(tt.id)
		if ok != tt.ok || m.InputPrice != tt.price {
			t.Errorf("KnownModel(%q) = %+v, %v", tt.id, m, ok)
		}
	}
	if got := (provider.ModelInfo{InputPrice: 3, OutputPrice: 15, CacheRead: 0.3, CacheWrite: 3.75}).Cost(provider.Usage{InputTokens: 1e6, OutputTokens: 1e6}); got != 18 {
		t.Errorf("cost = %v", got)
	}
}
