package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent"
)

func statusOf(m *Manager, name string) ServerStatus {
	for _, s := range m.Status() {
		if s.Name == name {
			return s
		}
	}
	return ServerStatus{}
}

func call(t *testing.T, m *Manager, name, input string) (agent.Result, error) {
	t.Helper()
	// Long enough for the 50 MB answer under the race detector.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return m.Call(ctx, name, json.RawMessage(input), nil)
}

func TestStdioServer(t *testing.T) {
	t.Setenv("AK_MCP_TEST_HOME", "")
	good := stdioServer(t, "good")
	good.AlwaysAllow = []string{"echo"}
	missing := ServerConfig{Name: "missing", Command: "no-such-mcp-server-anywhere"}
	m := newManager(t, Options{}, good, missing)
	m.WaitStarted(context.Background())

	if s := statusOf(m, "missing"); s.State != StateFailed || !strings.Contains(s.Error, "not found") {
		t.Errorf("missing: %+v, want failed with a not-found error", s)
	}
	s := statusOf(m, "good")
	if s.State != StateReady || s.Transport != TransportStdio || len(s.Tools) < 5 {
		t.Fatalf("good: %+v", s)
	}
	tools := map[string]agent.SourceTool{}
	for _, st := range m.Tools(context.Background()) {
		tools[st.Spec.Name] = st
	}
	echo, ok := tools["mcp__good__echo"]
	if !ok || !echo.AlwaysAllow || tools["mcp__good__sum"].AlwaysAllow {
		t.Fatalf("tools %v: want mcp__good__echo, always allowed, and sum not", tools)
	}
	var schema map[string]any
	if err := json.Unmarshal(echo.Spec.InputSchema, &schema); err != nil || !strings.Contains(string(echo.Spec.InputSchema), `"message"`) {
		t.Errorf("echo's schema %s is not the server's", echo.Spec.InputSchema)
	}

	tests := []struct {
		name, tool, input string
		want              string
		isError           bool
	}{
		{"text", "mcp__good__echo", `{"message":"hi"}`, "Echo: hi", false},
		{"env expansion", "mcp__good__env", `{}`, "AK_MCP_VAR=fallback/x", false},
		{"structured content", "mcp__good__sum", `{}`, `{"sum":5}`, false},
		{"tool error", "mcp__good__fail", `{}`, "no such file", true},
		{"image", "mcp__good__image", `{}`, "[image image/png, 67 B]", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := call(t, m, tt.tool, tt.input)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Text, tt.want) || res.IsError != tt.isError {
				t.Errorf("result %q (error %v), want %q (error %v)", res.Text, res.IsError, tt.want, tt.isError)
			}
		})
	}
	res, _ := call(t, m, "mcp__good__image", `{}`)
	if len(res.Blocks) != 1 || res.Blocks[0].Source.MediaType != "image/png" || len(res.Shown) != 1 {
		t.Errorf("image result: %d blocks, %d shown", len(res.Blocks), len(res.Shown))
	}

	var mu sync.Mutex
	var progress []string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := m.Call(ctx, "mcp__good__slow", json.RawMessage(`{}`), func(p string) {
		mu.Lock()
		progress = append(progress, p)
		mu.Unlock()
	})
	mu.Lock()
	// Notifications are handled beside the reply: the last may come after
	// it, when the call is over and nobody listens.
	if err != nil || res.Text != "done" || len(progress) == 0 || progress[0] != "1/3 step" {
		t.Errorf("slow: %q %v, progress %q", res.Text, err, progress)
	}
	mu.Unlock()
}

func TestCrashRestarts(t *testing.T) {
	m := newManager(t, Options{}, stdioServer(t, "s"))
	if _, err := call(t, m, "mcp__s__echo", `{"message":"before"}`); err != nil {
		t.Fatal(err)
	}
	_, err := call(t, m, "mcp__s__crash", `{}`)
	if err == nil || !strings.Contains(err.Error(), "stopped during the call") || !strings.Contains(err.Error(), "exit status 7") ||
		!strings.Contains(err.Error(), "crashing on purpose") {
		t.Fatalf("crash: %v, want a clear error with the exit status and stderr", err)
	}
	waitState(t, m, "s", StateExited)
	if len(m.Tools(context.Background())) == 0 {
		t.Error("an exited server's tools must stay offered: it is started again at the next call")
	}
	res, err := call(t, m, "mcp__s__echo", `{"message":"after"}`)
	if err != nil || res.Text != "Echo: after" {
		t.Fatalf("after the crash: %q %v, want the server started again", res.Text, err)
	}
	if s := statusOf(m, "s"); s.State != StateReady {
		t.Errorf("state %s after the restart", s.State)
	}
	// The next call straight after a crash, without waiting for anyone to
	// notice the exit, starts it again too.
	if _, err := call(t, m, "mcp__s__crash", `{}`); err == nil {
		t.Fatal("the second crash was not an error")
	}
	if res, err := call(t, m, "mcp__s__echo", `{"message":"again"}`); err != nil || res.Text != "Echo: again" {
		t.Fatalf("straight after the crash: %q %v", res.Text, err)
	}
}

func waitState(t *testing.T, m *Manager, name string, want State) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for statusOf(m, name).State != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: state %s, want %s", name, statusOf(m, name).State, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHangTimesOut(t *testing.T) {
	sc := stdioServer(t, "s")
	sc.Timeout = 0.5
	m := newManager(t, Options{}, sc)
	_, err := call(t, m, "mcp__s__hang", `{}`)
	if err == nil || !strings.Contains(err.Error(), "timed out after 500ms") {
		t.Fatalf("hang: %v, want a timeout", err)
	}
	if res, err := call(t, m, "mcp__s__echo", `{"message":"still here"}`); err != nil || res.Text != "Echo: still here" {
		t.Errorf("after a timeout: %q %v", res.Text, err)
	}
}

func TestStartTimeout(t *testing.T) {
	// sleep is a process that never speaks MCP.
	m := newManager(t, Options{StartTimeout: 2 * time.Second},
		ServerConfig{Name: "mute", Command: "sleep", Args: []string{"60"}}, stdioServer(t, "ok"))
	m.WaitStarted(context.Background())
	if s := statusOf(m, "mute"); s.State != StateFailed || !strings.Contains(s.Error, "within 2s") {
		t.Errorf("mute: %+v, want failed within the start timeout", s)
	}
	if s := statusOf(m, "ok"); s.State != StateReady {
		t.Errorf("ok: %+v: one failing server must not stop the others", s)
	}
	if _, err := call(t, m, "mcp__mute__x", `{}`); err == nil || !strings.Contains(err.Error(), "failed") {
		t.Errorf("a call to a failed server: %v", err)
	}
}

func TestBigResultIsCapped(t *testing.T) {
	if testing.Short() {
		t.Skip("a 50 MB answer: slow under the race detector")
	}
	sc := stdioServer(t, "s")
	sc.Timeout = 180
	m := newManager(t, Options{}, sc)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := call(t, m, "mcp__s__big", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if n := len([]rune(res.Text)); n > 20_000 || !strings.HasPrefix(res.Text, "BEGIN 0123") ||
		!strings.Contains(res.Text, "50.0 MB, over the 8.0 MB limit") {
		t.Errorf("result of %d characters: %.200q … %.200q", n, res.Text, res.Text[max(0, len(res.Text)-200):])
	}
	t.Logf("heap grew by %.1f MB over the call (total allocated %.1f MB) for a 50 MB answer",
		float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
	if res, err := call(t, m, "mcp__s__echo", `{"message":"next"}`); err != nil || res.Text != "Echo: next" {
		t.Errorf("after the big answer: %q %v; the connection must go on", res.Text, err)
	}
}

func TestHTTPServer(t *testing.T) {
	hs := httpServer(t, "tok")
	t.Setenv("AK_MCP_TOKEN", "tok")
	m := newManager(t, Options{},
		ServerConfig{Name: "web", Type: "http", URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer ${AK_MCP_TOKEN}"}},
		ServerConfig{Name: "denied", Type: "http", URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer wrong"}})
	m.WaitStarted(context.Background())
	if s := statusOf(m, "web"); s.State != StateReady || s.Transport != TransportHTTP {
		t.Fatalf("web: %+v", s)
	}
	if s := statusOf(m, "denied"); s.State != StateFailed || strings.Contains(s.Error, "wrong") {
		t.Errorf("denied: %+v, want failed, without the header's value", s)
	}
	t.Setenv("AK_MCP_KEY", "sekrit-key")
	gone := newManager(t, Options{}, ServerConfig{Name: "gone", Type: "http", URL: "http://127.0.0.1:1/mcp?key=${AK_MCP_KEY}"})
	gone.WaitStarted(context.Background())
	if s := statusOf(gone, "gone"); s.State != StateFailed || strings.Contains(s.Error, "sekrit") || strings.Contains(s.Where, "sekrit") {
		t.Errorf("gone: %+v, want failed, never showing the key in the URL", s)
	}
	res, err := call(t, m, "mcp__web__echo", `{"message":"over http"}`)
	if err != nil || res.Text != "Echo: over http" {
		t.Errorf("echo over http: %q %v", res.Text, err)
	}
	res, err = call(t, m, "mcp__web__sum", `{}`)
	if err != nil || !strings.Contains(res.Text, `{"sum":5}`) {
		t.Errorf("structured content over http: %q %v", res.Text, err)
	}
}

func TestToolName(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"github", "create_issue"}:     "mcp__github__create_issue",
		{"everything", "get-env"}:      "mcp__everything__get-env",
		{"s", "a.b/c d"}:               "mcp__s__a_b_c_d",
		{"s", strings.Repeat("x", 90)}: "mcp__s__" + strings.Repeat("x", 56),
	} {
		if got := ToolName(in[0], in[1]); got != want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
}

// TestStdioServerCwd: a stdio server runs in its entry's cwd, relative to
// the file it is configured in; a cwd that does not exist fails that
// server with an error naming it.
func TestStdioServerCwd(t *testing.T) {
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "srv"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := stdioServer(t, "in")
	in.Cwd, in.Base = "srv", base
	lost := stdioServer(t, "lost")
	lost.Cwd, lost.Base = "nowhere", base
	m := newManager(t, Options{Dir: t.TempDir()}, in, lost)
	m.WaitStarted(context.Background())
	res, err := call(t, m, "mcp__in__cwd", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(filepath.Join(base, "srv"))
	if res.Text != "cwd="+want {
		t.Errorf("the server ran in %q, want %q", res.Text, want)
	}
	if s := statusOf(m, "lost"); s.State != StateFailed || !strings.Contains(s.Error, "cwd nowhere") {
		t.Errorf("lost: %+v, want failed naming its cwd", s)
	}
}

// TestFirstToolsWaitForStart: the first listing of tools waits for a
// server still on its first start (the first prompt sees its tools); a
// later one does not wait for a restart.
func TestFirstToolsWaitForStart(t *testing.T) {
	slow := stdioServer(t, "slow")
	slow.Env["AK_MCP_TEST_DELAY"] = "500ms"
	m := newManager(t, Options{}, slow)
	m.Start()
	var names []string
	for _, st := range m.Tools(context.Background()) {
		names = append(names, st.Spec.Name)
	}
	if !slices.Contains(names, "mcp__slow__echo") {
		t.Fatalf("the first listing offered %v: it did not wait for the server's start", names)
	}
}
