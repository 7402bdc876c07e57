package backing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

func needPython(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts ipykernel; skipped with -short")
	}
	if _, err := client.FindSpec("python3"); err != nil {
		t.Skipf("no python3 kernelspec: %v", err)
	}
}

// TestLocal runs cells in one lazily started ipykernel: state persists,
// outputs are collected for the model and passed to OnOutput, exceptions
// are results, not errors.
func TestLocal(t *testing.T) {
	needPython(t)
	var mu sync.Mutex
	var seen []string
	output := func(o Output) {
		mu.Lock()
		seen = append(seen, o.Type)
		mu.Unlock()
	}
	r := NewLocal(LocalOptions{})
	defer r.Close()
	if r.Running() {
		t.Fatal("started before the first Execute")
	}
	ctx := context.Background()
	tests := []struct {
		name, code                    string
		stdout, stderr, result, ename string
	}{
		{"print", "x = 6\nprint('hi')", "hi\n", "", "", ""},
		{"state persists", "x * 7", "", "", "42\n", ""},
		{"stderr", "import sys; print('oops', file=sys.stderr)", "", "oops\n", "", ""},
		{"exception", "1/0", "", "", "", "ZeroDivisionError"},
		{"display", "from IPython.display import display; display('shown')", "", "", "'shown'\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := r.Execute(ctx, Exec{Code: tt.code, Output: output})
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			if res.Stdout != tt.stdout || res.Stderr != tt.stderr || res.Text != tt.result {
				t.Errorf("stdout %q stderr %q result %q; want %q %q %q", res.Stdout, res.Stderr, res.Text, tt.stdout, tt.stderr, tt.result)
			}
			switch {
			case tt.ename == "" && res.Error != nil:
				t.Errorf("unexpected error %+v", res.Error)
			case tt.ename != "" && (res.Error == nil || res.Error.Name != tt.ename):
				t.Errorf("error %+v, want %s", res.Error, tt.ename)
			}
		})
	}
	mu.Lock()
	got := strings.Join(seen, ",")
	mu.Unlock()
	for _, want := range []string{"stream", "execute_result", "error", "display_data"} {
		if !strings.Contains(got, want) {
			t.Errorf("Output saw %s; want %s among them", got, want)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := r.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close = %v, want net.ErrClosed", err)
	}
	if _, err := r.Execute(ctx, Exec{Code: "1"}); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Execute after Close = %v, want net.ErrClosed", err)
	}
}

// TestLocalRestartsDeadKernel: a kernel that dies fails its cell and the
// next cell gets a fresh kernel.
func TestLocalRestartsDeadKernel(t *testing.T) {
	needPython(t)
	r := NewLocal(LocalOptions{})
	defer r.Close()
	if _, err := r.Execute(context.Background(), Exec{Code: "x = 1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(context.Background(), Exec{Code: "import os; os._exit(3)"}); err == nil || !strings.Contains(err.Error(), "died") {
		t.Fatalf("Execute of a dying cell = %v, want an error saying the kernel died", err)
	}
	res, err := r.Execute(context.Background(), Exec{Code: "'x' in globals()"})
	if err != nil || res.Text != "False\n" {
		t.Fatalf("fresh kernel: %+v, %v", res, err)
	}
}

func TestLocalUnknownKernel(t *testing.T) {
	r := NewLocal(LocalOptions{Kernel: "no-such-kernel"})
	defer r.Close()
	_, err := r.Execute(context.Background(), Exec{Code: "1"})
	if !errors.Is(err, client.ErrNoSpec) {
		t.Fatalf("Execute = %v, want ErrNoSpec", err)
	}
}

func TestCollectorAddReply(t *testing.T) {
	msg := func(typ, content string) *wire.Message {
		return &wire.Message{Header: wire.Header{MsgType: typ}, Content: json.RawMessage(content)}
	}
	reply := msg("execute_reply", `{"status":"error","ename":"KeyboardInterrupt","evalue":""}`)

	var quiet Collector // the kernel sent no error output
	quiet.AddReply(reply)
	if e := quiet.Result().Error; e == nil || e.Name != "KeyboardInterrupt" {
		t.Fatalf("error from the reply alone: %+v", e)
	}

	var loud Collector // the error output, with its traceback, wins
	loud.Add(msg("error", `{"ename":"ValueError","evalue":"bad","traceback":["tb"]}`))
	loud.AddReply(reply)
	if e := loud.Result().Error; e == nil || e.Name != "ValueError" || len(e.Traceback) != 1 {
		t.Fatalf("error output replaced: %+v", e)
	}

	var ok Collector
	ok.AddReply(msg("execute_reply", `{"status":"ok"}`))
	if e := ok.Result().Error; e != nil {
		t.Fatalf("ok reply made an error: %+v", e)
	}
}

// TestIncompleteCellSaysSo: a cell whose idle was lost on the way
// (client.ErrIncomplete: outputs may be missing too) is a result all the
// same, and both its outputs (what the notebook shows) and its result (what
// the model is told) say that some outputs may be missing.
func TestIncompleteCellSaysSo(t *testing.T) {
	var shown []Output
	e := Exec{Code: "print(1)", Output: func(o Output) { shown = append(shown, o) }}
	do := func(_ context.Context, req client.Request, h client.Handlers) (*wire.Message, error) {
		h.IOPub(&wire.Message{Header: wire.Header{MsgType: wire.MsgStream}, Content: json.RawMessage(`{"name":"stdout","text":"1\n"}`)})
		rep := &wire.Message{Header: wire.Header{MsgType: wire.MsgExecuteReply}, Content: json.RawMessage(`{"status":"ok","execution_count":1}`)}
		return rep, fmt.Errorf("execute_request: %w", client.ErrIncomplete)
	}
	interrupt := func(context.Context) error { return nil }
	res, err := runCell(context.Background(), context.Background(), time.Second, hclog.NewNullLogger(), e, interrupt, do)
	if err != nil || res.Status != "ok" || res.Stdout != "1\n" {
		t.Fatalf("%+v, %v: want the cell's result", res, err)
	}
	if !strings.Contains(res.Stderr, "may be missing") {
		t.Errorf("the result does not say outputs may be missing: stderr %q", res.Stderr)
	}
	if len(shown) != 2 || !strings.Contains(string(shown[1].Content), "may be missing") {
		t.Errorf("the cell's outputs do not say so: %+v", shown)
	}
}

// slowKernel installs a kernelspec "slowpy" on a fresh JUPYTER_PATH: Debian's
// ipykernel behind a shell that waits first, like a kernel on a loaded
// machine that takes seconds to start serving.
func slowKernel(t *testing.T, delay string) {
	t.Helper()
	dir := t.TempDir()
	spec := dir + "/kernels/slowpy"
	if err := os.MkdirAll(spec, 0o755); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(map[string]any{
		"argv":         []string{"/bin/sh", "-c", "sleep " + delay + "; exec /usr/bin/python3 -m ipykernel_launcher -f \"$0\"", "{connection_file}"},
		"display_name": "slow python", "language": "python", "interrupt_mode": "message",
	})
	if err := os.WriteFile(spec+"/kernel.json", js, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JUPYTER_PATH", dir)
}

// TestLocalInterruptWhileStarting: an interrupt that comes while requests
// wait for the kernel to start ends them at once (they never run), and the
// kernel serves the next one.
func TestLocalInterruptWhileStarting(t *testing.T) {
	needPython(t)
	slowKernel(t, "3")
	r := NewLocal(LocalOptions{Kernel: "slowpy"})
	defer r.Close()
	r.Start()
	done := make(chan error, 1)
	go func() {
		_, err := r.Execute(context.Background(), Exec{Code: "import time; time.sleep(15); ran = True"})
		done <- err
	}()
	for r.waiters() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if err := r.Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("Execute = %v, want ErrInterrupted", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the interrupt did not end the request that waited for the start")
	}
	res, err := r.Execute(context.Background(), Exec{Code: "'ran' in globals()"})
	if err != nil || res.Text != "False\n" {
		t.Fatalf("next cell: %+v, %v (the interrupted cell must not have run)", res, err)
	}
}
