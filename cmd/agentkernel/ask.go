package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mattn/go-isatty"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/mcp"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/surface/streamjson"
)

const askSynopsis = `ask [PROMPT | -] [--output-format text|json|stream-json] [--input-format text|stream-json] [--include-partial-messages] [--max-turns N] [--max-budget-usd X] [--session ID | --continue] [--approve none|read-only|all] [--model MODEL] [--notebook FILE]

Sends one prompt to the agent and prints its answer. The agent works as in
the kernel: the same tools, the same store (the session can be continued
with --continue or --session, and shown with "agentkernel sessions"), and
its code runs in a backing kernel (python3 by default) started on first use.
PROMPT "-" (or no PROMPT with a piped stdin) reads the prompt from stdin.

Asks are answered by --approve; without it, interactively when stdin is a
terminal, by control_response lines with --input-format stream-json, else
by AGENTKERNEL_APPROVE or the config file (default none).

Output formats: text prints the final answer; json prints the result
object; stream-json prints one JSON object per line as things happen, in
Claude Code's schema: {"type":"system","subtype":"init"} first, then
{"type":"assistant"} (the model's messages) and {"type":"user"} (tool
results), agentkernel's own events as {"type":"system"} with their own
subtype (kernel_output, ask, decision, checkpoint, rewind, error), and a
{"type":"result"} per prompt. --include-partial-messages adds the streaming
deltas as {"type":"stream_event"}. --input-format stream-json reads user
messages ({"type":"user","message":{"role":"user","content":"…"}}, one turn
each) and answers to {"type":"control_request"} asks from stdin, one JSON
object per line, until EOF. See docs/stream-json.md.

--max-turns bounds the model requests of each prompt, --max-budget-usd what
the run's requests may cost; either stops the run between two requests
with a result of subtype error_max_turns or error_max_budget_usd.

The exit status is 1 when a result is an error (a hook that blocks the
prompt makes one), and also when a tool call was denied (the result's
permission_denials lists them).`

// The output formats, as ask names them.
const (
	formatText       = streamjson.FormatText
	formatJSON       = streamjson.FormatJSON
	formatStreamJSON = streamjson.FormatStreamJSON
)

// runAsk is `agentkernel ask`.
func runAsk(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	a, err := parseAsk(args, stdin, stdout, stderr)
	if err != nil {
		return err
	}
	return a.run()
}

// askRun is one `agentkernel ask`: its options, and then what it opened.
type askRun struct {
	format            streamjson.Format
	streamIn, partial bool
	maxTurns          int
	maxBudget         float64
	sessionRef, model string
	cont              bool
	approveName       string
	record, store     string
	rewindTo          string
	notebook          string
	backing           *app.BackingFlags
	prompt            string
	fromStdin, tty    bool

	stdin          io.Reader
	stdout, stderr io.Writer

	// Set by run.
	log      hclog.Logger
	host     *session.Host
	info     session.Info
	policy   string
	ap       agent.ApprovalPolicy
	out      *streamjson.Writer
	tr       *streamjson.Transcript
	input    *streamjson.Input
	approver agent.Approver
}

// parseAsk reads ask's flags and its prompt.
func parseAsk(args []string, stdin io.Reader, stdout, stderr io.Writer) (*askRun, error) {
	a := &askRun{stdin: stdin, stdout: stdout, stderr: stderr}
	fs := newFlagSet("ask", askSynopsis, stderr)
	formatName := fs.String("output-format", "text", "text, json or stream-json")
	inputName := fs.String("input-format", "text", "text (the prompt) or stream-json (user messages and answers, one JSON object a line; needs --output-format stream-json)")
	fs.BoolVar(&a.partial, "include-partial-messages", false, "with stream-json: add the model's streaming deltas as stream_event lines")
	fs.IntVar(&a.maxTurns, "max-turns", 0, "stop a prompt's turn after `N` model requests (error_max_turns); 0: no limit")
	fs.Float64Var(&a.maxBudget, "max-budget-usd", 0, "stop the run once its model requests cost `X` USD (error_max_budget_usd); 0: no limit")
	fs.StringVar(&a.sessionRef, "session", "", "continue the session `ID` (or a unique id prefix)")
	fs.BoolVar(&a.cont, "continue", false, "continue the most recent session of this directory")
	fs.StringVar(&a.approveName, "approve", "", "answer the agent's asks: none, read-only or all (default: ask on a terminal, else $AGENTKERNEL_APPROVE)")
	fs.StringVar(&a.model, "model", "", "model, e.g. openai:gpt-4.1 or replay:FILE (default: the session's, then $AGENTKERNEL_MODEL, then the config file)")
	a.backing = app.AddBackingFlags(fs, "kernelspec of the backing kernel that runs the agent's code")
	fs.StringVar(&a.record, "record", "", "record the model's answers to the cassette `FILE` (default $"+app.EnvRecord+")")
	storeArg := app.StoreFlag(fs)
	fs.StringVar(&a.notebook, "notebook", "", "the .ipynb `FILE` the agent works in: it reads, inserts, edits, moves, deletes and runs "+
		"its cells (the notebook tools), each change written to the file")
	fs.StringVar(&a.rewindTo, "rewind", "", "with --session or --continue: first rewind the session to before message `#N` "+
		"(its files, and its kernel when --approve all lets the code before it replay), as sessions rewind does")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	a.format, a.store = streamjson.Format(*formatName), *storeArg
	if err := a.check(*formatName, *inputName, pos); err != nil {
		return nil, err
	}
	if err := a.readPrompt(pos); err != nil {
		if errors.Is(err, errNoPrompt) {
			fs.Usage()
		}
		return nil, err
	}
	return a, nil
}

// check refuses flags that do not go together.
func (a *askRun) check(formatName, inputName string, pos []string) error {
	switch a.format {
	case formatText, formatJSON, formatStreamJSON:
	default:
		return fmt.Errorf("ask: --output-format %q: want text, json or stream-json", formatName)
	}
	switch inputName {
	case "text":
	case "stream-json":
		a.streamIn = true
		if a.format != formatStreamJSON {
			return errors.New("ask: --input-format stream-json needs --output-format stream-json")
		}
		if len(pos) > 0 {
			return errors.New("ask: with --input-format stream-json the prompts come from stdin: give no PROMPT")
		}
	default:
		return fmt.Errorf("ask: --input-format %q: want text or stream-json", inputName)
	}
	switch {
	case a.partial && a.format != formatStreamJSON:
		return errors.New("ask: --include-partial-messages needs --output-format stream-json")
	case a.maxTurns < 0:
		return fmt.Errorf("ask: --max-turns %d: want a positive number (0: no limit)", a.maxTurns)
	case a.maxBudget < 0 || math.IsNaN(a.maxBudget) || math.IsInf(a.maxBudget, 0):
		return fmt.Errorf("ask: --max-budget-usd %v: want a positive amount (0: no limit)", a.maxBudget)
	case a.cont && a.sessionRef != "":
		return errors.New("ask: --session and --continue exclude each other")
	case a.rewindTo != "" && !a.cont && a.sessionRef == "":
		return errors.New("ask: --rewind needs the session: --session ID or --continue")
	case len(pos) > 1:
		return fmt.Errorf("ask: want one PROMPT (quote it), got %d arguments", len(pos))
	}
	return nil
}

// readPrompt takes the prompt from the arguments, else from stdin.
func (a *askRun) readPrompt(pos []string) error {
	a.tty = isTerminal(a.stdin)
	switch {
	case a.streamIn:
		return nil
	case len(pos) == 1 && pos[0] != "-":
		a.prompt = pos[0]
	case len(pos) == 1 || !a.tty:
		b, err := io.ReadAll(io.LimitReader(a.stdin, 16<<20))
		if err != nil {
			return fmt.Errorf("ask: read the prompt from stdin: %w", err)
		}
		a.prompt, a.fromStdin = string(b), true
	}
	if strings.TrimSpace(a.prompt) == "" {
		return errNoPrompt
	}
	return nil
}

var errNoPrompt = errors.New("ask: no prompt given")

// run opens the store, the backing runner and the host, and runs the
// prompt (or each prompt of stdin).
func (a *askRun) run() error {
	var err error
	if a.log, err = newLogger(a.stderr); err != nil {
		return err
	}
	cfg := app.Load(app.Flags{Record: a.record, Store: a.store}, a.log)
	if err := cfg.Err(); err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	a.policy = cmp.Or(a.approveName, string(cfg.Approve))
	if a.ap, err = agent.ParseApprovalPolicy(a.policy); err != nil {
		return fmt.Errorf("ask: --approve: %w", err)
	}
	bo, err := a.backing.Options("ask")
	if err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	var cells session.Cells
	if a.notebook != "" {
		if cells, err = app.NotebookFile(a.notebook); err != nil {
			return fmt.Errorf("ask: --notebook: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opened, err := app.Open(ctx, cfg, app.Surface{Kind: "ask", Source: eventlog.SourceAsk, StoreNow: true, Logger: a.log,
		Backing: bo, Cells: cells})
	if err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	defer opened.Close()
	a.host = opened.Host
	if err := a.openSession(ctx); err != nil {
		return err
	}
	a.streams()
	tools, servers := initMCP(ctx, a.host, a.info.Tools, a.tr.Enabled())
	cwd, _ := os.Getwd()
	a.tr.Emit("system", map[string]any{"subtype": "init", "cwd": cwd, "tools": tools, "mcp_servers": servers,
		"model": a.host.Models().Model(), "permissionMode": a.host.Modes().Permission(), "slash_commands": []any{},
		"agentkernel_version": versionString(), "backing": a.backing.Kernel, "approve": a.policy, "resumed": a.info.Resumed,
		"session_workspace": cmp.Or(a.info.Elsewhere, a.host.Workspace())})
	defer a.host.Subscribe(a.tr.Event)()
	if err := a.rewind(ctx); err != nil {
		return err
	}
	return a.prompts(ctx)
}

// openSession makes the session current (new, continued or resumed) and
// its model known.
func (a *askRun) openSession(ctx context.Context) error {
	var err error
	switch {
	case a.cont:
		a.info, err = a.host.Continue(ctx)
	case a.sessionRef != "":
		a.info, err = a.host.Resume(ctx, a.sessionRef)
	default:
		a.info, err = a.host.NewSession(ctx)
	}
	if err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	if a.info.ForkOf != "" {
		fmt.Fprintf(a.stderr, "agentkernel: session %s is %s's, %s: this asks in your own fork of it, %s.\n",
			messages.ShortID(a.info.ForkOf), a.info.ForkOfOwner, a.info.ForkReason(), a.info.ID)
	}
	if a.info.Elsewhere != "" {
		fmt.Fprintf(a.stderr, "agentkernel: session %s was started in %s, not here (%s): its rewinds here restore the "+
			"conversation and the kernel, never files.\n", messages.ShortID(a.info.ID), a.info.Elsewhere, a.host.Workspace())
	}
	if m := strings.TrimSpace(a.model); m != "" {
		if err := a.host.Models().Set(ctx, m); err != nil {
			return fmt.Errorf("ask: model %s: %w", m, err)
		}
	}
	if a.host.Models().Model() == "" {
		return errors.New("ask: no model configured: pass --model (openai:gpt-4.1, anthropic:claude-sonnet-4-5, " +
			"ollama:qwen2.5-coder, replay:FILE) or set AGENTKERNEL_MODEL")
	}
	return nil
}

// streams sets up the output, the stream-json transcript and input, and
// who answers the asks.
func (a *askRun) streams() {
	a.out = streamjson.NewWriter(a.stdout)
	var emitter *streamjson.Writer
	if a.format == formatStreamJSON {
		emitter = a.out
	}
	a.tr = streamjson.NewTranscript(emitter, a.info.ID, a.host.Models().Model(), a.partial)
	if a.streamIn {
		a.input = streamjson.NewInput(a.stdin, func(s string) { fmt.Fprintln(a.stderr, s) })
	}
	switch {
	case a.approveName != "":
		a.approver = a.ap.Approver()
	case a.streamIn:
		a.approver = a.input.Approver(a.out, a.tr)
		a.policy = "stdin"
	case a.tty && !a.fromStdin:
		a.approver = ttyApprover(a.stdin, a.stderr)
		a.policy = "interactive"
	default:
		a.approver = a.ap.Approver()
	}
}

// rewind is --rewind: the session goes back before its prompt.
func (a *askRun) rewind(ctx context.Context) error {
	if a.rewindTo == "" {
		return nil
	}
	ts, err := a.host.Conversation().Ref(a.rewindTo)
	if err != nil {
		return fmt.Errorf("ask: --rewind: %w", err)
	}
	rw, err := a.host.World().Rewind(ctx, ts, session.RewindOptions{ConfirmReplay: func(context.Context, []session.CodeRun) bool {
		return a.ap == agent.ApproveAll && a.policy != "interactive" && a.policy != "stdin"
	}})
	if err != nil {
		return fmt.Errorf("ask: --rewind: %w", err)
	}
	a.tr.System("rewind", map[string]any{"to": a.rewindTo, "removed": rw.Removed,
		"files": rw.Files, "kernel": rw.Kernel, "kernel_note": rw.KernelNote})
	if a.format == formatText {
		fmt.Fprintln(a.stderr, rw.Summary())
	}
	return nil
}

// prompts runs one turn per prompt (the one given, or each user message
// on stdin) and says how the run ended.
func (a *askRun) prompts(ctx context.Context) error {
	r := streamjson.Run{Host: a.host, Format: a.format, Prompt: a.prompt, Input: a.input,
		Out: a.out, Tr: a.tr, Stdout: a.stdout, Stderr: a.stderr, Approve: a.approver,
		MaxTurns: a.maxTurns, MaxBudget: a.maxBudget}
	return a.finish(r.Prompts(ctx))
}

// finish closes the session and returns the run's error: a write, the
// input, a failed turn, or denied calls.
func (a *askRun) finish(denied []streamjson.Denial, failed error) error {
	if cerr := a.host.Close(); cerr != nil {
		a.log.Warn("closing the session", "error", cerr)
	}
	if err := a.out.Err(); err != nil {
		return fmt.Errorf("ask: write output: %w", err)
	}
	if a.input != nil {
		if err := a.input.Err(); err != nil {
			return fmt.Errorf("ask: %w", err)
		}
	}
	if failed != nil {
		return failed
	}
	if len(denied) > 0 {
		var names []string
		for _, d := range denied {
			names = append(names, d.ToolName)
		}
		return fmt.Errorf("ask: %d tool call(s) denied (%s): see permission_denials", len(denied), strings.Join(names, ", "))
	}
	return nil
}

// isTerminal reports whether v (stdin or stdout) is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// ttyApprover asks the person at the terminal: y/a/n for approvals, a line
// for followup questions. A read blocks until a line comes; when ctx ends
// first the ask is denied, and the read is left to end with the process (a
// terminal read cannot be cancelled).
func ttyApprover(stdin io.Reader, stderr io.Writer) agent.Approver {
	lines := make(chan string)
	var once sync.Once
	start := func() {
		go func() { // lives until stdin closes or the process exits; see above
			sc := bufio.NewScanner(stdin)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
	}
	read := func(ctx context.Context, prompt string) (string, bool) {
		once.Do(start)
		fmt.Fprint(stderr, prompt)
		select {
		case l, ok := <-lines:
			return l, ok
		case <-ctx.Done():
			return "", false
		}
	}
	return func(ctx context.Context, ask messages.UIMessage) (agent.Response, bool) {
		if ask.Ask == messages.AskFollowup {
			in, ok := read(ctx, "\n"+agent.AskPrompt(ask))
			if !ok {
				return agent.Response{Kind: agent.ResponseMessage, Text: agent.NoAnswer, By: "stdin"}, true
			}
			return agent.Response{Kind: agent.ResponseMessage, Text: in, By: "stdin"}, true
		}
		prompt := "\n" + agent.AskPrompt(ask)
		for {
			in, ok := read(ctx, prompt)
			if !ok {
				return agent.Response{Kind: agent.ResponseNo, By: "stdin"}, true
			}
			if resp, ok := agent.ParseReply(in, "stdin"); ok {
				return resp, true
			}
			prompt = "Please answer y (yes), a (always) or n (no): "
		}
	}
}

// mcpStartWait bounds how long the stream-json init waits for the MCP
// servers to start, so that it can report them as Claude Code does.
const mcpStartWait = 15 * time.Second

// initMCP returns the init event's tools (with each ready MCP server's, as
// mcp__server__tool) and mcp_servers ({name, status}: connected, failed,
// pending or disabled, Claude Code's words). With stream-json output it
// waits for the servers to start (at most mcpStartWait); otherwise it
// reports what it knows now.
func initMCP(ctx context.Context, host *session.Host, builtin []string, wait bool) ([]string, []map[string]string) {
	tools := slices.Clone(builtin)
	servers := []map[string]string{}
	if wait {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, mcpStartWait)
		defer cancel()
	}
	for _, s := range host.Tools().MCPStatus(ctx, wait) {
		status := "pending"
		switch s.State {
		case mcp.StateReady:
			status = "connected"
			for _, t := range s.Tools {
				tools = append(tools, t.Tool)
			}
		case mcp.StateFailed, mcp.StateExited, mcp.StateInvalid:
			status = "failed"
		case mcp.StateDisabled:
			status = "disabled"
		}
		servers = append(servers, map[string]string{"name": s.Name, "status": status})
	}
	return tools, servers
}
