package headless

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // image sizes for the model's summary
	_ "image/jpeg" // "
	_ "image/png"  // "
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// RunnerOptions configure NewRunner. The zero value works: python3 in the
// current directory.
type RunnerOptions struct {
	// Kernel is the backing kernelspec's name. Default "python3".
	Kernel string
	// Dir is the backing kernel's working directory. Default: ours.
	Dir string
	// Env holds extra KEY=VALUE entries for the backing kernel.
	Env []string
	// StartTimeout bounds a backing kernel start. Default 60s.
	StartTimeout time.Duration
	// InterruptGrace is how long Run waits for the kernel's reply after
	// interrupting it when ctx ends. Default 10s.
	InterruptGrace time.Duration
	// Logger receives the runner's and the kernel's logs. Default: a null
	// logger.
	Logger hclog.Logger
	// OnOutput, when set, receives every output the agent's code produces
	// (iopub stream, display_data, update_display_data, execute_result,
	// error, clear_output), with the content unchanged. It is called on
	// the kernel client's goroutine: it must be quick.
	OnOutput func(msgType string, content json.RawMessage)
}

func (o RunnerOptions) withDefaults() RunnerOptions {
	if o.Kernel == "" {
		o.Kernel = "python3"
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.InterruptGrace <= 0 {
		o.InterruptGrace = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return o
}

// Runner is an agent.CodeRunner over a backing kernel that starts on the
// first Run. If the kernel dies, that Run fails and the next one starts a
// fresh kernel. All methods are safe for concurrent use; cells run one at a
// time, in the order their Run calls got the kernel. Close shuts the kernel
// down; Run after Close fails with net.ErrClosed.
type Runner struct {
	opts RunnerOptions
	log  hclog.Logger

	ctx    context.Context // the runner's lifetime: bounds replies after an interrupt
	cancel context.CancelFunc
	sem    chan struct{} // holds the kernel: one start or cell at a time

	mu     sync.Mutex // guards k and closed; never held across I/O
	k      *client.Kernel
	closed bool
	once   sync.Once
}

var _ agent.CodeRunner = (*Runner)(nil)

// NewRunner returns a Runner. It starts nothing.
func NewRunner(opts RunnerOptions) *Runner {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{opts: opts, log: opts.Logger.Named("backing"), ctx: ctx, cancel: cancel, sem: make(chan struct{}, 1)}
}

// Kernel returns the backing kernelspec's name.
func (r *Runner) Kernel() string { return r.opts.Kernel }

// Started reports whether a backing kernel is running.
func (r *Runner) Started() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.k != nil
}

func (r *Runner) acquire(ctx context.Context) error {
	select {
	case r.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-r.ctx.Done():
		return fmt.Errorf("headless: runner: %w", net.ErrClosed)
	}
}

func (r *Runner) release() { <-r.sem }

// kernel returns the running kernel, starting one if needed. The caller
// holds sem.
func (r *Runner) kernel(ctx context.Context) (*client.Kernel, error) {
	r.mu.Lock()
	k, closed := r.k, r.closed
	r.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("headless: runner: %w", net.ErrClosed)
	}
	if k != nil {
		select {
		case <-k.Done():
			r.log.Warn("backing kernel died; starting a new one", "error", k.Err())
			r.drop(k)
		default:
			return k, nil
		}
	}
	spec, err := backing.Find(r.opts.Kernel)
	if err != nil {
		return nil, fmt.Errorf("headless: backing kernel: %w", err)
	}
	sctx, cancel := context.WithTimeout(ctx, r.opts.StartTimeout)
	defer cancel()
	stop := context.AfterFunc(r.ctx, cancel)
	defer stop()
	start := time.Now()
	k, err = client.Start(sctx, spec, client.Options{Logger: r.log, Dir: r.opts.Dir,
		Env: append(slices.Clip(r.opts.Env), backing.Mark(""))})
	if err != nil {
		return nil, fmt.Errorf("headless: start backing kernel %q: %w", r.opts.Kernel, err)
	}
	r.log.Debug("backing kernel ready", "kernel", r.opts.Kernel, "pid", k.Pid(), "elapsed", time.Since(start))
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.shutdown(k)
		return nil, fmt.Errorf("headless: runner: %w", net.ErrClosed)
	}
	r.k = k
	r.mu.Unlock()
	return k, nil
}

// drop forgets k (dead) and releases its resources.
func (r *Runner) drop(k *client.Kernel) {
	r.mu.Lock()
	if r.k == k {
		r.k = nil
	}
	r.mu.Unlock()
	r.shutdown(k)
}

func (r *Runner) shutdown(k *client.Kernel) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := k.Shutdown(ctx); err != nil {
		r.log.Debug("backing kernel shutdown", "error", err)
	}
}

// Run implements agent.CodeRunner: it executes code in the backing kernel
// and returns what it printed, displayed and raised. When ctx ends the
// kernel is interrupted and Run returns ctx's error once the kernel has
// replied (or InterruptGrace has passed).
func (r *Runner) Run(ctx context.Context, code string) (agent.CodeResult, error) {
	if err := r.acquire(ctx); err != nil {
		return agent.CodeResult{}, err
	}
	defer r.release()
	k, err := r.kernel(ctx)
	if err != nil {
		return agent.CodeResult{}, err
	}
	var col Collector
	h := client.Handlers{IOPub: func(m *wire.Message) {
		if r.opts.OnOutput != nil && isOutput(m.Header.MsgType) {
			r.opts.OnOutput(m.Header.MsgType, m.Content)
		}
		col.Add(m)
	}}
	// The reply is awaited under the runner's lifetime, not ctx: after an
	// interrupt the kernel still replies, and waiting for that reply keeps
	// its queue in step with ours.
	ectx, ecancel := context.WithCancel(r.ctx)
	defer ecancel()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owned by Run: stopped by done and waited for below
		defer wg.Done()
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		ictx, icancel := context.WithTimeout(r.ctx, 5*time.Second)
		if err := k.Interrupt(ictx); err != nil {
			r.log.Warn("interrupt agent code", "error", err)
		}
		icancel()
		t := time.NewTimer(r.opts.InterruptGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			ecancel()
		}
	}()
	rep, err := k.Client().Execute(ectx, code, client.ExecuteOptions{}, h)
	close(done)
	wg.Wait()
	if err != nil {
		res := col.CodeResult()
		if errors.Is(err, client.ErrDead) {
			r.drop(k)
			return res, fmt.Errorf("the backing kernel (%s) died while running the code; it restarts at the next execution", r.opts.Kernel)
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, fmt.Errorf("headless: execute: %w", err)
	}
	col.AddReply(rep)
	if ctx.Err() != nil {
		return col.CodeResult(), ctx.Err()
	}
	return col.CodeResult(), nil
}

// Close shuts the backing kernel down. It is idempotent; a second call
// returns net.ErrClosed.
func (r *Runner) Close() error {
	err := net.ErrClosed
	r.once.Do(func() {
		err = nil
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		r.cancel() // unblocks a start or a Run waiting past an interrupt
		r.sem <- struct{}{}
		r.mu.Lock()
		k := r.k
		r.k = nil
		r.mu.Unlock()
		if k != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if serr := k.Shutdown(ctx); serr != nil {
				err = fmt.Errorf("headless: shut down backing kernel: %w", serr)
			}
		}
	})
	return err
}

func isOutput(msgType string) bool {
	switch msgType {
	case "stream", "display_data", "update_display_data", "execute_result", "error", "clear_output":
		return true
	}
	return false
}

// Collector builds the model's view of a cell from its iopub messages:
// stdout, stderr, text results, image summaries, the error. The zero value
// is ready; it is not safe for concurrent use.
type Collector struct {
	stdout, stderr, result strings.Builder
	images                 []agent.Image
	err                    *agent.CodeError
}

// Add takes one iopub message of the cell.
func (c *Collector) Add(m *wire.Message) {
	switch m.Header.MsgType {
	case "stream":
		var s struct{ Name, Text string }
		if m.DecodeContent(&s) == nil {
			if s.Name == "stderr" {
				c.stderr.WriteString(s.Text)
			} else {
				c.stdout.WriteString(s.Text)
			}
		}
	case "execute_result", "display_data", "update_display_data":
		var d struct {
			Data map[string]json.RawMessage `json:"data"`
		}
		if m.DecodeContent(&d) != nil {
			return
		}
		imaged := false
		for mime, raw := range d.Data {
			if strings.HasPrefix(mime, "image/") {
				c.images = append(c.images, imageInfo(mime, raw))
				imaged = true
			}
		}
		if !imaged {
			var txt string
			if json.Unmarshal(d.Data["text/plain"], &txt) == nil && txt != "" {
				c.result.WriteString(txt)
				c.result.WriteString("\n")
			}
		}
	case "error":
		var e struct {
			Ename     string   `json:"ename"`
			Evalue    string   `json:"evalue"`
			Traceback []string `json:"traceback"`
		}
		if m.DecodeContent(&e) == nil {
			c.err = &agent.CodeError{EName: e.Ename, EValue: e.Evalue, Traceback: e.Traceback}
		}
	}
}

// AddReply takes the cell's execute_reply: an error status with no error
// output seen (a kernel may send none) still makes the result an error.
func (c *Collector) AddReply(rep *wire.Message) {
	var st struct {
		Status string `json:"status"`
		Ename  string `json:"ename"`
		Evalue string `json:"evalue"`
	}
	if rep.DecodeContent(&st) == nil && st.Status == "error" && c.err == nil {
		c.err = &agent.CodeError{EName: st.Ename, EValue: st.Evalue}
	}
}

// CodeResult returns what was collected.
func (c *Collector) CodeResult() agent.CodeResult {
	return agent.CodeResult{Stdout: c.stdout.String(), Stderr: c.stderr.String(), Result: c.result.String(),
		Images: c.images, Error: c.err}
}

// imageInfo describes an image output without keeping it.
func imageInfo(mime string, raw json.RawMessage) agent.Image {
	im := agent.Image{MIME: mime}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return im
	}
	if mime == "image/svg+xml" {
		im.Bytes = len(s)
		return im
	}
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return im
	}
	im.Bytes = len(data)
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
		im.Width, im.Height = cfg.Width, cfg.Height
	}
	return im
}
