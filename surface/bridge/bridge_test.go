package bridge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/session"
)

func TestMain(m *testing.M) {
	// zmq4 v0.17.0's PUB writer goroutine is never woken by Close.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run"))
}

func logger() hclog.Logger {
	level := hclog.LevelFromString(os.Getenv("AGENTKERNEL_LOG_LEVEL"))
	if level == hclog.NoLevel {
		level = hclog.Warn
	}
	return hclog.New(&hclog.LoggerOptions{Level: level, Output: os.Stderr})
}

// harness is agentkernel in code mode over Debian's ipykernel, served on
// loopback, with a Go client connected to it.
type harness struct {
	t   *testing.T
	b   *Bridge
	srv *kernel.Server
	c   *client.Client
}

func start(t *testing.T) *harness {
	t.Helper()
	return startWith(t, testConfig{})
}

// testConfig is a Bridge's Config and what the composition root (package
// app) would open for it: the runner of the Backing kernelspec in Dir, and
// a host of Host's settings.
type testConfig struct {
	Config
	Backing string
	Dir     string
	Host    session.Config
	// Key is the signing key of the kernel's connection and, unless
	// OwnKey, of its backing kernel's, as the kernel command does; "" is
	// a fresh one.
	Key    string
	OwnKey bool
}

// newBridge opens tc's runner and host and the Bridge over them.
func newBridge(t *testing.T, tc testConfig) *Bridge {
	t.Helper()
	if tc.Dir == "" {
		tc.Dir, _ = os.Getwd()
	}
	if tc.Logger == nil {
		tc.Logger = logger()
	}
	var b *Bridge
	bo := backing.Options{Kernel: tc.Backing, Dir: tc.Dir, OnIOPub: func(m *wire.Message) { b.Unsolicited(m) },
		Logger: tc.Logger}
	if !tc.OwnKey {
		bo.Key = tc.Key
	}
	r, err := backing.Open(bo)
	if err != nil {
		t.Fatal(err)
	}
	hc := tc.Host
	hc.Runner, hc.Workspace, hc.Kind, hc.Logger = r, tc.Dir, string(cmp.Or(tc.Cells, CodeCells)), tc.Logger
	cfg := tc.Config
	cfg.Runner, cfg.Host = r, session.New(hc)
	if b, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	return b
}

func startWith(t *testing.T, tc testConfig) *harness {
	t.Helper()
	if testing.Short() {
		t.Skip("starts ipykernel")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import ipykernel").Run(); err != nil {
		t.Skip("Debian's python3-ipykernel is not installed")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	tc.Key = cmp.Or(tc.Key, wire.NewKey())
	b := newBridge(t, tc)
	b.Start()
	var (
		srv    *kernel.Server
		c      *client.Client
		cancel context.CancelFunc
		served chan error
	)
	// Ports are picked free and bound later; a parallel test process may
	// take one meanwhile, so try again with fresh ports.
	for attempt := 1; ; attempt++ {
		conn, err := wire.NewConnectionInfo("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		conn.Key = tc.Key
		if srv, err = kernel.New(kernel.Config{Conn: conn, Handler: b, Logger: logger()}); err != nil {
			t.Fatal(err)
		}
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		served = make(chan error, 1)
		dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
		go func() {
			err := srv.Serve(ctx)
			dcancel() // a port taken ends Serve at once: the dial need not wait out its 30 s
			served <- err
		}()
		c, err = client.Dial(dctx, conn, client.Options{Logger: logger()})
		dcancel()
		if err == nil {
			break
		}
		cancel()
		<-served
		if attempt == 3 {
			b.Close()
			t.Fatal(err)
		}
		t.Logf("attempt %d: %v; trying fresh ports", attempt, err)
	}
	t.Cleanup(func() {
		c.Close()
		cancel()
		<-served
		if err := b.Close(); err != nil {
			t.Errorf("close bridge: %v", err)
		}
	})
	return &harness{t: t, b: b, srv: srv, c: c}
}

type outputs struct {
	mu   sync.Mutex
	msgs []*wire.Message
}

func (o *outputs) add(m *wire.Message) { o.mu.Lock(); o.msgs = append(o.msgs, m); o.mu.Unlock() }

func (o *outputs) types() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var s []string
	for _, m := range o.msgs {
		t := m.Header.MsgType
		if t == "status" {
			var c struct {
				S string `json:"execution_state"`
			}
			json.Unmarshal(m.Content, &c)
			t = c.S
		}
		s = append(s, t)
	}
	return strings.Join(s, ",")
}

func (h *harness) exec(code string, opts client.ExecuteOptions, input func(string, bool) (string, error)) (map[string]any, *outputs) {
	h.t.Helper()
	o := &outputs{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := h.c.Execute(ctx, code, opts, client.Handlers{IOPub: o.add, Input: input})
	if err != nil {
		h.t.Fatalf("execute %q: %v", code, err)
	}
	var c map[string]any
	rep.DecodeContent(&c)
	return c, o
}

// execAsync sends a cell without waiting: the channel gets its
// execute_reply's content (nil if the request failed).
func (h *harness) execAsync(code string) <-chan map[string]any {
	done := make(chan map[string]any, 1)
	go func() { // ends with the request; the harness's cleanup closes the client
		rep, err := h.c.Execute(context.Background(), code, client.ExecuteOptions{}, client.Handlers{})
		var c map[string]any
		if err == nil {
			rep.DecodeContent(&c)
		}
		done <- c
	}()
	return done
}

func (h *harness) do(msgType string, content any) map[string]any {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := h.c.Do(ctx, client.Request{MsgType: msgType, Content: content}, client.Handlers{})
	if err != nil {
		h.t.Fatalf("%s: %v", msgType, err)
	}
	if rep == nil {
		return nil
	}
	var c map[string]any
	rep.DecodeContent(&c)
	return c
}

func TestCodeMode(t *testing.T) {
	h := start(t)

	t.Run("outputs forwarded unchanged, one busy/idle", func(t *testing.T) {
		rep, o := h.exec(`import sys
from IPython.display import display, HTML
print("out"); print("err", file=sys.stderr)
display(HTML("<b>hi</b>"))
40 + 2`, client.ExecuteOptions{}, nil)
		if rep["status"] != "ok" {
			t.Fatalf("reply %v", rep)
		}
		if got, want := o.types(), "busy,execute_input,stream,stream,display_data,execute_result,idle"; got != want {
			t.Fatalf("iopub = %s, want %s", got, want)
		}
		var res struct {
			Data  map[string]any `json:"data"`
			Count int            `json:"execution_count"`
		}
		json.Unmarshal(o.msgs[5].Content, &res)
		if res.Data["text/plain"] != "42" || float64(res.Count) != rep["execution_count"] {
			t.Fatalf("execute_result %s vs reply count %v", o.msgs[5].Content, rep["execution_count"])
		}
		if !strings.Contains(string(o.msgs[4].Content), "<b>hi</b>") {
			t.Fatalf("display_data %s", o.msgs[4].Content)
		}
	})

	t.Run("execution_count follows silent and store_history", func(t *testing.T) {
		first, _ := h.exec("1", client.ExecuteOptions{}, nil)
		_, o := h.exec("2", client.ExecuteOptions{Silent: true}, nil)
		if strings.Contains(o.types(), "execute_input") {
			t.Fatalf("silent execute published execute_input: %s", o.types())
		}
		no := false
		h.exec("3", client.ExecuteOptions{StoreHistory: &no}, nil)
		next, _ := h.exec("4", client.ExecuteOptions{}, nil)
		if next["execution_count"].(float64) != first["execution_count"].(float64)+1 {
			t.Fatalf("count went %v → %v", first["execution_count"], next["execution_count"])
		}
	})

	t.Run("error", func(t *testing.T) {
		rep, o := h.exec("1/0", client.ExecuteOptions{}, nil)
		if rep["status"] != "error" || rep["ename"] != "ZeroDivisionError" {
			t.Fatalf("reply %v", rep)
		}
		if got := o.types(); got != "busy,execute_input,error,idle" {
			t.Fatalf("iopub = %s", got)
		}
	})

	t.Run("input round trip", func(t *testing.T) {
		var asked string
		_, o := h.exec("print('got', input('name? '))", client.ExecuteOptions{AllowStdin: true}, func(p string, pw bool) (string, error) {
			asked = p
			return "Ada", nil
		})
		if asked != "name? " {
			t.Fatalf("prompt %q", asked)
		}
		// print writes "got", " " and "Ada\n": a flush may fall between them.
		if got := strings.Join(texts(o, "stream", ""), ""); got != "got Ada\n" {
			t.Fatalf("output %q (%s)", got, o.types())
		}
	})

	t.Run("complete inspect is_complete history comm_info", func(t *testing.T) {
		h.exec("zebra_value = 1", client.ExecuteOptions{}, nil)
		c := h.do("complete_request", map[string]any{"code": "zebra_v", "cursor_pos": 7})
		if c["status"] != "ok" || !strings.Contains(jsonString(c["matches"]), "zebra_value") {
			t.Fatalf("complete %v", c)
		}
		c = h.do("inspect_request", map[string]any{"code": "len", "cursor_pos": 3, "detail_level": 0})
		if c["status"] != "ok" || c["found"] != true {
			t.Fatalf("inspect %v", c)
		}
		c = h.do("is_complete_request", map[string]any{"code": "for i in range(3):"})
		if c["status"] != "incomplete" {
			t.Fatalf("is_complete %v", c)
		}
		c = h.do("history_request", map[string]any{"hist_access_type": "tail", "n": 3, "output": false, "raw": true})
		if c["status"] != "ok" {
			t.Fatalf("history %v", c)
		}
		c = h.do("comm_info_request", map[string]any{})
		if c["status"] != "ok" {
			t.Fatalf("comm_info %v", c)
		}
	})

	t.Run("dead backing kernel fails the cell, next cell gets a fresh one", func(t *testing.T) {
		h.exec("marker = 1", client.ExecuteOptions{}, nil)
		rep, o := h.exec("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", client.ExecuteOptions{}, nil)
		if rep["status"] != "error" || rep["ename"] != "DeadKernelError" {
			t.Fatalf("reply %v", rep)
		}
		if !strings.Contains(o.types(), "error") {
			t.Fatalf("no error output: %s", o.types())
		}
		rep, o = h.exec("print('marker' in dir())", client.ExecuteOptions{}, nil)
		if rep["status"] != "ok" || !strings.Contains(string(o.msgs[len(o.msgs)-2].Content), "False") {
			t.Fatalf("fresh kernel: %v %s", rep, o.types())
		}
	})
}

func TestInterrupt(t *testing.T) {
	h := start(t)
	h.exec("1", client.ExecuteOptions{}, nil) // backing kernel up
	done := h.execAsync("import time; print('go', flush=True); time.sleep(30)")
	time.Sleep(1 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.c.Do(ctx, client.Request{Channel: "control", MsgType: "interrupt_request"}, client.Handlers{}); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-done:
		if c["ename"] != "KeyboardInterrupt" {
			t.Fatalf("reply %v", c)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("interrupt did not end the cell")
	}
	// SIGINT path: the server's Interrupt, as the signal handler calls it.
	done = h.execAsync("import time; time.sleep(30)")
	time.Sleep(1 * time.Second)
	if err := h.srv.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-done:
		if c["ename"] != "KeyboardInterrupt" {
			t.Fatalf("reply %v", c)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("SIGINT-style interrupt did not end the cell")
	}
}

// TestInterruptWhileBackingStarts: kernel_info is answered from the cache
// at once, so a frontend sends a cell while the backing kernel still
// starts; an interrupt then ends that cell at once (it never runs), and
// the next cell runs.
func TestInterruptWhileBackingStarts(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "kernels", "slowpy")
	if err := os.MkdirAll(spec, 0o755); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(map[string]any{
		"argv":         []string{"/bin/sh", "-c", "sleep 4; exec /usr/bin/python3 -m ipykernel_launcher -f \"$0\"", "{connection_file}"},
		"display_name": "slow python", "language": "python", "interrupt_mode": "message",
	})
	if err := os.WriteFile(filepath.Join(spec, "kernel.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JUPYTER_PATH", dir)
	// No language_info is cached: kernel_info must not wait for the start
	// (as with a cache, which install's probe fills).
	h := startWith(t, testConfig{Backing: "slowpy", Config: Config{InfoWait: time.Millisecond}})
	done := h.execAsync("import time; time.sleep(15); ran = True")
	if h.b.runner.Running() {
		t.Fatal("the slow kernel is up already")
	}
	time.Sleep(500 * time.Millisecond) // the cell waits for the start; correctness does not depend on it
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.c.Do(ctx, client.Request{Channel: "control", MsgType: "interrupt_request"}, client.Handlers{}); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-done:
		if c["status"] != "error" || c["ename"] != "KeyboardInterrupt" {
			t.Fatalf("reply %v, want KeyboardInterrupt", c)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the interrupt was lost: the cell still runs")
	}
	rep, o := h.exec("'ran' in globals()", client.ExecuteOptions{}, nil)
	if rep["status"] != "ok" || !strings.Contains(o.types(), "execute_result") {
		t.Fatalf("next cell %v (%s)", rep, o.types())
	}
	if got := texts(o, "execute_result", "text/plain"); len(got) != 1 || got[0] != "False" {
		t.Fatalf("the interrupted cell ran: %q", got)
	}
}

func TestKernelInfoBeforeBackingIsUp(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	info := json.RawMessage(`{"name":"python","version":"3.11","file_extension":".py"}`)
	dir := filepath.Join(cache, "agentkernel", "language_info")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, backing.CacheKey("python3")+".json"), info, 0o644); err != nil {
		t.Fatal(err)
	}
	b := newBridge(t, testConfig{})
	defer b.Close()
	// Not started: the cached language_info answers at once.
	ki := b.KernelInfo()
	if string(ki.LanguageInfo) != string(info) || ki.Implementation != "agentkernel" {
		t.Fatalf("kernel info %+v", ki)
	}
}

// TestUnknownBackingSpec: a backing kernelspec that is not installed does
// not stop the kernel; requests fail naming it, and once it is installed
// the next request finds it.
func TestUnknownBackingSpec(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("JUPYTER_PATH", dir)
	b := newBridge(t, testConfig{Backing: "late-kernel"})
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := b.Probe(ctx); !errors.Is(err, client.ErrNoSpec) || !strings.Contains(err.Error(), "late-kernel") {
		t.Fatalf("Probe before install = %v, want ErrNoSpec naming late-kernel", err)
	}
	real, err := client.FindSpec("python3")
	if err != nil {
		t.Skip("no python3 kernelspec:", err)
	}
	spec := filepath.Join(dir, "kernels", "late-kernel")
	if err := os.MkdirAll(spec, 0o755); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(map[string]any{"argv": real.Argv, "display_name": "late", "language": "python"})
	if err := os.WriteFile(filepath.Join(spec, "kernel.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Probe(ctx); err != nil {
		t.Fatalf("Probe after install = %v", err)
	}
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }
