package mcpserve

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/internal/kerneltest"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
)

// fixture is a session host over a SQLite store and a real ipykernel,
// served by a Server.
type fixture struct {
	host   *session.Host
	runner backing.Runner
	srv    *Server
}

func newFixture(t *testing.T, approve agent.ApprovalPolicy) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a kernel")
	}
	if _, err := client.FindSpec("python3"); err != nil {
		t.Skipf("no python3 kernelspec: %v", err)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	r := backing.NewLocal(backing.LocalOptions{Kernel: "python3", Dir: ws})
	h := session.New(session.Config{Store: st, Runner: r, Workspace: ws, Kind: "mcp", Source: Source,
		Deny: []string{"execute_code(*forbidden*)"}})
	t.Cleanup(func() {
		h.Close()
		r.Close()
		st.Close()
	})
	return &fixture{host: h, runner: r, srv: New(Options{Host: h, Runner: r, Version: "test", Approve: approve, Logger: hclog.New(&hclog.LoggerOptions{Output: os.Stderr, Level: hclog.Warn})})}
}

// connect connects a go-sdk client over in-memory transports; elicit, when
// set, answers the server's asks.
func (f *fixture) connect(t *testing.T, elicit func(*sdk.ElicitRequest) (*sdk.ElicitResult, error)) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := f.srv.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	opts := &sdk.ClientOptions{}
	if elicit != nil {
		opts.ElicitationHandler = func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) { return elicit(r) }
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, opts)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (string, *sdk.CallToolResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res
}

// A tiny PNG (1x1), as IPython displays it.
const pngCode = `import base64
from IPython.display import Image, display
display(Image(data=base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")))`

// TestTools: a go-sdk client that answers asks (elicitation) runs code in
// the real kernel (asked once, with the code), sees its output and its
// image, lists the variable it set, and reads the calls back in the
// session's history; a deny rule holds without asking; interrupt stops a
// running cell; search finds the call in the store; a rewind removes it
// from the history; a fork makes a new session.
func TestTools(t *testing.T) {
	f := newFixture(t, agent.ApproveNone)
	var mu sync.Mutex
	var asked []string
	cs := f.connect(t, func(r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		mu.Lock()
		asked = append(asked, r.Params.Message)
		mu.Unlock()
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow"}}, nil
	})
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"execute_code", "list_variables", "interrupt_kernel", "restart_kernel", "session_info",
		"read_history", "search_sessions", "rewind", "fork_session"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}

	out, res := call(t, cs, "execute_code", map[string]any{"code": "x = 6*7\nprint(x)"})
	if res.IsError || !strings.Contains(out, "42") {
		t.Fatalf("execute_code: %q (error %v)", out, res.IsError)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "x = 6*7") {
		t.Errorf("asks %q, want one showing the code", asked)
	}
	vars, _ := call(t, cs, "list_variables", nil)
	if !strings.Contains(vars, "x: int = 42") {
		t.Errorf("list_variables: %q", vars)
	}
	_, res = call(t, cs, "execute_code", map[string]any{"code": pngCode})
	var images int
	for _, c := range res.Content {
		if im, ok := c.(*sdk.ImageContent); ok && im.MIMEType == "image/png" && bytes.HasPrefix(im.Data, []byte("\x89PNG")) {
			images++
		}
	}
	if images != 1 {
		t.Errorf("the displayed PNG came back as %d image contents: %+v", images, res.Content)
	}

	// The deny rule refuses before anyone is asked; the kernel is not
	// touched.
	out, res = call(t, cs, "execute_code", map[string]any{"code": "x = 'forbidden'"})
	if !res.IsError || !strings.Contains(out, "denied") || len(asked) != 2 {
		t.Errorf("a denied call: %q (error %v), asks %d", out, res.IsError, len(asked))
	}
	if vars, _ := call(t, cs, "list_variables", nil); !strings.Contains(vars, "x: int = 42") {
		t.Errorf("after the denied call: %q", vars)
	}

	// interrupt_kernel stops a running cell.
	done := make(chan string, 1)
	go func() {
		out, _ := call(t, cs, "execute_code", map[string]any{"code": "import time\nprint('sleeping', flush=True)\ntime.sleep(60)"})
		done <- out
	}()
	waitFor(t, "the sleep to run", func() bool {
		return strings.Contains(texts(f.host.Conversation().UI()), "import time")
	})
	time.Sleep(500 * time.Millisecond)
	var interrupted string
	for i := 0; i < 20 && interrupted == ""; i++ {
		if out, _ := call(t, cs, "interrupt_kernel", nil); out != "Interrupted." {
			t.Fatalf("interrupt_kernel: %q", out)
		}
		select {
		case interrupted = <-done:
		case <-time.After(time.Second):
		}
	}
	if !strings.Contains(interrupted, "KeyboardInterrupt") {
		t.Errorf("the interrupted cell returned %q", interrupted)
	}

	// The calls are the session's history.
	hist, _ := call(t, cs, "read_history", map[string]any{"role": "tool"})
	for _, want := range []string{`"kind":"ask:command"`, `x = 6*7`, `42`, "forbidden", "KeyboardInterrupt"} {
		if !strings.Contains(hist, want) {
			t.Errorf("read_history lacks %q:\n%s", want, hist)
		}
	}
	if last, _ := call(t, cs, "read_history", map[string]any{"last": 1}); strings.Count(last, "\n") != 1 {
		t.Errorf("read_history last 1: %q", last)
	}
	if out, res := call(t, cs, "read_history", map[string]any{"role": "robot"}); !res.IsError {
		t.Errorf("a bad role: %q", out)
	}
	hits, _ := call(t, cs, "search_sessions", map[string]any{"query": "forbidden"})
	info, err := f.host.Current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(hits, info.ID) {
		t.Errorf("search_sessions found %q, want session %s", hits, info.ID)
	}

	// A rewind to the first message empties the conversation, and a fork
	// makes a new session current.
	before := len(f.host.Conversation().UI())
	out, res = call(t, cs, "rewind", map[string]any{"to": "#2", "conversation_only": true})
	if res.IsError || len(f.host.Conversation().UI()) != 2 {
		t.Errorf("rewind to #2: %q; %d of %d messages left", out, len(f.host.Conversation().UI()), before)
	}
	out, res = call(t, cs, "fork_session", nil)
	now, _ := f.host.Current(context.Background())
	if res.IsError || now.ID == info.ID || !strings.Contains(out, now.ID) {
		t.Errorf("fork_session: %q; current %s, was %s", out, now.ID, info.ID)
	}
}

// TestPolicyWithoutElicitation: a client that cannot be asked gets the
// approval policy's answer: none denies (the kernel untouched), and the
// ask and its answer are in the history.
func TestPolicyWithoutElicitation(t *testing.T) {
	f := newFixture(t, agent.ApproveNone)
	cs := f.connect(t, nil)
	out, res := call(t, cs, "execute_code", map[string]any{"code": "y = 1"})
	if !res.IsError || !strings.Contains(out, "policy:none") {
		t.Errorf("execute_code without an asker: %q (error %v)", out, res.IsError)
	}
	if vars, _ := call(t, cs, "list_variables", nil); strings.Contains(vars, "y:") {
		t.Errorf("the denied code ran: %q", vars)
	}
	var ask *messages.UIMessage
	for _, m := range f.host.Conversation().UI() {
		if m.Type == messages.TypeAsk {
			ask = &m
		}
	}
	if ask == nil || !ask.IsAnswered || ask.Ask != messages.AskCommand {
		t.Errorf("the ask in the history: %+v", ask)
	}
	// In plan mode the kernel is not restarted.
	if err := f.host.Modes().SetPermission(context.Background(), agent.PermissionPlan); err != nil {
		t.Fatal(err)
	}
	if out, res := call(t, cs, "restart_kernel", nil); !res.IsError || !strings.Contains(out, "plan mode") {
		t.Errorf("restart_kernel in plan mode: %q", out)
	}
}

// TestHTTP: the streamable HTTP handler wants the bearer token: a client
// with a wrong one is refused (401) and the server goes on serving the
// right one; a browser's cross-origin request and a broken JSON-RPC body
// get errors, not a crash.
func TestHTTP(t *testing.T) {
	f := newFixture(t, agent.ApproveAll)
	hs := httptest.NewServer(f.srv.Handler("s3cret"))
	defer hs.Close()
	connect := func(token string) (*sdk.ClientSession, error) {
		hc := &http.Client{Transport: bearer{token}}
		c := sdk.NewClient(&sdk.Implementation{Name: "http-client", Version: "1"}, nil)
		return c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: hc}, nil)
	}
	if cs, err := connect("wrong"); err == nil {
		cs.Close()
		t.Fatal("a wrong token connected")
	}
	post := func(body string, hdr map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if code := post(`{"jsonrpc":"2.0",`, map[string]string{"Authorization": "Bearer s3cret"}); code < 400 || code >= 500 {
		t.Errorf("broken JSON: %d, want a 4xx", code)
	}
	if code := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, map[string]string{
		"Authorization": "Bearer s3cret", "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
		t.Errorf("a cross-origin request: %d", code)
	}
	cs, err := connect("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	out, res := call(t, cs, "execute_code", map[string]any{"code": "print('over http')"})
	if res.IsError || !strings.Contains(out, "over http") {
		t.Errorf("execute_code over HTTP: %q", out)
	}
	// An unknown tool is a protocol error; the session goes on.
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Error("an unknown tool did not fail")
	}
	if out, _ := call(t, cs, "session_info", nil); !strings.Contains(out, `"kernel"`) {
		t.Errorf("session_info after the bad call: %q", out)
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func texts(ui []messages.UIMessage) string {
	var b strings.Builder
	for _, m := range ui {
		b.WriteString(m.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMain(m *testing.M) { os.Exit(kerneltest.Run(m, nil)) }
