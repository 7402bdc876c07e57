package hooks

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/internal/procguard"
	"github.com/agentkernel/agentkernel/internal/redact"
)

// SettingsPath is where a workspace keeps its hooks, relative to its root.
const SettingsPath = ".agentkernel/settings.json"

// DefaultTimeout bounds a hook that names no timeout, as in Claude Code.
const DefaultTimeout = 60 * time.Second

// maxOutput caps what is kept of a hook's stdout and of its stderr; the
// rest is read and dropped.
const maxOutput = 64 << 10

// Options configures a Runner. The zero value works: no hooks but those of
// the current directory's settings file.
type Options struct {
	// Config holds the user's hooks (the agentkernel config file). They
	// run beside the workspace's, never instead of them.
	Config Config
	// Workspace is the project directory: its .agentkernel/settings.json
	// adds hooks (read again whenever it changes), and hooks run in it with
	// AGENTKERNEL_PROJECT_DIR (and CLAUDE_PROJECT_DIR, for hooks written
	// for Claude Code) set to it. Default: the current directory.
	Workspace string
	// Timeout bounds a hook that names none. Default DefaultTimeout.
	Timeout time.Duration
	// Logger receives the problems (warn) and each run (debug). Default:
	// a null logger.
	Logger hclog.Logger
}

// Runner runs the hooks of an event. It is safe for concurrent use; a nil
// *Runner runs nothing.
type Runner struct {
	o    Options
	log  hclog.Logger
	path string
	env  []string
	sc   *redact.Scrubber // what hooks print goes to the model, the store and logs

	mu      sync.Mutex // guards the project settings' cache
	stamp   fileStamp
	project Config
}

type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool // the file exists
}

// New returns a Runner. It reads nothing until Run.
func New(o Options) *Runner {
	if o.Workspace == "" {
		if wd, err := os.Getwd(); err == nil {
			o.Workspace = wd
		}
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return &Runner{
		o: o, log: o.Logger.Named("hooks"),
		path: filepath.Join(o.Workspace, SettingsPath),
		sc:   redact.New(nil, true),
		env:  append(os.Environ(), "AGENTKERNEL_PROJECT_DIR="+o.Workspace, "CLAUDE_PROJECT_DIR="+o.Workspace),
	}
}

// Decision is what the hooks of an event decided.
type Decision string

// The decisions.
const (
	// Continue: the action goes on (no hook objected).
	Continue Decision = ""
	// Block: a hook exited with status 2 or answered {"decision": "block"}.
	Block Decision = "block"
	// Approve: a PreToolUse hook answered {"decision": "approve"} and none
	// blocked: the call needs no one's approval.
	Approve Decision = "approve"
)

// Outcome is what the hooks of one event said together.
type Outcome struct {
	Decision Decision
	// Reason is why: the blocking hooks' stderr or "reason", one per line.
	Reason string
	// Context is text for the model (SessionStart, UserPromptSubmit): the
	// hooks' plain stdout, or "additionalContext" of a JSON reply.
	Context string
	// Ran counts the hooks that ran.
	Ran int
	// Problems are hooks that failed (timed out, crashed, exited with a
	// status other than 0 and 2, answered nonsense) and a settings file
	// that could not be read. They are logged; they never block.
	Problems []Problem
}

// Problem is one hook that failed, or a settings file that could not be
// used.
type Problem struct {
	Command string // "" for a settings file
	Err     error
}

func (p Problem) Error() string {
	if p.Command == "" {
		return p.Err.Error()
	}
	return fmt.Sprintf("hook %q: %v", p.Command, p.Err)
}

// Has reports whether any hook is configured for ev (the workspace's
// settings file as last read).
func (r *Runner) Has(ev Event) bool {
	if r == nil {
		return false
	}
	if len(r.o.Config[ev]) > 0 {
		return true
	}
	proj, _ := r.projectConfig()
	return len(proj[ev]) > 0
}

// Run runs the hooks of in.Event that match, at once, each with in as JSON
// on stdin, and waits for them. When ctx ends the hooks are killed and the
// outcome is Continue.
func (r *Runner) Run(ctx context.Context, in Input) Outcome {
	var out Outcome
	if r == nil {
		return out
	}
	proj, perr := r.projectConfig()
	if perr != nil {
		out.Problems = append(out.Problems, Problem{Err: perr})
	}
	cmds := selectCommands(in, r.o.Config, proj)
	if len(cmds) == 0 {
		r.logProblems(in.Event, out.Problems)
		return out
	}
	payload, err := json.Marshal(in)
	if err != nil {
		out.Problems = append(out.Problems, Problem{Err: fmt.Errorf("hooks: encode the %s input: %w", in.Event, err)})
		r.logProblems(in.Event, out.Problems)
		return out
	}
	results := make([]result, len(cmds))
	var wg sync.WaitGroup
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = r.runOne(ctx, in.Event, c, payload)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return Outcome{}
	}
	var blocks, contexts []string
	approved := false
	for i, res := range results {
		out.Ran++
		if res.err != nil {
			out.Problems = append(out.Problems, Problem{Command: r.sc.String(cmds[i].Command), Err: res.err})
			continue
		}
		switch res.decision {
		case Block:
			blocks = append(blocks, res.reason)
		case Approve:
			approved = true
		}
		if res.context != "" {
			contexts = append(contexts, res.context)
		}
	}
	switch {
	case len(blocks) > 0:
		out.Decision, out.Reason = Block, strings.Join(blocks, "\n")
	case approved:
		out.Decision = Approve
	}
	out.Context = strings.Join(contexts, "\n")
	r.logProblems(in.Event, out.Problems)
	return out
}

func (r *Runner) logProblems(ev Event, ps []Problem) {
	for _, p := range ps {
		r.log.Warn("hook failed", "event", ev, "error", p.Error())
	}
}

// selectCommands returns the hooks of in's event whose matcher selects
// it, from every config in order, each command line once.
func selectCommands(in Input, cfgs ...Config) []Command {
	var out []Command
	seen := map[string]bool{}
	for _, cfg := range cfgs {
		for i := range cfg[in.Event] {
			m := &cfg[in.Event][i]
			if usesMatcher(in.Event) && !m.matches(in.subject()) {
				continue
			}
			for _, c := range m.Hooks {
				if !seen[c.Command] {
					seen[c.Command] = true
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// projectConfig returns the workspace's hooks, reading the settings file
// again when it changed. An error is returned once per change of the file;
// meanwhile its hooks are off.
func (r *Runner) projectConfig() (Config, error) {
	var st fileStamp
	fi, err := os.Stat(r.path)
	switch {
	case err == nil:
		st = fileStamp{mod: fi.ModTime(), size: fi.Size(), ok: true}
	case !errors.Is(err, fs.ErrNotExist):
		st = fileStamp{ok: true} // unreadable: try again each time
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if st == r.stamp && st.ok && !st.mod.IsZero() {
		return r.project, nil
	}
	r.stamp, r.project = st, nil
	if !st.ok {
		return nil, nil
	}
	b, err := os.ReadFile(r.path)
	if err == nil {
		r.project, err = ParseSettings(b)
	}
	if err != nil {
		r.project = nil
		return nil, fmt.Errorf("hooks: %s: %w (its hooks are off until it is fixed)", r.path, err)
	}
	return r.project, nil
}

// result is what one hook said.
type result struct {
	decision Decision
	reason   string
	context  string
	err      error
}

// runOne runs one hook with payload on stdin.
func (r *Runner) runOne(ctx context.Context, ev Event, c Command, payload []byte) result {
	timeout := r.o.Timeout
	if c.Timeout > 0 {
		timeout = time.Duration(c.Timeout * float64(time.Second))
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "/bin/sh", "-c", c.Command)
	cmd.Dir, cmd.Env = r.o.Workspace, r.env
	cmd.Stdin = bytes.NewReader(payload)
	stdout, stderr := &capped{max: maxOutput}, &capped{max: maxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own process group, so that a timeout kills what it started too,
	// and which ends with us however we end.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	begin := time.Now()
	err := procguard.Start(cmd)
	if err == nil {
		err = cmd.Wait()
		procguard.Release(cmd)
	}
	r.log.Debug("hook ran", "event", ev, "command", r.sc.String(c.Command), "duration", time.Since(begin), "error", err)
	if ctx.Err() != nil {
		return result{}
	}
	res := interpret(ev, c, timeout, cctx.Err(), err, stdout.String(), stderr.String())
	res.reason, res.context = r.sc.String(res.reason), r.sc.String(res.context)
	if res.err != nil {
		res.err = errors.New(r.sc.String(res.err.Error()))
	}
	return res
}

// interpret reads what a hook that ran said: its exit status, stderr and
// stdout.
func interpret(ev Event, c Command, timeout time.Duration, ctxErr, err error, stdout, stderr string) result {
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		return result{err: fmt.Errorf("timed out after %s", timeout)}
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 2:
		reason := strings.TrimSpace(stderr)
		if reason == "" {
			reason = fmt.Sprintf("blocked by the hook %q", c.Command)
		}
		if ev == SessionStart {
			return result{err: fmt.Errorf("exited with status 2 (a SessionStart hook cannot block): %s", reason)}
		}
		return result{decision: Block, reason: reason}
	case errors.As(err, &ee):
		return result{err: fmt.Errorf("%s: %s", describeExit(ee), excerpt(strings.TrimSpace(stderr), 500))}
	case err != nil:
		return result{err: err}
	}
	return parseReply(ev, c, strings.TrimSpace(stdout))
}

func describeExit(ee *exec.ExitError) string {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return fmt.Sprintf("exited with status %d", ee.ExitCode())
}

// reply is a hook's JSON answer on stdout: Claude Code's "decision" and
// "reason", and its newer hookSpecificOutput.
type reply struct {
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	HookSpecificOutput *struct {
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
		AdditionalContext        string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// parseReply reads what a hook that exited 0 printed: a JSON reply, or
// plain text that is context for the model on SessionStart and
// UserPromptSubmit.
func parseReply(ev Event, c Command, out string) result {
	var rp reply
	if !strings.HasPrefix(out, "{") || json.Unmarshal([]byte(out), &rp) != nil {
		if ev == SessionStart || ev == UserPromptSubmit {
			return result{context: out}
		}
		return result{}
	}
	res := result{reason: rp.Reason}
	decision := rp.Decision
	if h := rp.HookSpecificOutput; h != nil {
		res.context = h.AdditionalContext
		switch h.PermissionDecision {
		case "deny":
			decision, res.reason = "block", cmp.Or(h.PermissionDecisionReason, rp.Reason)
		case "allow":
			decision = "approve"
		}
	}
	switch decision {
	case "":
	case "block":
		if ev == SessionStart {
			return result{err: errors.New(`answered "block": a SessionStart hook cannot block`)}
		}
		res.decision = Block
		if res.reason == "" {
			res.reason = fmt.Sprintf("blocked by the hook %q", c.Command)
		}
	case "approve":
		if ev == PreToolUse {
			res.decision = Approve
		}
	default:
		return result{err: fmt.Errorf(`unknown decision %q (want "block" or "approve")`, decision)}
	}
	return res
}

func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// capped keeps the first max bytes written to it and drops the rest.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string { return c.buf.String() }
