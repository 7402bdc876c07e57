package client

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// collector records the iopub messages of one request.
type collector struct {
	mu   sync.Mutex
	msgs []*wire.Message
}

func (c *collector) add(m *wire.Message) {
	c.mu.Lock()
	c.msgs = append(c.msgs, m)
	c.mu.Unlock()
}

// types returns the msg types, with the stream name for streams.
func (c *collector) types() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		t := m.Header.MsgType
		var ct struct {
			Name           string `json:"name"`
			ExecutionState string `json:"execution_state"`
		}
		_ = m.DecodeContent(&ct)
		switch t {
		case "stream":
			t += ":" + ct.Name
		case "status":
			t += ":" + ct.ExecutionState
		}
		out = append(out, t)
	}
	return out
}

func (c *collector) handlers() Handlers { return Handlers{IOPub: c.add} }

func execute(t *testing.T, c *Client, code string) (*wire.Message, *collector) {
	t.Helper()
	col := &collector{}
	reply, err := c.Execute(testCtx(t), code, ExecuteOptions{}, col.handlers())
	if err != nil {
		t.Fatalf("Execute(%q): %v", code, err)
	}
	return reply, col
}

// sleeper prints, so that the test knows the code runs, then sleeps.
const sleeper = "import time; print('sleeping', flush=True); time.sleep(30)"

// TestKernel runs the protocol round trips against one ipykernel.
func TestKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ipykernel")
	}
	k := startKernel(t, python3Spec(t), Options{})
	c := k.Client()
	if k.Pid() <= 0 {
		t.Fatalf("Pid = %d", k.Pid())
	}

	t.Run("kernel_info", func(t *testing.T) {
		reply, err := c.KernelInfo(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		ct := content(t, reply)
		if reply.Header.MsgType != "kernel_info_reply" || ct["status"] != "ok" || ct["implementation"] != "ipython" {
			t.Fatalf("reply %s %v", reply.Header.MsgType, ct)
		}
		if li, _ := ct["language_info"].(map[string]any); li["name"] != "python" {
			t.Fatalf("language_info %v", ct["language_info"])
		}
	})

	t.Run("execute outputs in order", func(t *testing.T) {
		code := `import sys
from IPython.display import display, HTML
print("out1"); sys.stdout.flush()
print("err1", file=sys.stderr); sys.stderr.flush()
display(HTML("<b>hi</b>"))
6 * 7`
		reply, col := execute(t, c, code)
		ct := content(t, reply)
		if ct["status"] != "ok" {
			t.Fatalf("reply %v", ct)
		}
		want := []string{"status:busy", "execute_input", "stream:stdout", "stream:stderr", "display_data", "execute_result", "status:idle"}
		if got := col.types(); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("iopub:\n got %v\nwant %v", got, want)
		}
		res := content(t, col.msgs[5])
		if data, _ := res["data"].(map[string]any); data["text/plain"] != "42" {
			t.Fatalf("execute_result %v", res)
		}
		if data, _ := content(t, col.msgs[4])["data"].(map[string]any); data["text/html"] != "<b>hi</b>" {
			t.Fatalf("display_data %v", col.msgs[4])
		}
		if ec, _ := ct["execution_count"].(float64); ec < 1 {
			t.Fatalf("execution_count %v", ct["execution_count"])
		}
	})

	t.Run("reply handler sees the reply before Do returns", func(t *testing.T) {
		var got []*wire.Message
		reply, err := c.Execute(testCtx(t), "1", ExecuteOptions{}, Handlers{Reply: func(m *wire.Message) {
			got = append(got, m)
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != reply || reply.Header.MsgType != "execute_reply" {
			t.Fatalf("Reply handler got %d messages, want the returned reply once", len(got))
		}
	})

	t.Run("error reply", func(t *testing.T) {
		reply, col := execute(t, c, `1/0`)
		ct := content(t, reply)
		if ct["status"] != "error" || ct["ename"] != "ZeroDivisionError" {
			t.Fatalf("reply %v", ct)
		}
		if got := col.types(); !contains(got, "error") {
			t.Fatalf("no error on iopub: %v", got)
		}
	})

	requests := []struct {
		name    string
		req     Request
		check   func(t *testing.T, ct map[string]any)
		replyTo string
	}{
		{"complete", Request{MsgType: "complete_request", Content: map[string]any{"code": "import o", "cursor_pos": 8}},
			func(t *testing.T, ct map[string]any) {
				ms, _ := ct["matches"].([]any)
				found := false
				for _, m := range ms {
					found = found || m == "os"
				}
				if !found {
					t.Fatalf("matches %v", ms)
				}
			}, "complete_reply"},
		{"inspect", Request{MsgType: "inspect_request", Content: map[string]any{"code": "len", "cursor_pos": 3, "detail_level": 0}},
			func(t *testing.T, ct map[string]any) {
				if ct["found"] != true {
					t.Fatalf("inspect %v", ct)
				}
			}, "inspect_reply"},
		{"is_complete", Request{MsgType: "is_complete_request", Content: map[string]any{"code": "for i in range(3):"}},
			func(t *testing.T, ct map[string]any) {
				if ct["status"] != "incomplete" {
					t.Fatalf("is_complete %v", ct)
				}
			}, "is_complete_reply"},
		{"history", Request{MsgType: "history_request", Content: map[string]any{"output": false, "raw": true, "hist_access_type": "tail", "n": 10}},
			func(t *testing.T, ct map[string]any) {
				if h, _ := ct["history"].([]any); len(h) == 0 {
					t.Fatalf("history %v", ct)
				}
			}, "history_reply"},
		{"comm_info", Request{MsgType: "comm_info_request", Content: map[string]any{}},
			func(t *testing.T, ct map[string]any) {
				if _, ok := ct["comms"].(map[string]any); !ok || ct["status"] != "ok" {
					t.Fatalf("comm_info %v", ct)
				}
			}, "comm_info_reply"},
		{"kernel_info on control", Request{Channel: "control", MsgType: "kernel_info_request"},
			func(t *testing.T, ct map[string]any) {}, "kernel_info_reply"},
	}
	for _, tt := range requests {
		t.Run(tt.name, func(t *testing.T) {
			col := &collector{}
			reply, err := c.Do(testCtx(t), tt.req, col.handlers())
			if err != nil {
				t.Fatal(err)
			}
			if reply.Header.MsgType != tt.replyTo {
				t.Fatalf("reply type %s, want %s", reply.Header.MsgType, tt.replyTo)
			}
			tt.check(t, content(t, reply))
			if got := col.types(); len(got) < 2 || got[0] != "status:busy" || got[len(got)-1] != "status:idle" {
				t.Fatalf("iopub %v, want busy … idle", got)
			}
		})
	}

	t.Run("comm_open has no reply", func(t *testing.T) {
		col := &collector{}
		reply, err := c.Do(testCtx(t), Request{MsgType: "comm_open", Content: map[string]any{
			"comm_id": "c0ffee", "target_name": "no-such-target", "data": map[string]any{}}}, col.handlers())
		if err != nil || reply != nil {
			t.Fatalf("comm_open: %v %v", reply, err)
		}
		if got := col.types(); got[len(got)-1] != "status:idle" {
			t.Fatalf("iopub %v", got)
		}
	})

	t.Run("stdin round trip", func(t *testing.T) {
		var prompts []string
		col := &collector{}
		h := col.handlers()
		h.Input = func(prompt string, password bool) (string, error) {
			prompts = append(prompts, prompt)
			return "Ada", nil
		}
		reply, err := c.Execute(testCtx(t), `name = input("who? "); print("hello", name)`, ExecuteOptions{AllowStdin: true}, h)
		if err != nil {
			t.Fatal(err)
		}
		if ct := content(t, reply); ct["status"] != "ok" {
			t.Fatalf("reply %v", ct)
		}
		if len(prompts) != 1 || prompts[0] != "who? " {
			t.Fatalf("prompts %q", prompts)
		}
		var out strings.Builder
		for _, m := range col.msgs {
			if m.Header.MsgType == "stream" {
				out.WriteString(content(t, m)["text"].(string))
			}
		}
		if !strings.Contains(out.String(), "hello Ada") {
			t.Fatalf("stdout %q", out.String())
		}
	})

	t.Run("interrupt signal", func(t *testing.T) {
		ctx := testCtx(t)
		type result struct {
			reply *wire.Message
			err   error
		}
		started := make(chan struct{})
		done := make(chan result, 1)
		go func() {
			var once sync.Once
			r, err := c.Execute(ctx, sleeper, ExecuteOptions{}, Handlers{IOPub: func(m *wire.Message) {
				if m.Header.MsgType == "stream" {
					once.Do(func() { close(started) })
				}
			}})
			done <- result{r, err}
		}()
		<-started
		// The code is running (it printed): the KeyboardInterrupt lands in
		// sleep, not in the kernel's own machinery.
		if err := k.Interrupt(ctx); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		if ct := content(t, r.reply); ct["status"] != "error" || ct["ename"] != "KeyboardInterrupt" {
			t.Fatalf("reply %v", ct)
		}
		// the kernel still works
		if reply, _ := execute(t, c, "1+1"); content(t, reply)["status"] != "ok" {
			t.Fatal("kernel broken after interrupt")
		}
	})

	t.Run("cancelled request is dropped", func(t *testing.T) {
		ctx, cancel := context.WithCancel(testCtx(t))
		cancel()
		if _, err := c.Execute(ctx, "1", ExecuteOptions{}, Handlers{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		if reply, _ := execute(t, c, "2"); content(t, reply)["status"] != "ok" {
			t.Fatal("kernel broken after cancelled request")
		}
	})

	t.Run("dial running kernel", func(t *testing.T) {
		var mu sync.Mutex
		var foreign int
		c2, err := Dial(testCtx(t), k.ConnectionInfo(), Options{Logger: testLogger(), OnIOPub: func(*wire.Message) {
			mu.Lock()
			foreign++
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		if c2.Session() == c.Session() {
			t.Fatal("sessions collide")
		}
		reply, col := execute(t, c2, "print('from c2')")
		if content(t, reply)["status"] != "ok" || !contains(col.types(), "stream:stdout") {
			t.Fatalf("c2 execute: %v %v", content(t, reply), col.types())
		}
		if err := c2.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c2.Close(); err == nil {
			t.Fatal("second Close returned nil")
		}
	})
}

// TestRestart checks a restart gives a fresh namespace behind the same
// Client, and message-mode interrupts.
func TestRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ipykernel")
	}
	spec := *python3Spec(t)
	spec.InterruptMode = "message"
	// A fast heartbeat: it must not call the restart a death.
	k := startKernel(t, &spec, Options{HeartbeatInterval: 100 * time.Millisecond})
	c := k.Client()
	execute(t, c, "x = 1")
	oldPid := k.Pid()
	if err := k.Restart(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if k.Pid() == oldPid {
		t.Fatal("same pid after restart")
	}
	if pidGone, _ := processGone(oldPid); !pidGone {
		t.Fatalf("old kernel %d still running", oldPid)
	}
	reply, _ := execute(t, c, "x")
	if ct := content(t, reply); ct["status"] != "error" || ct["ename"] != "NameError" {
		t.Fatalf("after restart x gave %v, want NameError", ct)
	}
	reply, col := execute(t, c, "print('alive')")
	if content(t, reply)["status"] != "ok" || !contains(col.types(), "stream:stdout") {
		t.Fatalf("after restart: %v", col.types())
	}
	select {
	case <-k.Done():
		t.Fatal("Done closed by restart")
	default:
	}

	t.Run("interrupt message", func(t *testing.T) {
		ctx := testCtx(t)
		started := make(chan struct{})
		done := make(chan error, 1)
		var reply *wire.Message
		go func() {
			var once sync.Once
			var err error
			reply, err = c.Execute(ctx, sleeper, ExecuteOptions{}, Handlers{IOPub: func(m *wire.Message) {
				if m.Header.MsgType == "stream" {
					once.Do(func() { close(started) })
				}
			}})
			done <- err
		}()
		<-started
		if err := k.Interrupt(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if ct := content(t, reply); ct["ename"] != "KeyboardInterrupt" {
			t.Fatalf("reply %v", ct)
		}
	})
}

// TestShutdownLeavesNoProcess checks the kernel and its children are gone.
func TestShutdownLeavesNoProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ipykernel")
	}
	k := startKernel(t, python3Spec(t), Options{})
	// An orphan left in the kernel's process group: ipykernel only
	// terminates its own children at shutdown.
	execute(t, k.Client(), "import os; os.system('sleep 300 &')")
	pid := k.Pid()
	file := k.ConnectionFile()
	if err := k.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if pidGone, groupGone := processGone(pid); !pidGone || !groupGone {
		t.Fatalf("after Shutdown: pid gone %v, group gone %v", pidGone, groupGone)
	}
	if _, err := k.Client().KernelInfo(testCtx(t)); err == nil {
		t.Fatal("client works after Shutdown")
	}
	if err := k.Shutdown(testCtx(t)); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if k.Err() != nil {
		t.Fatalf("Err after clean shutdown: %v", k.Err())
	}
	<-k.Done()
	if fileExists(file) {
		t.Fatal("connection file left behind")
	}
}

// TestKilledKernel checks a SIGKILLed kernel fails the pending request.
func TestKilledKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ipykernel")
	}
	k := startKernel(t, python3Spec(t), Options{})
	c := k.Client()
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var once sync.Once
		_, err := c.Execute(testCtx(t), sleeper, ExecuteOptions{}, Handlers{IOPub: func(m *wire.Message) {
			if m.Header.MsgType == "stream" {
				once.Do(func() { close(started) })
			}
		}})
		done <- err
	}()
	<-started
	if err := syscall.Kill(k.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrDead) {
		t.Fatalf("pending Execute: got %v, want ErrDead", err)
	}
	<-k.Done()
	if !errors.Is(k.Err(), ErrDead) {
		t.Fatalf("Err = %v", k.Err())
	}
	if _, err := c.KernelInfo(testCtx(t)); !errors.Is(err, ErrDead) {
		t.Fatalf("later request: got %v, want ErrDead", err)
	}
	if err := k.Restart(testCtx(t)); !errors.Is(err, ErrDead) {
		t.Fatalf("Restart of a dead kernel: got %v, want ErrDead", err)
	}
}

// TestHeartbeatDeath stops the kernel (SIGSTOP): only the heartbeat can
// notice.
func TestHeartbeatDeath(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ipykernel")
	}
	k := startKernel(t, python3Spec(t), Options{HeartbeatInterval: 50 * time.Millisecond})
	pid := k.Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	<-k.Done()
	if err := k.Err(); !errors.Is(err, ErrDead) || !strings.Contains(err.Error(), "heartbeat") {
		t.Fatalf("Err = %v, want heartbeat death", err)
	}
}

// TestKilledKernelWatcherCloses kills the kernel while a watcher of Done
// closes the client at once, as the bridge does: the pending request must
// still report the death (ErrDead), not a closed client.
func TestKilledKernelWatcherCloses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ipykernel")
	}
	k := startKernel(t, python3Spec(t), Options{})
	c := k.Client()
	go func() {
		<-k.Done()
		c.Close()
	}()
	_, err := c.Execute(testCtx(t), "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", ExecuteOptions{}, Handlers{})
	if !errors.Is(err, ErrDead) {
		t.Fatalf("pending Execute: got %v, want ErrDead", err)
	}
}
