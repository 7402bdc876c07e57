package backing

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// testRunner is the conformance suite every Runner passes, as log/slog
// ships slogtest: what the session host and the bridge rely on of a
// backing kernel, checked against a real one. open returns a fresh Runner
// that nothing has started yet.
func testRunner(t *testing.T, open func(t *testing.T) Runner) {
	ctx := context.Background()
	run := func(t *testing.T, r Runner, code string) Result {
		t.Helper()
		res, err := r.Execute(ctx, Exec{Code: code})
		if err != nil {
			t.Fatalf("Execute(%q): %v", code, err)
		}
		return res
	}
	t.Run("lazy start, state, outputs", func(t *testing.T) {
		r := open(t)
		if r.Running() {
			t.Fatal("running before any use")
		}
		var mu sync.Mutex
		var types []string
		res, err := r.Execute(ctx, Exec{Code: "x = 6\nprint('hi')\nx * 7", Output: func(o Output) {
			mu.Lock()
			types = append(types, o.Type)
			mu.Unlock()
		}})
		if err != nil || res.Stdout != "hi\n" || res.Text != "42\n" || res.Status != "ok" {
			t.Fatalf("first cell: %+v, %v", res, err)
		}
		mu.Lock()
		got := strings.Join(types, " ")
		mu.Unlock()
		if !strings.Contains(got, wire.MsgStream) || !strings.Contains(got, wire.MsgExecuteResult) {
			t.Errorf("outputs %q: want the stream and the result, as they came", got)
		}
		if !r.Running() {
			t.Error("not running after a cell ran")
		}
		if info := r.LanguageInfo(ctx); !strings.Contains(string(info), "python") {
			t.Errorf("language_info %s", info)
		}
		if res := run(t, r, "x"); res.Text != "6\n" {
			t.Errorf("state did not persist: %+v", res)
		}
	})
	t.Run("outputs after the reply", func(t *testing.T) {
		// The cell's output is made, then ipykernel's output thread is
		// held past the idle wait (5 s) while the reply goes out on
		// shell: the output and the idle come seconds after the reply,
		// as a big output's do on a busy machine. They are the cell's all
		// the same. (The flushes before the reply give up at once and
		// say so on the kernel's stderr.)
		r := open(t)
		res := run(t, r, `import sys, time
print("late")
sys.stdout.flush_timeout = sys.stderr.flush_timeout = 0.1
def hold():
    sys.stdout._flush()  # the output, for this cell, waits behind the sleep
    time.sleep(8)
sys.stdout.pub_thread.schedule(hold)`)
		if res.Stdout != "late\n" || strings.Contains(res.Stderr, "may be missing") {
			t.Fatalf("%+v: want the output that came after the reply, and no note of missing outputs", res)
		}
	})
	t.Run("errors are results", func(t *testing.T) {
		r := open(t)
		res := run(t, r, "1/0")
		if res.Error == nil || res.Error.Name != "ZeroDivisionError" || res.Status != "error" {
			t.Fatalf("%+v, want a ZeroDivisionError result", res)
		}
		if res := run(t, r, "'next'"); res.Text != "'next'\n" {
			t.Fatalf("the cell after an error: %+v", res)
		}
	})
	t.Run("input", func(t *testing.T) {
		r := open(t)
		res, err := r.Execute(ctx, Exec{Code: "name = input('who? ')\nprint('hello', name)",
			Input: func(prompt string, password bool) (string, error) {
				if prompt != "who? " || password {
					return "", errors.New("unexpected prompt " + prompt)
				}
				return "ada", nil
			}})
		if err != nil || res.Stdout != "hello ada\n" {
			t.Fatalf("%+v, %v", res, err)
		}
	})
	t.Run("cancel interrupts", func(t *testing.T) {
		r := open(t)
		run(t, r, "import time; y = 1")
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := r.Execute(cctx, Exec{Code: "time.sleep(60)"})
			done <- err
		}()
		time.Sleep(500 * time.Millisecond) // the cell runs; correctness does not depend on it
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled cell: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("cancelling did not end the cell")
		}
		if res := run(t, r, "y"); res.Text != "1\n" {
			t.Fatalf("state after the interrupt: %+v", res)
		}
	})
	t.Run("restart loses state", func(t *testing.T) {
		r := open(t)
		run(t, r, "z = 3")
		if err := r.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		if res := run(t, r, "'z' in globals()"); res.Text != "False\n" {
			t.Fatalf("after a restart: %+v", res)
		}
	})
	t.Run("close", func(t *testing.T) {
		r := open(t)
		run(t, r, "1")
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("second Close: %v, want net.ErrClosed", err)
		}
		if _, err := r.Execute(ctx, Exec{Code: "1"}); err == nil {
			t.Fatal("a closed runner ran a cell")
		}
	})
}

func TestLocalConformance(t *testing.T) {
	needPython(t)
	testRunner(t, func(t *testing.T) Runner {
		r := NewLocal(LocalOptions{})
		t.Cleanup(func() { r.Close() })
		return r
	})
}

func TestRemoteConformance(t *testing.T) {
	g := jupyterServer(t, t.TempDir())
	testRunner(t, func(t *testing.T) Runner {
		r, err := NewRemote(RemoteOptions{Gateway: g})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	})
}
