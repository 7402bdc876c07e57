package scripted

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func post(t *testing.T, c *http.Client, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func newClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// events splits an SSE body into (event, data) pairs.
func events(body string) [][2]string {
	var out [][2]string
	var name string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "event: "):
			name = strings.TrimPrefix(l, "event: ")
		case strings.HasPrefix(l, "data: "):
			out = append(out, [2]string{name, strings.TrimPrefix(l, "data: ")})
			name = ""
		}
	}
	return out
}

func TestOpenAIWire(t *testing.T) {
	srv := New(t)
	c := newClient(t)
	srv.Enqueue(
		Reply(Text("a", "b"), Reasoning("r"), ToolCall("call_1", "f", `{"x"`, `:1}`), UsageStep(Usage{Input: 3, Output: 2, CacheRead: 1})),
		Reply(Text("a"), UsageStep(Usage{Input: 3, Output: 2, NullChoices: true})),
		Reply(Text("no usage asked")),
	)
	_, body := post(t, c, srv.OpenAIURL()+"/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`)
	ev := events(body)
	want := []string{
		`"delta":{"content":"","role":"assistant"}`,
		`"delta":{"content":"a"}`,
		`"delta":{"content":"b"}`,
		`"delta":{"reasoning_content":"r"}`,
		`"delta":{"tool_calls":[{"function":{"arguments":"","name":"f"},"id":"call_1","index":0,"type":"function"}]}`,
		`"delta":{"tool_calls":[{"function":{"arguments":"{\"x\""},"index":0}]}`,
		`"delta":{"tool_calls":[{"function":{"arguments":":1}"},"index":0}]}`,
		`"finish_reason":"tool_calls"`,
		`"choices":[]`,
		`[DONE]`,
	}
	if len(ev) != len(want) {
		t.Fatalf("%d events, want %d:\n%s", len(ev), len(want), body)
	}
	for i, w := range want {
		if !strings.Contains(ev[i][1], w) {
			t.Errorf("event %d = %s, want it to contain %s", i, ev[i][1], w)
		}
	}
	if !strings.Contains(ev[8][1], `"usage":{"completion_tokens":2,"completion_tokens_details":{"reasoning_tokens":0},"prompt_tokens":4,"prompt_tokens_details":{"cached_tokens":1},"total_tokens":6}`) {
		t.Errorf("usage chunk: %s", ev[8][1])
	}
	_, body = post(t, c, srv.OpenAIURL()+"/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`)
	if !strings.Contains(body, `"choices":null`) {
		t.Errorf("no null choices:\n%s", body)
	}
	_, body = post(t, c, srv.OpenAIURL()+"/chat/completions", `{"model":"m","stream":true}`)
	if strings.Contains(body, `"usage"`) {
		t.Errorf("usage without include_usage:\n%s", body)
	}
}

func TestAnthropicWire(t *testing.T) {
	srv := New(t)
	c := newClient(t)
	srv.Enqueue(Reply(Ping(), Reasoning("r"), Signature("s"), Text("a"), Text("b"), ToolCall("toolu_1", "f", `{}`), UsageStep(Usage{Input: 5, Output: 7, CacheWrite: 2})))
	_, body := post(t, c, srv.AnthropicURL()+"/v1/messages", `{"model":"claude","stream":true}`)
	var names []string
	for _, e := range events(body) {
		names = append(names, e[0])
	}
	got := strings.Join(names, " ")
	wantSeq := "message_start ping content_block_start content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got != wantSeq {
		t.Errorf("events:\n got %s\nwant %s", got, wantSeq)
	}
	for _, w := range []string{`"thinking_delta"`, `"signature_delta"`, `"input_json_delta"`, `"stop_reason":"tool_use"`,
		`"cache_creation_input_tokens":2`, `"output_tokens":7`} {
		if !strings.Contains(body, w) {
			t.Errorf("body lacks %s", w)
		}
	}
}

func TestErrors(t *testing.T) {
	srv := New(t)
	c := newClient(t)
	srv.Enqueue(Fail(429, "7"), Turn{Status: 529}, Reply(StreamError("overloaded_error", "Overloaded")))
	resp, body := post(t, c, srv.OpenAIURL()+"/chat/completions", `{"stream":true}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || !strings.Contains(body, `"type":"rate_limit_error"`) {
		t.Errorf("429: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, body = post(t, c, srv.URL()+"/v1/messages", `{"stream":true}`)
	if resp.StatusCode != 529 || !strings.Contains(body, `{"error":{"message":"scripted 529 Overloaded","type":"overloaded_error"},"type":"error"}`) {
		t.Errorf("529: %d %s", resp.StatusCode, body)
	}
	_, body = post(t, c, srv.URL()+"/v1/messages", `{"stream":true}`)
	if !strings.Contains(body, "event: error\ndata: {\"error\":{\"message\":\"Overloaded\",\"type\":\"overloaded_error\"},\"type\":\"error\"}") {
		t.Errorf("error event:\n%s", body)
	}
	if resp, _ := post(t, c, srv.URL()+"/v1/nothing", `{}`); resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
	if resp, _ := post(t, c, srv.URL()+"/v1/messages", `not json`); resp.StatusCode != 400 {
		t.Errorf("bad body: %d", resp.StatusCode)
	}
}

// fakeTB records Errorf calls.
type fakeTB struct {
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func TestExhaustedAndRecorded(t *testing.T) {
	tb := &fakeTB{}
	srv := New(tb)
	defer func() {
		for _, fn := range tb.cleanups {
			fn()
		}
	}()
	c := newClient(t)
	srv.Enqueue(Reply(Text("one")))
	post(t, c, srv.OpenAIURL()+"/chat/completions", `{"model":"a","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	resp, body := post(t, c, srv.OpenAIURL()+"/chat/completions", `{"model":"b","stream":true}`)
	if resp.StatusCode != 500 || !strings.Contains(body, "no turn queued for request 2") {
		t.Errorf("exhausted: %d %s", resp.StatusCode, body)
	}
	if len(tb.errs) != 1 || !strings.Contains(tb.errs[0], "request 2") {
		t.Errorf("Errorf calls: %q", tb.errs)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].N != 1 || reqs[0].Body["model"] != "a" || reqs[1].Body["model"] != "b" {
		t.Fatalf("requests: %+v", reqs)
	}
	if m := reqs[0].Messages(); len(m) != 1 || m[0]["content"] != "hi" {
		t.Errorf("Messages() = %v", m)
	}
	if srv.Pending() != 0 {
		t.Errorf("Pending = %d", srv.Pending())
	}
}

func TestListenCloseEndsStalls(t *testing.T) {
	srv, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(Reply(Text("a"), Stall()))
	c := newClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.OpenAIURL()+"/chat/completions", strings.NewReader(`{"stream":true}`))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil { // the first chunk arrived: the handler is stalling
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil { // must not wait for the stall
		t.Fatal(err)
	}
	if err := srv.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	_, _ = io.Copy(io.Discard, br)
}

// TestRecord: Record gives the bytes the server streams for the same turn,
// and Canned serves them to a client as the server does.
func TestRecord(t *testing.T) {
	created := regexp.MustCompile(`"created":\d+`)
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			turn := Reply(Reasoning("hm"), Text("a", "b\n"), ToolCall("c1", "f", `{"x"`, `:1}`), UsageStep(Usage{Input: 3, Output: 2}))
			rec, err := Record(api, turn)
			if err != nil {
				t.Fatal(err)
			}
			srv := New(t)
			srv.Enqueue(turn)
			url := srv.OpenAIURL() + "/chat/completions"
			if api == "anthropic" {
				url = srv.AnthropicURL() + "/v1/messages"
			}
			body := `{"model":"scripted-model","stream":true,"stream_options":{"include_usage":true},"messages":[]}`
			_, served := post(t, newClient(t), url, body)
			if got, want := created.ReplaceAllString(string(rec), ""), created.ReplaceAllString(served, ""); got != want {
				t.Fatalf("recorded\n%s\nserved\n%s", got, want)
			}
			resp, err := (&http.Client{Transport: Canned{Body: rec}}).Post("http://model.invalid/", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			again, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || string(again) != string(rec) {
				t.Fatalf("canned: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), again)
			}
		})
	}
	if _, err := Record("gemini", Reply(Text("x"))); err == nil {
		t.Fatal("Record of an unknown API did not fail")
	}
}

// TestWholeAnswer: a request that does not stream gets one chat.completion
// (OpenAI's format), and every request records when its answer's content
// began and when the answer ended.
func TestWholeAnswer(t *testing.T) {
	srv := New(t)
	srv.Enqueue(Reply(Reasoning("hm"), Text("Hel", "lo"), ToolCall("c1", "f", `{"a"`, `:1}`), UsageStep(Usage{Input: 5, Output: 2})),
		Reply(Text("streamed")))
	c := newClient(t)
	resp, body := post(t, c, srv.OpenAIURL()+"/chat/completions", `{"model":"m","messages":[]}`)
	var got struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				Reasoning string `json:"reasoning_content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%v: %s", err, body)
	}
	m := got.Choices[0].Message
	if got.Object != "chat.completion" || m.Content != "Hello" || m.Reasoning != "hm" || len(m.ToolCalls) != 1 ||
		m.ToolCalls[0].Function.Arguments != `{"a":1}` || got.Choices[0].FinishReason != "tool_calls" || got.Usage.CompletionTokens != 2 {
		t.Fatalf("completion %+v", got)
	}
	post(t, c, srv.OpenAIURL()+"/chat/completions", `{"model":"m","stream":true,"messages":[]}`)
	for _, r := range srv.Requests() {
		if r.Received.IsZero() || r.FirstContent.Before(r.Received) || r.Done.Before(r.FirstContent) {
			t.Errorf("request %d: received %v, first content %v, done %v", r.N, r.Received, r.FirstContent, r.Done)
		}
	}
	srv.Enqueue(Reply(Text("x")))
	if resp, _ := post(t, c, srv.AnthropicURL()+"/v1/messages", `{"model":"m","messages":[]}`); resp.StatusCode != 400 {
		t.Errorf("an Anthropic request that does not stream: HTTP %d, want 400", resp.StatusCode)
	}
}

// TestRefusesWhatTheAPIsRefuse: a request the real API would turn away
// gets its 400 and error body, and takes no scripted turn; a well-formed
// one with the same blocks is served.
func TestRefusesWhatTheAPIsRefuse(t *testing.T) {
	const (
		use    = `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]}`
		result = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}`
		tools  = `"tools":[{"name":"f","input_schema":{"type":"object"}}]`
		call   = `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`
		answer = `{"role":"tool","tool_call_id":"call_1","content":"ok"}`
	)
	tests := []struct {
		name, path, body, want string // want "": served
	}{
		{"anthropic tool blocks without tools", "/v1/messages",
			`{"stream":true,"messages":[{"role":"user","content":"hi"},` + use + `,` + result + `]}`,
			"Requests which include `tool_use` or `tool_result` blocks must define tools."},
		{"anthropic tool_use without its result", "/v1/messages",
			`{"stream":true,` + tools + `,"messages":[{"role":"user","content":"hi"},` + use + `,{"role":"user","content":"go on"}]}`,
			"`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"},
		{"anthropic tool_result without its use", "/v1/messages",
			`{"stream":true,` + tools + `,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"x"},` + result + `]}`,
			"unexpected `tool_use_id` found in `tool_result` blocks: toolu_1"},
		{"anthropic empty text block", "/v1/messages",
			`{"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`,
			"text content blocks must be non-empty"},
		{"anthropic paired, one role twice", "/v1/messages",
			`{"stream":true,` + tools + `,"messages":[{"role":"user","content":"hi"},{"role":"user","content":"more"},` + use + `,` + result + `]}`, ""},
		{"anthropic system message among the turns (Claude Code's)", "/v1/messages",
			`{"stream":true,"messages":[{"role":"user","content":"hi"},{"role":"system","content":"context"}]}`, ""},
		{"anthropic unknown role", "/v1/messages",
			`{"stream":true,"messages":[{"role":"tool","content":"hi"}]}`, "Input should be 'user', 'assistant' or 'system'"},
		{"openai tool message with no call before", "/v1/chat/completions",
			`{"stream":true,"messages":[{"role":"user","content":"hi"},` + answer + `]}`,
			"messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"},
		{"openai call not answered", "/v1/chat/completions",
			`{"stream":true,"messages":[{"role":"user","content":"hi"},` + call + `,{"role":"user","content":"go on"}]}`,
			"The following tool_call_ids did not have response messages: call_1"},
		{"openai paired", "/v1/chat/completions",
			`{"stream":true,"messages":[{"role":"user","content":"hi"},` + call + `,` + answer + `]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := New(t)
			srv.Enqueue(Reply(Text("served")))
			resp, body := post(t, newClient(t), srv.URL()+tt.path, tt.body)
			if tt.want == "" {
				if resp.StatusCode != 200 || !strings.Contains(body, "served") || srv.Pending() != 0 {
					t.Fatalf("not served: %d %s", resp.StatusCode, body)
				}
				return
			}
			if resp.StatusCode != 400 || !strings.Contains(body, tt.want) || !strings.Contains(body, "invalid_request_error") {
				t.Errorf("want a 400 saying %q, got %d %s", tt.want, resp.StatusCode, body)
			}
			if srv.Pending() != 1 || len(srv.Requests()) != 1 {
				t.Errorf("the refused request took a turn (%d left) or was not recorded (%d)", srv.Pending(), len(srv.Requests()))
			}
		})
	}
}
