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

	"github.com/mattn/go-isatty"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/mcp"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/streamjson"
)

const askSynopsis = `ask [PROMPT | -] [--output-format text|json|stream-json] [--input-format text|stream-json] [--include-partial-messages] [--max-turns N] [--max-budget-usd X] [--session ID | --continue] [--approve none|read-only|all] [--model MODEL]

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

// askFormat is --output-format.
type askFormat string

const (
	formatText       askFormat = "text"
	formatJSON       askFormat = "json"
	formatStreamJSON askFormat = "stream-json"
)

// runAsk is `agentkernel ask`.
func runAsk(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("ask", askSynopsis, stderr)
	formatName := fs.String("output-format", "text", "text, json or stream-json")
	inputName := fs.String("input-format", "text", "text (the prompt) or stream-json (user messages and answers, one JSON object a line; needs --output-format stream-json)")
	partial := fs.Bool("include-partial-messages", false, "with stream-json: add the model's streaming deltas as stream_event lines")
	maxTurns := fs.Int("max-turns", 0, "stop a prompt's turn after `N` model requests (error_max_turns); 0: no limit")
	maxBudget := fs.Float64("max-budget-usd", 0, "stop the run once its model requests cost `X` USD (error_max_budget_usd); 0: no limit")
	sessionRef := fs.String("session", "", "continue the session `ID` (or a unique id prefix)")
	cont := fs.Bool("continue", false, "continue the most recent session")
	approveName := fs.String("approve", "", "answer the agent's asks: none, read-only or all (default: ask on a terminal, else $AGENTKERNEL_APPROVE)")
	model := fs.String("model", "", "model, e.g. openai:gpt-4.1 or replay:FILE (default: the session's, then $AGENTKERNEL_MODEL, then the config file)")
	backingName := fs.String("backing", "python3", "kernelspec of the backing kernel that runs the agent's code")
	record := fs.String("record", "", "record the model's answers to the cassette `FILE`")
	gwFlags := addGatewayFlags(fs)
	storeArg := storeFlag(fs)
	rewindTo := fs.String("rewind", "", "with --session or --continue: first rewind the session to before message `#N` "+
		"(its files, and its kernel when --approve all lets the code before it replay), as sessions rewind does")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	format := askFormat(*formatName)
	switch format {
	case formatText, formatJSON, formatStreamJSON:
	default:
		return fmt.Errorf("ask: --output-format %q: want text, json or stream-json", *formatName)
	}
	streamIn := false
	switch *inputName {
	case "text":
	case "stream-json":
		streamIn = true
		if format != formatStreamJSON {
			return errors.New("ask: --input-format stream-json needs --output-format stream-json")
		}
		if len(pos) > 0 {
			return errors.New("ask: with --input-format stream-json the prompts come from stdin: give no PROMPT")
		}
	default:
		return fmt.Errorf("ask: --input-format %q: want text or stream-json", *inputName)
	}
	if *partial && format != formatStreamJSON {
		return errors.New("ask: --include-partial-messages needs --output-format stream-json")
	}
	if *maxTurns < 0 {
		return fmt.Errorf("ask: --max-turns %d: want a positive number (0: no limit)", *maxTurns)
	}
	if *maxBudget < 0 || math.IsNaN(*maxBudget) || math.IsInf(*maxBudget, 0) {
		return fmt.Errorf("ask: --max-budget-usd %v: want a positive amount (0: no limit)", *maxBudget)
	}
	if *cont && *sessionRef != "" {
		return errors.New("ask: --session and --continue exclude each other")
	}
	if *rewindTo != "" && !*cont && *sessionRef == "" {
		return errors.New("ask: --rewind needs the session: --session ID or --continue")
	}
	if len(pos) > 1 {
		return fmt.Errorf("ask: want one PROMPT (quote it), got %d arguments", len(pos))
	}
	tty := isTerminal(stdin)
	prompt, fromStdin := "", false
	switch {
	case streamIn:
	case len(pos) == 1 && pos[0] != "-":
		prompt = pos[0]
	case len(pos) == 1 || !tty:
		b, err := io.ReadAll(io.LimitReader(stdin, 16<<20))
		if err != nil {
			return fmt.Errorf("ask: read the prompt from stdin: %w", err)
		}
		prompt, fromStdin = string(b), true
	}
	if !streamIn && strings.TrimSpace(prompt) == "" {
		fs.Usage()
		return errors.New("ask: no prompt given")
	}

	log, err := newLogger(stderr)
	if err != nil {
		return err
	}
	cfg, err := agentConfig("", *record, log)
	if err == nil {
		err = configErr(cfg)
	}
	if err != nil {
		cfg.Host.EventLog.Close()
		return fmt.Errorf("ask: %w", err)
	}
	defer cfg.Host.EventLog.Close()
	policy := string(cfg.Approve)
	if *approveName != "" {
		policy = *approveName
	}
	ap, err := agent.ParseApprovalPolicy(policy)
	if err != nil {
		return fmt.Errorf("ask: --approve: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	st, err := store.Open(ctx, store.Options{Dir: cfg.Host.DataDir, URL: firstNonEmpty(*storeArg, cfg.Host.StoreURL), Logger: log.Named("store")})
	if err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	defer st.Close()
	cwd, _ := os.Getwd()
	gw, err := gwFlags.resolve()
	if err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	runner, err := backing.Open(backing.Options{Kernel: *backingName, Dir: cwd, Owner: "ask", Gateway: gw,
		Reaper: reaper(), Logger: log})
	if err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	defer runner.Close()
	hc := cfg.Host
	hc.Store, hc.Runner, hc.Workspace, hc.Kind, hc.Logger, hc.Source = st, runner, cwd, "ask", log, eventlog.SourceAsk
	host := session.New(hc)
	defer host.Close()
	var info session.Info
	switch {
	case *cont:
		info, err = host.Continue(ctx)
	case *sessionRef != "":
		info, err = host.Resume(ctx, *sessionRef)
	default:
		info, err = host.NewSession(ctx)
	}
	if err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	if info.Elsewhere != "" {
		fmt.Fprintf(stderr, "agentkernel: session %s was started in %s, not here (%s): its rewinds here restore the "+
			"conversation and the kernel, never files.\n", shortID(info.ID), info.Elsewhere, host.Workspace())
	}
	if m := strings.TrimSpace(*model); m != "" {
		if err := host.SetModel(ctx, m); err != nil {
			return fmt.Errorf("ask: model %s: %w", m, err)
		}
	}
	modelName := host.Model()
	if modelName == "" {
		return errors.New("ask: no model configured: pass --model (openai:gpt-4.1, anthropic:claude-sonnet-4-5, " +
			"ollama:qwen2.5-coder, replay:FILE) or set AGENTKERNEL_MODEL")
	}
	sid := info.ID

	out := streamjson.NewWriter(stdout)
	var emitter *streamjson.Writer
	if format == formatStreamJSON {
		emitter = out
	}
	tr := streamjson.NewTranscript(emitter, sid, modelName, *partial)
	var input *streamjson.Input
	var approver agent.Approver
	switch {
	case *approveName != "":
		approver = ap.Approver()
	case streamIn:
		input = streamjson.NewInput(stdin, func(s string) { fmt.Fprintln(stderr, s) })
		approver = input.Approver(out, tr)
		policy = "stdin"
	case tty && !fromStdin:
		approver = ttyApprover(stdin, stderr)
		policy = "interactive"
	default:
		approver = ap.Approver()
	}
	if streamIn && input == nil {
		input = streamjson.NewInput(stdin, func(s string) { fmt.Fprintln(stderr, s) })
	}
	tools, servers := initMCP(ctx, host, info.Tools, tr.Enabled())
	tr.Emit("system", map[string]any{"subtype": "init", "cwd": cwd, "tools": tools, "mcp_servers": servers,
		"model": modelName, "permissionMode": host.Mode(), "slash_commands": []any{},
		"agentkernel_version": versionString(), "backing": *backingName, "approve": policy, "resumed": info.Resumed,
		"session_workspace": cmp.Or(info.Elsewhere, host.Workspace())})
	defer host.Subscribe(tr.Event)()

	if *rewindTo != "" {
		ts, err := host.Ref(*rewindTo)
		if err != nil {
			return fmt.Errorf("ask: --rewind: %w", err)
		}
		rw, err := host.Rewind(ctx, ts, session.RewindOptions{ConfirmReplay: func(context.Context, []session.CodeRun) bool {
			return ap == agent.ApproveAll && policy != "interactive" && policy != "stdin"
		}})
		if err != nil {
			return fmt.Errorf("ask: --rewind: %w", err)
		}
		tr.System("rewind", map[string]any{"to": *rewindTo, "removed": rw.Removed,
			"files": rw.Files, "kernel": rw.Kernel, "kernel_note": rw.KernelNote})
		if format == formatText {
			fmt.Fprintln(stderr, rw.Summary())
		}
	}
	turn := session.Turn{Approve: approver, OnAsk: tr.Ask,
		Limits: agent.Limits{MaxRequests: *maxTurns}}
	if format == formatStreamJSON {
		turn.Output = tr.Output
	}
	if format == formatText {
		// What the agent reports as an error (a prompt a hook blocked, a
		// failing hook, …) is for the person at the terminal.
		turn.Events = func(e agent.Event) {
			if e.Kind == agent.EventMessageCreated && e.Message.Say == messages.SayError && e.Message.Decision == nil {
				fmt.Fprintln(stderr, e.Message.Text)
			}
		}
		turn.OnAsk = func(a session.AnsweredAsk) {
			if a.Denied() {
				fmt.Fprintf(stderr, "denied (%s): %s\n", a.Response.By, streamjson.DescribeAsk(a.Ask))
			}
		}
	}

	// One turn per prompt: the one given, or each user message on stdin.
	var failed error
	var denied []streamjson.Denial
	total := 0.0
	for n := 0; ; n++ {
		if streamIn {
			p, ok := input.Next(ctx)
			if !ok || input.Err() != nil {
				break
			}
			prompt, turn.Images = p.Text, p.Images
		} else if n > 0 {
			break
		}
		turn.Limits.MaxCost = 0
		if *maxBudget > 0 {
			turn.Limits.MaxCost = *maxBudget - total
		}
		var res session.Result
		var askErr error
		if *maxBudget > 0 && turn.Limits.MaxCost <= 0 {
			// The budget is spent: no request starts.
			res, askErr = session.Result{SessionID: sid}, agent.ErrMaxBudget
		} else {
			res, askErr = host.Submit(ctx, prompt, turn)
		}
		if askErr == nil {
			askErr = tr.PromptBlocked()
		}
		total += res.Usage.Cost
		result, d := tr.Result(res, modelName, total, askErr)
		denied = append(denied, d...)
		switch format {
		case formatText:
			if res.Text != "" {
				fmt.Fprintln(stdout, strings.TrimRight(res.Text, "\n"))
			}
		case formatJSON, formatStreamJSON:
			out.Emit("result", result)
		}
		if askErr != nil {
			failed = fmt.Errorf("ask: %s", streamjson.ErrorText(askErr))
			if ctx.Err() != nil || !streamIn {
				break
			}
		}
	}
	if cerr := host.Close(); cerr != nil {
		log.Warn("closing the session", "error", cerr)
	}
	if err := out.Err(); err != nil {
		return fmt.Errorf("ask: write output: %w", err)
	}
	if input != nil {
		if err := input.Err(); err != nil {
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
			q, _ := messages.ParseFollowup(ask)
			p := q.Question
			for i, s := range q.Suggest {
				p += fmt.Sprintf("\n  %d. %s", i+1, s)
			}
			in, ok := read(ctx, "\n"+p+"\n> ")
			if !ok {
				return agent.Response{Kind: agent.ResponseMessage, Text: agent.NoAnswer, By: "stdin"}, true
			}
			return agent.Response{Kind: agent.ResponseMessage, Text: in, By: "stdin"}, true
		}
		prompt := "\nThe agent wants to run " + streamjson.DescribeAsk(ask)
		if ask.Ask == messages.AskCommand {
			prompt = "\nThe agent wants to run this code:\n\n" + ask.Text + "\n"
		}
		prompt += "\nAllow? [y]es / [a]lways / [n]o: "
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
	for _, s := range host.MCPStatus(ctx, wait) {
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
