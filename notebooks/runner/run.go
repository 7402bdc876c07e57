package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/notebooks"
)

// ErrTimeout is wrapped by the *CellError of a cell that ran longer than
// RunOptions.Timeout. Test with errors.Is.
var ErrTimeout = errors.New("notebooks: cell timed out")

// CellError is the error Run returns for a cell that failed: the kernel
// replied with status error (Ename, Evalue and Traceback come from the
// reply), or the cell timed out (Timeout is set and the error wraps
// ErrTimeout). Get it with errors.As.
type CellError struct {
	Index     int // the cell's index in the notebook
	ID        string
	Ename     string
	Evalue    string
	Traceback []string
	Timeout   time.Duration
}

func (e *CellError) Error() string {
	if e.Timeout > 0 {
		return fmt.Sprintf("notebooks: %s: timed out after %v", notebooks.CellLabel(e.Index, e.ID), e.Timeout)
	}
	return fmt.Sprintf("notebooks: %s: %s: %s", notebooks.CellLabel(e.Index, e.ID), e.Ename, e.Evalue)
}

// Unwrap returns ErrTimeout for a timeout, else nil.
func (e *CellError) Unwrap() error {
	if e.Timeout > 0 {
		return ErrTimeout
	}
	return nil
}

// CellStatus is how a cell's execution ended.
type CellStatus string

// Cell statuses reported in ProgressEvent.
const (
	StatusOK      CellStatus = "ok"
	StatusError   CellStatus = "error"   // the kernel replied with status error
	StatusAborted CellStatus = "aborted" // the kernel did not run the cell
	StatusTimeout CellStatus = "timeout" // Timeout passed; the kernel was interrupted
	StatusFailed  CellStatus = "failed"  // no reply: the kernel died or ctx ended
)

// ProgressEvent reports a code cell starting or finishing.
type ProgressEvent struct {
	// Finished is false when the cell starts, true when it has finished.
	Finished bool
	// Index and ID identify the cell in the notebook.
	Index int
	ID    string
	// N is the cell's 1-based position among the Total cells to execute.
	N, Total int
	// Elapsed is the time since the cell started (0 at the start).
	Elapsed time.Duration
	// Status and ExecutionCount are set when Finished.
	Status         CellStatus
	ExecutionCount int
}

// RunOptions configure Run. The zero value works: it runs the notebook's
// kernel without a timeout and stops at the first error.
type RunOptions struct {
	// Spec is the kernel to run. Default: the kernelspec called Kernel.
	Spec *client.Spec
	// Kernel is a kernelspec name, found with client.FindSpec. Default:
	// the notebook's metadata.kernelspec.name, else "python3" (as nbclient
	// defaults to the kernel manager's default kernel).
	Kernel string
	// Timeout bounds each cell's execution; 0 means none. A cell that runs
	// longer is interrupted, given InterruptGrace to finish (its outputs,
	// usually a KeyboardInterrupt, are kept) and Run stops with a
	// *CellError wrapping ErrTimeout, whatever AllowErrors says.
	Timeout time.Duration
	// InterruptGrace is how long to wait for a cell to finish after
	// interrupting it. Default 10s.
	InterruptGrace time.Duration
	// AllowErrors keeps going after a cell whose execution fails (its error
	// output stays in the notebook). Without it Run stops at the first
	// such cell, except cells tagged "raises-exception", as nbclient does.
	AllowErrors bool
	// Dir is the kernel's working directory. Default: ours.
	Dir string
	// Logger receives the runner's and the kernel's logs. Default:
	// hclog.Default().
	Logger hclog.Logger
	// Progress, when set, is called on Run's goroutine when each code cell
	// starts and finishes.
	Progress func(ProgressEvent)
	// Client holds further options for client.Start (StartTimeout,
	// ConnectionDir, Env, …); Logger and Dir above take precedence.
	Client client.Options
	// Path names the notebook to an agentkernel kernel, which Run opens
	// the notebook comm to (docs/notebook-protocol.md): the agent's
	// notebook tools read and change the notebook Run returns.
	Path string
}

func (o RunOptions) withDefaults() RunOptions {
	if o.Logger == nil {
		o.Logger = hclog.Default()
	}
	if o.InterruptGrace <= 0 {
		o.InterruptGrace = 10 * time.Second
	}
	if o.Timeout < 0 {
		o.Timeout = 0
	}
	return o
}

// skipTag and raisesTag are nbclient's cell tags.
const (
	skipTag   = "skip-execution"
	raisesTag = "raises-exception"
)

// Run executes nb's code cells in order in a fresh kernel and returns the
// executed copy; nb itself is not changed. It follows nbclient: markdown,
// raw, empty (whitespace-only) and "skip-execution"-tagged code cells are
// left as they are; an executed cell's outputs are replaced by what the
// kernel sends (stream, display_data, execute_result, error;
// update_display_data updates the earlier outputs with its display_id in
// any cell; clear_output clears, or with wait=true clears at the next
// output; consecutive output on one stream is merged into one output, as
// nbconvert's coalesce_streams does), and its execution_count is the
// number of cells executed so far. stdin is not allowed, so input() raises
// in the kernel. metadata.language_info is taken from the kernel's
// kernel_info reply, metadata.kernelspec names the kernel used, and widget
// state seen in comm messages goes to metadata.widgets.
//
// On failure Run returns the partly executed copy together with the error
// (nil only when the kernel could not be started): a *CellError for a cell
// that failed or timed out, or an error naming the cell when the kernel
// died. Run shuts the kernel down before it returns.
func Run(ctx context.Context, nb *notebooks.Notebook, opts RunOptions) (*notebooks.Notebook, error) {
	opts = opts.withDefaults()
	log := opts.Logger.Named("notebooks")
	out := nb.Clone()
	if out.Metadata == nil {
		out.Metadata = notebooks.Metadata{}
	}
	spec := opts.Spec
	if spec == nil {
		name := opts.Kernel
		if name == "" {
			if ks, ok := nb.Kernelspec(); ok && ks.Name != "" {
				name = ks.Name
			} else {
				name = "python3"
			}
		}
		var err error
		if spec, err = client.FindSpec(name); err != nil {
			return nil, fmt.Errorf("notebooks: run: %w", err)
		}
	}
	copts := opts.Client
	copts.Logger = opts.Logger
	if opts.Dir != "" {
		copts.Dir = opts.Dir
	}
	var comm atomic.Pointer[runner] // set once the runner exists
	next := copts.OnIOPub
	copts.OnIOPub = func(m *wire.Message) {
		if r := comm.Load(); r != nil {
			r.onComm(m)
		}
		if next != nil {
			next(m)
		}
	}
	log.Debug("starting kernel", "kernel", spec.Name)
	k, err := client.Start(ctx, spec, copts)
	if err != nil {
		return nil, fmt.Errorf("notebooks: run: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := k.Shutdown(sctx); err != nil {
			log.Warn("kernel shutdown", "error", err)
		}
	}()
	r := &runner{k: k, nb: out, opts: opts, log: log, rec: newRecorder(out, log)}
	if err := r.setMetadata(ctx, spec); err != nil {
		return out, err
	}
	if _, ours := spec.Metadata["agentkernel"]; ours {
		if err := r.openComm(ctx, opts.Path); err != nil {
			return out, fmt.Errorf("notebooks: run: open the notebook comm: %w", err)
		}
		comm.Store(r)
	}
	err = r.run(ctx)
	if werr := r.rec.setWidgetsMetadata(); werr != nil && err == nil {
		err = werr
	}
	return out, err
}

// runner is the state of one Run.
type runner struct {
	k        *client.Kernel
	opts     RunOptions
	log      hclog.Logger
	executed int
	commID   string // the notebook comm's, when the kernel is agentkernel

	// mu guards nb and what rec writes into it: cells run on Run's
	// goroutine, outputs come on the client's, and the agent's notebook
	// tools change cells through the notebook comm meanwhile.
	mu  sync.Mutex
	nb  *notebooks.Notebook
	rec *recorder
}

// record applies an iopub message of the running cell.
func (r *runner) record(m *wire.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.handle(m)
}

// setMetadata writes language_info from kernel_info and the kernelspec.
func (r *runner) setMetadata(ctx context.Context, spec *client.Spec) error {
	reply, err := r.k.Client().KernelInfo(ctx)
	if err != nil {
		return fmt.Errorf("notebooks: run: kernel_info: %w", err)
	}
	var info struct {
		LanguageInfo json.RawMessage `json:"language_info"`
	}
	if err := reply.DecodeContent(&info); err != nil || len(info.LanguageInfo) == 0 || string(bytes.TrimSpace(info.LanguageInfo)) == "null" {
		return fmt.Errorf("notebooks: run: kernel_info reply has no language_info")
	}
	r.nb.Metadata["language_info"] = info.LanguageInfo
	ks := notebooks.Metadata{}
	if raw, ok := r.nb.Metadata["kernelspec"]; ok {
		_ = json.Unmarshal(raw, &ks) // a broken kernelspec is replaced
		if ks == nil {
			ks = notebooks.Metadata{}
		}
	}
	_ = ks.Set("name", spec.Name) // strings always encode
	_ = ks.Set("display_name", spec.DisplayName)
	if spec.Language != "" {
		_ = ks.Set("language", spec.Language)
	}
	return r.nb.Metadata.Set("kernelspec", ks)
}

func hasTag(c *notebooks.Cell, tag string) bool {
	var tags []string
	if ok, err := c.Metadata.Get("tags", &tags); !ok || err != nil {
		return false
	}
	return slices.Contains(tags, tag)
}

// runnable reports whether Run executes c.
func runnable(c *notebooks.Cell) bool {
	return c.CellType == notebooks.Code && strings.TrimSpace(c.Source) != "" && !hasTag(c, skipTag)
}

// run executes the notebook's code cells as they were when it began, in
// their order then. Cells the agent inserts meanwhile (through the
// notebook comm) are kept, not run: the agent runs what it wants run.
func (r *runner) run(ctx context.Context) error {
	r.mu.Lock()
	var plan []*notebooks.Cell
	for _, c := range r.nb.Cells {
		if runnable(c) {
			plan = append(plan, c)
		}
	}
	r.mu.Unlock()
	for n, c := range plan {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("notebooks: run: %w", err)
		}
		r.mu.Lock()
		i := slices.Index(r.nb.Cells, c)
		r.mu.Unlock()
		if i < 0 {
			continue // the agent deleted it
		}
		ev := ProgressEvent{Index: i, ID: c.ID, N: n + 1, Total: len(plan)}
		r.progress(ev)
		start := time.Now()
		status, err := r.cell(ctx, i, c)
		ev.Finished, ev.Elapsed, ev.Status = true, time.Since(start), status
		r.mu.Lock()
		if c.ExecutionCount != nil {
			ev.ExecutionCount = *c.ExecutionCount
		}
		r.mu.Unlock()
		r.progress(ev)
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) progress(ev ProgressEvent) {
	if r.opts.Progress != nil {
		r.opts.Progress(ev)
	}
}

type execResult struct {
	reply *wire.Message
	err   error
}

// cell executes cell c (at index i when it began) and records its outputs.
func (r *runner) cell(ctx context.Context, i int, c *notebooks.Cell) (CellStatus, error) {
	label := notebooks.CellLabel(i, c.ID)
	r.mu.Lock()
	allowErr := r.opts.AllowErrors || hasTag(c, raisesTag)
	source := c.Source
	r.rec.begin(c)
	r.mu.Unlock()
	r.log.Debug("executing", "cell", i, "id", c.ID)

	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan execResult, 1)
	go func() { // owned here: every path below receives from done
		reply, err := r.k.Client().Execute(ectx, source,
			client.ExecuteOptions{StopOnError: !allowErr},
			client.Handlers{IOPub: r.record})
		done <- execResult{reply, err}
	}()
	var timeout <-chan time.Time
	if r.opts.Timeout > 0 {
		t := time.NewTimer(r.opts.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var res execResult
	select {
	case res = <-done:
	case <-timeout:
		r.log.Warn("cell timed out; interrupting the kernel", "cell", i, "id", c.ID, "timeout", r.opts.Timeout)
		if err := r.k.Interrupt(ctx); err != nil {
			r.log.Warn("interrupt failed", "error", err)
		}
		grace := time.NewTimer(r.opts.InterruptGrace)
		select {
		case <-done:
		case <-grace.C:
			cancel()
			<-done
		}
		grace.Stop()
		return StatusTimeout, &CellError{Index: i, ID: c.ID, Ename: "CellTimeoutError",
			Evalue: fmt.Sprintf("cell execution timed out after %v", r.opts.Timeout), Timeout: r.opts.Timeout}
	}
	if res.err != nil {
		if ctx.Err() != nil {
			// Stop the cell so that the kernel shuts down promptly.
			ictx, icancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := r.k.Interrupt(ictx); err != nil {
				r.log.Debug("interrupt after cancel failed", "error", err)
			}
			icancel()
		}
		return StatusFailed, fmt.Errorf("notebooks: run %s: %w", label, res.err)
	}
	r.executed++
	r.mu.Lock()
	c.ExecutionCount = new(r.executed)
	r.mu.Unlock()
	var reply struct {
		Status    string   `json:"status"`
		Ename     string   `json:"ename"`
		Evalue    string   `json:"evalue"`
		Traceback []string `json:"traceback"`
	}
	if err := res.reply.DecodeContent(&reply); err != nil {
		return StatusFailed, fmt.Errorf("notebooks: run %s: execute_reply: %w", label, err)
	}
	switch reply.Status {
	case "error":
		if allowErr {
			return StatusError, nil
		}
		return StatusError, &CellError{Index: i, ID: c.ID, Ename: reply.Ename, Evalue: reply.Evalue, Traceback: reply.Traceback}
	case "aborted", "abort":
		return StatusAborted, nil
	}
	return StatusOK, nil
}
