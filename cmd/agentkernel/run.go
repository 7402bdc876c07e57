package main

import (
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
	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/notebooks"
	"github.com/agentkernel/agentkernel/store"
	"github.com/hashicorp/go-hclog"
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
	fs := newFlagSet("run", runSynopsis, stderr)
	out := fs.String("o", "", "write the executed notebook to `FILE` (default NOTEBOOK.out.ipynb; - for stdout)")
	kernelName := fs.String("kernel", "", "kernelspec `NAME` to run (default: the notebook's metadata.kernelspec.name)")
	approve := fs.String("approve", "", "how the agent's asks are answered: none, read-only or all (sets AGENTKERNEL_APPROVE)")
	record := fs.String("record", "", "record the model's answers to the cassette `FILE` (written only when the run succeeds)")
	replayFile := fs.String("replay", "", "answer with the model calls recorded in the cassette `FILE`, offline")
	model := fs.String("model", "", "model for the agent, e.g. openai:gpt-4.1 (sets AGENTKERNEL_MODEL)")
	timeout := fs.Float64("timeout", 0, "per-cell timeout in `SECONDS` (0: none)")
	allowErrors := fs.Bool("allow-errors", false, "keep going after a failing cell and exit 0; its error stays in the output")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	gwFlags := addGatewayFlags(fs)
	storeArg := storeFlag(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return fmt.Errorf("run: want one NOTEBOOK, got %d arguments", len(pos))
	}
	input := pos[0]
	if _, err := agent.ParseApprovalPolicy(*approve); err != nil {
		return fmt.Errorf("run: --approve: %w", err)
	}
	if *record != "" && *replayFile != "" {
		return errors.New("run: --record and --replay exclude each other")
	}
	if *replayFile != "" && *model != "" {
		return errors.New("run: --replay and --model exclude each other (--replay FILE is --model replay:FILE)")
	}
	if *timeout < 0 {
		return errors.New("run: --timeout must not be negative")
	}

	nb, err := notebooks.ReadFile(input)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	output := *out
	if output == "" {
		output = defaultOutput(input)
	}
	name := *kernelName
	if name == "" {
		if ks, ok := nb.Kernelspec(); ok && ks.Name != "" {
			name = ks.Name
		} else {
			return fmt.Errorf("run: %s has no metadata.kernelspec.name; choose a kernel with --kernel", input)
		}
	}
	spec, err := client.FindSpec(name)
	if err != nil {
		if errors.Is(err, client.ErrNoSpec) {
			return fmt.Errorf("run: unknown kernelspec %q: install it (agentkernel install --name %s …) or choose another with --kernel\n  (%v)", name, name, err)
		}
		return fmt.Errorf("run: %w", err)
	}
	mode := agentMode(spec)
	var env []string
	if *approve != "" {
		env = append(env, "AGENTKERNEL_APPROVE="+*approve)
	}
	if *model != "" {
		env = append(env, "AGENTKERNEL_MODEL="+*model)
	}
	if *storeArg != "" {
		env = append(env, store.EnvStore+"="+*storeArg)
	}
	if *replayFile != "" {
		abs, err := filepath.Abs(*replayFile)
		if err != nil {
			return fmt.Errorf("run: --replay: %w", err)
		}
		// Check the whole cassette now: a missing or corrupt one is a
		// clear error here rather than a failing cell later.
		if _, err := replay.Open(abs); err != nil {
			return fmt.Errorf("run: --replay: %w", err)
		}
		env = append(env, "AGENTKERNEL_MODEL=replay:"+abs)
	}
	var recordTmp string
	if *record != "" {
		abs, err := filepath.Abs(*record)
		if err != nil {
			return fmt.Errorf("run: --record: %w", err)
		}
		f, err := os.CreateTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".*.tmp")
		if err != nil {
			return fmt.Errorf("run: --record: %w", err)
		}
		f.Close()
		recordTmp = f.Name()
		defer os.Remove(recordTmp) // renamed away on success
		env = append(env, "AGENTKERNEL_RECORD="+recordTmp)
		*record = abs
	}
	// The gateway settings reach an agentkernel kernel through its
	// environment, as Jupyter Server's own do.
	env = append(env, gwFlags.given()...)
	if _, err := gwFlags.resolve(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if len(env) > 0 && mode == "" {
		fmt.Fprintf(stderr, "warning: kernelspec %q is not an agentkernel kernel: --approve, --model, --record and --replay have no effect\n", spec.Name)
	}
	// The event log calls the kernel's inputs "run".
	env = append(env, envEventSource+"="+string(eventlog.SourceRun))
	log, err := newLogger(stderr)
	if err != nil {
		return err
	}
	// The kernels read the same configuration: a broken one stops the run
	// here, with the message, rather than in every cell.
	if mode != "" {
		cfg, err := agentConfig("", "", hclog.NewNullLogger())
		if err == nil {
			cfg.Host.EventLog.Close()
			err = configErr(cfg)
		}
		if err != nil {
			return fmt.Errorf("run: %w", err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := filepath.Abs(filepath.Dir(input))
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	var prog *progress
	if !*quiet {
		prog = newProgress(stderr, nb, spec.Name, mode)
		defer prog.stop()
	}
	opts := notebooks.RunOptions{
		Spec:        spec,
		Timeout:     time.Duration(*timeout * float64(time.Second)),
		AllowErrors: *allowErrors,
		Dir:         dir,
		Logger:      log,
		Client:      client.Options{Env: env},
	}
	if prog != nil {
		opts.Progress = prog.event
	}
	start := time.Now()
	result, err := notebooks.Run(ctx, nb, opts)
	if prog != nil {
		prog.stop()
	}
	if err != nil {
		return runError(err, ctx, stderr)
	}
	if recordTmp != "" {
		if fi, serr := os.Stat(recordTmp); serr != nil || fi.Size() == 0 {
			fmt.Fprintf(stderr, "warning: no model call was made: cassette %s not written\n", *record)
		} else if err := os.Rename(recordTmp, *record); err != nil {
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
	if !*quiet {
		where := output
		if output == "-" {
			where = "stdout"
		}
		fmt.Fprintf(stderr, "done in %s: wrote %s\n", roundDuration(time.Since(start)), where)
	}
	return nil
}

// runError explains why a run failed, with the failing cell's traceback.
func runError(err error, ctx context.Context, stderr io.Writer) error {
	if ctx.Err() != nil {
		return errors.New("run: interrupted; nothing written")
	}
	var ce *notebooks.CellError
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
	cur     notebooks.ProgressEvent
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

func (p *progress) event(ev notebooks.ProgressEvent) {
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
