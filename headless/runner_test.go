package headless

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

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

// TestRunner runs cells in one lazily started ipykernel: state persists,
// outputs are collected for the model and passed to OnOutput, exceptions
// are results, not errors.
func TestRunner(t *testing.T) {
	needPython(t)
	var mu sync.Mutex
	var seen []string
	r := NewRunner(RunnerOptions{OnOutput: func(typ string, _ json.RawMessage) {
		mu.Lock()
		seen = append(seen, typ)
		mu.Unlock()
	}})
	defer r.Close()
	if r.Started() {
		t.Fatal("started before the first Run")
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
			res, err := r.Run(ctx, tt.code)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Stdout != tt.stdout || res.Stderr != tt.stderr || res.Result != tt.result {
				t.Errorf("stdout %q stderr %q result %q; want %q %q %q", res.Stdout, res.Stderr, res.Result, tt.stdout, tt.stderr, tt.result)
			}
			switch {
			case tt.ename == "" && res.Error != nil:
				t.Errorf("unexpected error %+v", res.Error)
			case tt.ename != "" && (res.Error == nil || res.Error.EName != tt.ename):
				t.Errorf("error %+v, want %s", res.Error, tt.ename)
			}
		})
	}
	mu.Lock()
	got := strings.Join(seen, ",")
	mu.Unlock()
	for _, want := range []string{"stream", "execute_result", "error", "display_data"} {
		if !strings.Contains(got, want) {
			t.Errorf("OnOutput saw %s; want %s among them", got, want)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := r.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close = %v, want net.ErrClosed", err)
	}
	if _, err := r.Run(ctx, "1"); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Run after Close = %v, want net.ErrClosed", err)
	}
}

// TestRunnerCancelInterrupts: ending ctx interrupts the running cell and
// the kernel stays usable.
func TestRunnerCancelInterrupts(t *testing.T) {
	needPython(t)
	r := NewRunner(RunnerOptions{})
	defer r.Close()
	if _, err := r.Run(context.Background(), "import time"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, "print('sleeping', flush=True); time.sleep(60)")
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // let the cell start; correctness does not depend on it
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel = %v, want context.Canceled", err)
	}
	res, err := r.Run(context.Background(), "'still alive'")
	if err != nil || res.Result != "'still alive'\n" {
		t.Fatalf("after the interrupt: %+v, %v", res, err)
	}
}

// TestRunnerRestartsDeadKernel: a kernel that dies fails its cell and the
// next cell gets a fresh kernel.
func TestRunnerRestartsDeadKernel(t *testing.T) {
	needPython(t)
	r := NewRunner(RunnerOptions{})
	defer r.Close()
	if _, err := r.Run(context.Background(), "x = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background(), "import os; os._exit(3)"); err == nil || !strings.Contains(err.Error(), "died") {
		t.Fatalf("Run of a dying cell = %v, want an error saying the kernel died", err)
	}
	res, err := r.Run(context.Background(), "'x' in globals()")
	if err != nil || res.Result != "False\n" {
		t.Fatalf("fresh kernel: %+v, %v", res, err)
	}
}

func TestRunnerUnknownKernel(t *testing.T) {
	r := NewRunner(RunnerOptions{Kernel: "no-such-kernel"})
	defer r.Close()
	_, err := r.Run(context.Background(), "1")
	if !errors.Is(err, client.ErrNoSpec) {
		t.Fatalf("Run = %v, want ErrNoSpec", err)
	}
}

func TestCollectorAddReply(t *testing.T) {
	msg := func(typ, content string) *wire.Message {
		return &wire.Message{Header: wire.Header{MsgType: typ}, Content: json.RawMessage(content)}
	}
	reply := msg("execute_reply", `{"status":"error","ename":"KeyboardInterrupt","evalue":""}`)

	var quiet Collector // the kernel sent no error output
	quiet.AddReply(reply)
	if e := quiet.CodeResult().Error; e == nil || e.EName != "KeyboardInterrupt" {
		t.Fatalf("error from the reply alone: %+v", e)
	}

	var loud Collector // the error output, with its traceback, wins
	loud.Add(msg("error", `{"ename":"ValueError","evalue":"bad","traceback":["tb"]}`))
	loud.AddReply(reply)
	if e := loud.CodeResult().Error; e == nil || e.EName != "ValueError" || len(e.Traceback) != 1 {
		t.Fatalf("error output replaced: %+v", e)
	}

	var ok Collector
	ok.AddReply(msg("execute_reply", `{"status":"ok"}`))
	if e := ok.CodeResult().Error; e != nil {
		t.Fatalf("ok reply made an error: %+v", e)
	}
}
