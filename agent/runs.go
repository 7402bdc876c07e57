package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Code that runs longer than its call's timeout: the call returns what it
// printed so far and "still running", and the code runs on in the kernel
// as a run the model can wait on (wait_code) or stop (interrupt_code). A
// turn does not end while a run of its own goes on: its cell shows the
// output until the code ends, and the model is told how it ended with the
// next message. An interrupt of the turn interrupts its runs.

const (
	// defaultCodeTimeout is how long execute_code waits for its code
	// before it returns "still running".
	defaultCodeTimeout = 120 * time.Second
	// maxCodeTimeout bounds a timeout the model asks for.
	maxCodeTimeout = time.Hour
	// interruptWait bounds how long interrupt_code waits for the code to
	// stop.
	interruptWait = 15 * time.Second
)

// ErrStillRunning is the error of a call whose run goes on: another run
// may not start while one does (the kernel runs one cell at a time).
var ErrStillRunning = errors.New("the kernel is still running the agent's code")

// codeRun is code the agent started in the kernel.
type codeRun struct {
	id     string
	cancel context.CancelFunc // interrupts the code
	done   chan struct{}      // closed when the code has ended

	mu    sync.Mutex
	res   CodeResult
	err   error
	sofar strings.Builder // what it printed so far (streams)
	told  int             // how much of sofar the model has been given
}

// runs are the runs of a toolbox: at most one goes on at a time.
type runs struct {
	mu   sync.Mutex
	n    int
	live *codeRun
	wg   sync.WaitGroup
}

// start runs f (the code) in a run of its own: f's outputs go to out and
// into what it printed so far. It fails with ErrStillRunning while
// another run goes on.
func (rs *runs) start(f func(ctx context.Context, out func(CodeOutput)) (CodeResult, error), out func(CodeOutput)) (*codeRun, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.live != nil {
		return nil, fmt.Errorf("%w (run %s): wait for it with wait_code, or stop it with interrupt_code", ErrStillRunning, rs.live.id)
	}
	rs.n++
	ctx, cancel := context.WithCancel(context.Background())
	r := &codeRun{id: "r" + strconv.Itoa(rs.n), cancel: cancel, done: make(chan struct{})}
	rs.live = r
	rs.wg.Add(1)
	go func() { // owned by rs: wait and the task's close wait for it
		defer rs.wg.Done()
		res, err := f(ctx, func(o CodeOutput) {
			r.printed(o)
			if out != nil {
				out(o)
			}
		})
		cancel()
		r.mu.Lock()
		r.res, r.err = res, err
		r.mu.Unlock()
		rs.mu.Lock()
		if rs.live == r {
			rs.live = nil
		}
		rs.mu.Unlock()
		close(r.done)
	}()
	return r, nil
}

// get returns run id, live or the last one (id "" is the live one).
func (rs *runs) get(id string) *codeRun {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.live != nil && (id == "" || rs.live.id == id) {
		return rs.live
	}
	return nil
}

// current is the run that goes on, if any.
func (rs *runs) current() *codeRun { return rs.get("") }

// wait waits for the live run to end, interrupting it when ctx ends.
func (rs *runs) wait(ctx context.Context) *codeRun {
	r := rs.current()
	if r == nil {
		return nil
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		r.cancel()
		<-r.done
	}
	return r
}

// close interrupts the live run and waits for its goroutine.
func (rs *runs) close() {
	if r := rs.current(); r != nil {
		r.cancel()
	}
	rs.wg.Wait()
}

// printed adds an output's stream text to what the run printed so far.
func (r *codeRun) printed(o CodeOutput) {
	if o.Type != "stream" {
		return
	}
	var c struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(o.Content, &c) != nil {
		return
	}
	r.mu.Lock()
	if r.sofar.Len() < 1<<20 { // what the model is given is capped anyway
		r.sofar.WriteString(c.Text)
	}
	r.mu.Unlock()
}

// news is what the run printed since the model was last told.
func (r *codeRun) news() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sofar.String()[r.told:]
	r.told = r.sofar.Len()
	return s
}

// await waits for run r up to d (ctx ending interrupts it): the result
// when it ended, else ok false.
func (r *codeRun) await(ctx context.Context, d time.Duration) (res CodeResult, err error, ok bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		return CodeResult{}, nil, false
	case <-ctx.Done():
		r.cancel() // the turn was interrupted: so is its code
		<-r.done
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.res, r.err, true
}

// stillRunning is what the model is told of run r that goes on after d.
func (tb *Toolbox) stillRunning(r *codeRun, d time.Duration) Result {
	var b strings.Builder
	fmt.Fprintf(&b, "Still running after %s (run %s).", d.Round(time.Second), r.id)
	if out := r.news(); out != "" {
		b.WriteString(" Output so far:\n" + out)
		if !strings.HasSuffix(out, "\n") {
			b.WriteString("\n")
		}
	} else {
		b.WriteString(" No output yet.\n")
	}
	b.WriteString("Wait for it with wait_code, or stop it with interrupt_code. Nothing else can run in the kernel meanwhile.")
	return Result{Text: tb.capText(b.String())}
}

// timeoutArg is the timeout a call asks for (seconds), or the default.
func timeoutArg(in map[string]any) time.Duration {
	if n, ok := intArg(in, "timeout"); ok {
		return min(time.Duration(n)*time.Second, maxCodeTimeout)
	}
	return defaultCodeTimeout
}

// runCode runs f as a run of the toolbox and waits for it up to the
// call's timeout: the code's result, or "still running".
func (tb *Toolbox) runCode(ctx context.Context, in map[string]any, out func(CodeOutput),
	f func(ctx context.Context, out func(CodeOutput)) (CodeResult, error)) (Result, error) {
	r, err := tb.runs.start(f, out)
	if err != nil {
		return Result{}, err
	}
	d := timeoutArg(in)
	res, err, ok := r.await(ctx, d)
	if !ok {
		return tb.stillRunning(r, d), nil
	}
	if err != nil {
		return Result{}, err
	}
	return tb.codeResult(res), nil
}

// The run tools.
const (
	ToolWaitCode      = "wait_code"
	ToolInterruptCode = "interrupt_code"
)

// runTools wait on and stop the code the agent left running: interact
// class (they start nothing, and stop only the agent's own code).
func (tb *Toolbox) runTools() []*Tool {
	run := param{name: "run", typ: tString, desc: "The run's id (\"r1\"). Default: the one still running."}
	return []*Tool{
		{
			name: ToolWaitCode, class: ClassInteract,
			description: "Wait for code that is still running (after execute_code or notebook_run_cell said so): " +
				"returns what it printed since, and its result once it ends.",
			params: []param{run, {name: "timeout", typ: tInteger, min: 1,
				desc: "How long to wait, in seconds. Default 120, at most 3600."}},
			run: tb.waitCode,
		},
		{
			name: ToolInterruptCode, class: ClassInteract,
			description: "Stop code that is still running (an interrupt, as the user's stop button): returns what it printed and how it ended. The kernel and its variables stay.",
			params:      []param{run},
			run:         tb.interruptCode,
		},
	}
}

func (tb *Toolbox) waitCode(ctx context.Context, in map[string]any) (Result, error) {
	id, _ := in["run"].(string)
	r := tb.runs.get(id)
	if r == nil {
		return Result{Text: "No code of the agent is running" + forRun(id) + ": it ended (its result was given) or never started."}, nil
	}
	d := timeoutArg(in)
	res, err, ok := r.await(ctx, d)
	if !ok {
		return tb.stillRunning(r, d), nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("wait_code: %w", err)
	}
	return tb.ended(r, res), nil
}

func (tb *Toolbox) interruptCode(ctx context.Context, in map[string]any) (Result, error) {
	id, _ := in["run"].(string)
	r := tb.runs.get(id)
	if r == nil {
		return Result{Text: "No code of the agent is running" + forRun(id) + ": nothing to stop."}, nil
	}
	r.cancel()
	res, err, ok := r.await(ctx, interruptWait)
	if !ok {
		return Result{}, fmt.Errorf("interrupt_code: run %s did not stop within %s", r.id, interruptWait)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return Result{}, fmt.Errorf("interrupt_code: %w", err)
	}
	out := tb.ended(r, res)
	out.Text = "Interrupted run " + r.id + ".\n" + out.Text
	return out, nil
}

// ended is what the model is told of run r that ended with res: what it
// printed that the model was not given, and the rest of its result.
func (tb *Toolbox) ended(r *codeRun, res CodeResult) Result {
	out := tb.codeResult(CodeResult{Stdout: r.news(), Result: res.Result, Images: res.Images, Error: res.Error})
	if out.Text == "" {
		out.Text = "Run " + r.id + " ended."
	}
	return out
}

func forRun(id string) string {
	if id == "" {
		return ""
	}
	return " as run " + id
}
