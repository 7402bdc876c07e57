package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider/replay"
	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/notebooks"
	"github.com/agentkernel/agentkernel/notebooks/runner"
	"github.com/agentkernel/agentkernel/store"
)

const runSynopsis = `run NOTEBOOK [-o OUT] [--kernel SPEC] [--approve none|read-only|all] [--record FILE | --replay FILE] [--timeout S] [--allow-errors]

Runs NOTEBOOK's code cells in a fresh kernel, as nbconvert --execute does, and
writes the executed notebook to OUT (default: NOTEBOOK with .out.ipynb in
place of .ipynb; "-o -" writes to stdout). NOTEBOOK itself is changed only
when OUT names it. The kernel is the notebook's metadata.kernelspec (or
--kernel); with an agentkernel kernelspec, its mode decides whether a cell is
a prompt or code. Progress goes to stderr. On an error no file is written
and the exit status is 1, unless --allow-errors keeps going past failing
cells.`

// runRun is `agentkernel run`.
func runRun(args []string, stdout, stderr io.Writer) error {
	r, err := parseRun(args, stderr)
	if err != nil {
		return err
	}
	return r.run(stdout)
}

// notebookRun is one `agentkernel run`.
type notebookRun struct {
	input, out, kernel, approve, record, replay, model string
	timeout                                            float64
	allowErrors, quiet                                 bool
	gw                                                 *app.GatewayFlags
	store                                              string
	stderr                                             io.Writer
	recordTmp                                          string // the cassette being written
}

// parseRun reads run's flags and checks them.
func parseRun(args []string, stderr io.Writer) (*notebookRun, error) {
	r := &notebookRun{stderr: stderr}
	fs := newFlagSet("run", runSynopsis, stderr)
	fs.StringVar(&r.out, "o", "", "write the executed notebook to `FILE` (default NOTEBOOK.out.ipynb; - for stdout)")
	fs.StringVar(&r.kernel, "kernel", "", "kernelspec `NAME` to run (default: the notebook's metadata.kernelspec.name)")
	fs.StringVar(&r.approve, "approve", "", "how the agent's asks are answered: none, read-only or all (sets AGENTKERNEL_APPROVE)")
	fs.StringVar(&r.record, "record", "", "record the model's answers to the cassette `FILE` (written only when the run succeeds)")
	fs.StringVar(&r.replay, "replay", "", "answer with the model calls recorded in the cassette `FILE`, offline")
	fs.StringVar(&r.model, "model", "", "model for the agent, e.g. openai:gpt-4.1 (sets AGENTKERNEL_MODEL)")
	fs.Float64Var(&r.timeout, "timeout", 0, "per-cell timeout in `SECONDS` (0: none)")
	fs.BoolVar(&r.allowErrors, "allow-errors", false, "keep going after a failing cell and exit 0; its error stays in the output")
	fs.BoolVar(&r.quiet, "quiet", false, "no progress on stderr")
	r.gw = app.AddGatewayFlags(fs)
	storeArg := app.StoreFlag(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != 1 {
		fs.Usage()
		return nil, fmt.Errorf("run: want one NOTEBOOK, got %d arguments", len(pos))
	}
	r.input, r.store = pos[0], *storeArg
	if _, err := agent.ParseApprovalPolicy(r.approve); err != nil {
		return nil, fmt.Errorf("run: --approve: %w", err)
	}
	switch {
	case r.record != "" && r.replay != "":
		return nil, errors.New("run: --record and --replay exclude each other")
	case r.replay != "" && r.model != "":
		return nil, errors.New("run: --replay and --model exclude each other (--replay FILE is --model replay:FILE)")
	case r.timeout < 0:
		return nil, errors.New("run: --timeout must not be negative")
	}
	return r, nil
}

// run executes the notebook and writes the result.
func (r *notebookRun) run(stdout io.Writer) error {
	nb, err := notebooks.ReadFile(r.input)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	output := cmp.Or(r.out, defaultOutput(r.input))
	spec, err := r.spec(nb)
	if err != nil {
		return err
	}
	mode := agentMode(spec)
	env, err := r.kernelEnv(spec, mode)
	if r.recordTmp != "" {
		defer os.Remove(r.recordTmp) // renamed away on success
	}
	if err != nil {
		return err
	}
	log, err := newLogger(r.stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := filepath.Abs(filepath.Dir(r.input))
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	var prog *progress
	if !r.quiet {
		prog = newProgress(r.stderr, nb, spec.Name, mode)
		defer prog.stop()
	}
	opts := runner.RunOptions{Spec: spec, Timeout: time.Duration(r.timeout * float64(time.Second)),
		AllowErrors: r.allowErrors, Dir: dir, Logger: log, Client: client.Options{Env: env}, Path: filepath.Base(r.input)}
	if prog != nil {
		opts.Progress = prog.event
	}
	start := time.Now()
	result, err := runner.Run(ctx, nb, opts)
	if prog != nil {
		prog.stop()
	}
	if err != nil {
		return runError(err, ctx, r.stderr)
	}
	return r.write(stdout, result, output, start)
}

// spec is the kernelspec to run: --kernel, else the notebook's.
func (r *notebookRun) spec(nb *notebooks.Notebook) (*client.Spec, error) {
	name := r.kernel
	if name == "" {
		ks, ok := nb.Kernelspec()
		if !ok || ks.Name == "" {
			return nil, fmt.Errorf("run: %s has no metadata.kernelspec.name; choose a kernel with --kernel", r.input)
		}
		name = ks.Name
	}
	spec, err := client.FindSpec(name)
	if errors.Is(err, client.ErrNoSpec) {
		return nil, fmt.Errorf("run: unknown kernelspec %q: install it (agentkernel install --name %s …) or choose another with --kernel\n  (%v)", name, name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return spec, nil
}

// kernelEnv is what the kernel's environment carries of run's flags (an
// agentkernel kernel reads them there, as Jupyter Server's gateway
// settings), after checking a cassette to replay, the gateway settings
// and the configuration: a broken one stops the run here, with the
// message, rather than in every cell.
func (r *notebookRun) kernelEnv(spec *client.Spec, mode string) ([]string, error) {
	var env []string
	if r.approve != "" {
		env = append(env, "AGENTKERNEL_APPROVE="+r.approve)
	}
	if r.model != "" {
		env = append(env, "AGENTKERNEL_MODEL="+r.model)
	}
	if r.store != "" {
		env = append(env, store.EnvStore+"="+r.store)
	}
	if r.replay != "" {
		abs, err := filepath.Abs(r.replay)
		if err != nil {
			return nil, fmt.Errorf("run: --replay: %w", err)
		}
		// The whole cassette now: a missing or corrupt one is a clear error
		// here rather than a failing cell later.
		if _, err := replay.Open(abs); err != nil {
			return nil, fmt.Errorf("run: --replay: %w", err)
		}
		env = append(env, "AGENTKERNEL_MODEL=replay:"+abs)
	}
	if r.record != "" {
		abs, err := filepath.Abs(r.record)
		if err != nil {
			return nil, fmt.Errorf("run: --record: %w", err)
		}
		f, err := os.CreateTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".*.tmp")
		if err != nil {
			return nil, fmt.Errorf("run: --record: %w", err)
		}
		f.Close()
		r.recordTmp, r.record = f.Name(), abs
		env = append(env, "AGENTKERNEL_RECORD="+r.recordTmp)
	}
	env = append(env, r.gw.GatewayEnv()...)
	if _, err := r.gw.Gateway(); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if len(env) > 0 && mode == "" {
		fmt.Fprintf(r.stderr, "warning: kernelspec %q is not an agentkernel kernel: --approve, --model, --record and --replay have no effect\n", spec.Name)
	}
	// The event log calls the kernel's inputs "run".
	env = append(env, app.EnvEventSource+"="+string(eventlog.SourceRun))
	if mode != "" {
		if err := app.Load(app.Flags{}, nil).Err(); err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
	}
	return env, nil
}

// write keeps the cassette and writes the executed notebook.
func (r *notebookRun) write(stdout io.Writer, result *notebooks.Notebook, output string, start time.Time) error {
	if r.recordTmp != "" {
		if fi, serr := os.Stat(r.recordTmp); serr != nil || fi.Size() == 0 {
			fmt.Fprintf(r.stderr, "warning: no model call was made: cassette %s not written\n", r.record)
		} else if err := os.Rename(r.recordTmp, r.record); err != nil {
			return fmt.Errorf("run: --record: %w", err)
		}
	}
	if output == "-" {
		if err := notebooks.Write(stdout, result); err != nil {
			return fmt.Errorf("run: %w", err)
		}
	} else if err := notebooks.WriteFile(output, result); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if !r.quiet {
		where := output
		if output == "-" {
			where = "stdout"
		}
		fmt.Fprintf(r.stderr, "done in %s: wrote %s\n", roundDuration(time.Since(start)), where)
	}
	return nil
}

// runError explains why a run failed, with the failing cell's traceback.
func runError(err error, ctx context.Context, stderr io.Writer) error {
	if ctx.Err() != nil {
		return errors.New("run: interrupted; nothing written")
	}
	var ce *runner.CellError
	if errors.As(err, &ce) {
		where := fmt.Sprintf("cell %d", ce.Index)
		if ce.ID != "" {
			where += fmt.Sprintf(" (id %s)", ce.ID)
		}
		if ce.Timeout > 0 {
			return fmt.Errorf("run: %s timed out after %v; nothing written", where, ce.Timeout)
		}
		if tb := stripANSI(strings.Join(ce.Traceback, "\n")); tb != "" && tb != ce.Ename+": "+ce.Evalue {
			fmt.Fprintln(stderr, tb)
		}
		hint := "use --allow-errors to keep going and write the outputs"
		if strings.Contains(ce.Evalue, "diverged from the recording") || strings.Contains(ce.Evalue, "cassette exhausted") {
			hint = "the notebook no longer matches the cassette: record it again with --record FILE and a real model"
		}
		return fmt.Errorf("run: %s failed: %s: %s\nnothing written (%s)", where, ce.Ename, ce.Evalue, hint)
	}
	return fmt.Errorf("run: %w; nothing written", err)
}

// defaultOutput is NOTEBOOK with .out.ipynb in place of .ipynb.
func defaultOutput(input string) string {
	base := strings.TrimSuffix(input, filepath.Ext(input))
	return base + ".out.ipynb"
}

// agentMode returns the agentkernel mode of spec ("prompt" or "code"), or
// "" for a kernel that is not agentkernel.
func agentMode(spec *client.Spec) string {
	m, ok := spec.Metadata["agentkernel"].(map[string]any)
	if !ok {
		return ""
	}
	mode, _ := m["mode"].(string)
	if mode == "" {
		mode = "code"
	}
	return mode
}

// parseArgs parses fs's flags anywhere among args ("run NB -o OUT"; the
// flag package alone stops at the first argument that is not a flag) and
// returns the other arguments. "--" ends the flags.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// progress prints "[n/N] cell …" lines to stderr as cells start and end,
// and a line every tick while a cell runs long. Its ticker goroutine is
// stopped by stop.
type progress struct {
	w     io.Writer
	nb    *notebooks.Notebook
	start time.Time

	mu      sync.Mutex
	cur     runner.ProgressEvent
	running bool
	began   time.Time

	done     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

const progressTick = 15 * time.Second

func newProgress(w io.Writer, nb *notebooks.Notebook, kernel, mode string) *progress {
	p := &progress{w: w, nb: nb, start: time.Now(), done: make(chan struct{})}
	what := "kernel " + kernel
	if mode != "" {
		what += " (agentkernel, " + mode + " mode)"
	}
	fmt.Fprintf(w, "running %s\n", what)
	p.wg.Add(1)
	go p.tick()
	return p
}

func (p *progress) tick() {
	defer p.wg.Done()
	t := time.NewTicker(progressTick)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.mu.Lock()
			if p.running {
				fmt.Fprintf(p.w, "[%d/%d] still running (%s)\n", p.cur.N, p.cur.Total, roundDuration(time.Since(p.began)))
			}
			p.mu.Unlock()
		}
	}
}

func (p *progress) event(ev runner.ProgressEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !ev.Finished {
		p.cur, p.running, p.began = ev, true, time.Now()
		src := ""
		if ev.Index >= 0 && ev.Index < len(p.nb.Cells) {
			src = messages.FirstLine(p.nb.Cells[ev.Index].Source, 60)
		}
		fmt.Fprintf(p.w, "[%d/%d] cell %d: %s\n", ev.N, ev.Total, ev.Index, src)
		return
	}
	p.running = false
	fmt.Fprintf(p.w, "[%d/%d] %s in %s (total %s)\n", ev.N, ev.Total, ev.Status,
		roundDuration(ev.Elapsed), roundDuration(time.Since(p.start)))
}

func (p *progress) stop() {
	p.stopOnce.Do(func() {
		close(p.done)
		p.wg.Wait()
	})
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// stripANSI removes terminal colour codes (tracebacks carry them).
func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
