package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/mattn/go-isatty"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
)

const askSynopsis = `ask [PROMPT | -] [--output-format text|json|stream-json] [--session ID | --continue] [--approve none|read-only|all] [--model MODEL]

Sends one prompt to the agent and prints its answer. The agent works as in
the kernel: the same tools, the same store (the session can be continued
with --continue or --session, and shown with "agentkernel sessions"), and
its code runs in a backing kernel (python3 by default) started on first use.
PROMPT "-" (or no PROMPT with a piped stdin) reads the prompt from stdin.

Asks are answered by --approve; without it, interactively when stdin is a
terminal, else by AGENTKERNEL_APPROVE or the config file (default none).
Output formats: text prints the final answer; json prints one result
object; stream-json prints one JSON object per line as things happen:
{"type":"init"}, {"type":"message","event":"created"|"updated"},
{"type":"output"} (the backing kernel's outputs), {"type":"ask"},
{"type":"decision"} and, last, {"type":"result"} with duration_ms,
num_turns, usage and total_cost_usd. The exit status is 1 when the
agent failed.`

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
	case len(pos) == 1 && pos[0] != "-":
		prompt = pos[0]
	case len(pos) == 1 || !tty:
		b, err := io.ReadAll(io.LimitReader(stdin, 16<<20))
		if err != nil {
			return fmt.Errorf("ask: read the prompt from stdin: %w", err)
		}
		prompt, fromStdin = string(b), true
	}
	if strings.TrimSpace(prompt) == "" {
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
		cfg.EventLog.Close()
		return fmt.Errorf("ask: %w", err)
	}
	defer cfg.EventLog.Close()
	var approver agent.Approver
	policy := string(cfg.Approve)
	if *approveName != "" {
		policy = *approveName
	}
	ap, err := agent.ParseApprovalPolicy(policy)
	if err != nil {
		return fmt.Errorf("ask: --approve: %w", err)
	}
	if *approveName == "" && tty && !fromStdin {
		approver = ttyApprover(stdin, stderr)
		policy = "interactive"
	} else {
		approver = ap.Approver()
		policy = string(ap)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	st, err := store.Open(store.Options{Dir: cfg.DataDir, URL: firstNonEmpty(*storeArg, cfg.Store), Logger: log.Named("store")})
	if err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	defer st.Close()
	cwd, _ := os.Getwd()
	gw, err := gwFlags.resolve()
	if err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	var runner backing.Runner
	if gw != nil {
		if runner, err = backing.NewRemote(backing.RemoteOptions{Gateway: *gw, Kernel: *backingName, Owner: "ask", Logger: log}); err != nil {
			return fmt.Errorf("ask: %w", err)
		}
	} else {
		runner = backing.NewLocal(backing.LocalOptions{Kernel: *backingName, Dir: cwd, Owner: "ask", Logger: log})
	}
	defer runner.Close()
	host := session.New(session.Config{
		Store: st, Model: cfg.Model, OpenModel: cfg.OpenModel, Runner: runner, Workspace: cwd, Kind: "ask",
		PermissionMode: cfg.PermissionMode, Allow: cfg.Allow, Deny: cfg.Deny, MCPServers: cfg.MCPServers, Logger: log,
		Hooks: cfg.Hooks, EventLog: cfg.EventLog, Source: eventlog.SourceAsk,
	})
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

	out := &jsonLines{w: stdout}
	turn := session.Turn{Approve: approver}
	if format == formatStreamJSON {
		out.emit("init", map[string]any{"session_id": sid, "model": modelName, "tools": info.Tools,
			"cwd": cwd, "approve": policy, "backing": *backingName, "resumed": info.Resumed, "version": versionString()})
		remove := host.Subscribe(func(e agent.Event) {
			if e.Kind == session.EventCheckpoint {
				var cp session.Checkpoint
				if json.Unmarshal([]byte(e.Text), &cp) == nil {
					out.emit("checkpoint", map[string]any{"session_id": sid, "anchor": cp.Anchor, "tool": cp.Tool, "files": cp.Files})
				}
			}
		})
		defer remove()
	}
	if *rewindTo != "" {
		ts, err := host.Ref(*rewindTo)
		if err != nil {
			return fmt.Errorf("ask: --rewind: %w", err)
		}
		rw, err := host.Rewind(ctx, ts, session.RewindOptions{ConfirmReplay: func(context.Context, []session.CodeRun) bool {
			return ap == agent.ApproveAll && policy != "interactive"
		}})
		if err != nil {
			return fmt.Errorf("ask: --rewind: %w", err)
		}
		switch format {
		case formatStreamJSON:
			out.emit("rewind", map[string]any{"session_id": sid, "to": *rewindTo, "removed": rw.Removed,
				"files": rw.Files, "kernel": rw.Kernel, "kernel_note": rw.KernelNote})
		case formatText:
			fmt.Fprintln(stderr, rw.Summary())
		}
	}
	if format == formatStreamJSON {
		turn.Output = func(m *wire.Message) {
			if isOutput(m.Header.MsgType) {
				out.emit("output", map[string]any{"session_id": sid, "msg_type": m.Header.MsgType, "content": m.Content})
			}
		}
		turn.Events = func(e agent.Event) {
			switch e.Kind {
			case agent.EventMessageCreated, agent.EventMessageUpdated:
				ev := "created"
				if e.Kind == agent.EventMessageUpdated {
					ev = "updated"
				}
				out.emit("message", map[string]any{"event": ev, "session_id": sid, "message": e.Message})
			}
		}
	}
	if format == formatText {
		// What the agent reports as an error (a prompt a hook blocked, a
		// failing hook, …) is for the person at the terminal.
		turn.Events = func(e agent.Event) {
			if e.Kind == agent.EventMessageCreated && e.Message.Say == messages.SayError && e.Message.Decision == nil {
				fmt.Fprintln(stderr, e.Message.Text)
			}
		}
	}
	turn.OnAsk = func(a session.AnsweredAsk) {
		if format == formatStreamJSON {
			out.emit("ask", map[string]any{"session_id": sid, "ts": a.Ask.TS, "ask": a.Ask.Ask, "text": a.Ask.Text})
			out.emit("decision", map[string]any{"session_id": sid, "ts": a.Ask.TS, "ask": a.Ask.Ask,
				"decision": a.Response.Kind, "allowed": !a.Denied(), "text": a.Response.Text, "by": a.Response.By})
		}
		if a.Denied() && format == formatText {
			fmt.Fprintf(stderr, "denied (%s): %s\n", a.Response.By, describeAsk(a.Ask))
		}
	}
	res, askErr := host.Submit(ctx, prompt, turn)
	if cerr := host.Close(); cerr != nil {
		log.Warn("closing the session", "error", cerr)
	}

	result := askResult(res, modelName, askErr)
	switch format {
	case formatText:
		if res.Text != "" {
			fmt.Fprintln(stdout, strings.TrimRight(res.Text, "\n"))
		}
	case formatJSON, formatStreamJSON:
		out.emit("result", result)
	}
	if err := out.err; err != nil {
		return fmt.Errorf("ask: write output: %w", err)
	}
	if askErr != nil {
		return fmt.Errorf("ask: %s", errorText(askErr))
	}
	return nil
}

// isOutput reports whether an iopub message is an output of the code
// (what stream-json reports as "output").
func isOutput(msgType string) bool {
	switch msgType {
	case "stream", "display_data", "update_display_data", "execute_result", "error", "clear_output":
		return true
	}
	return false
}

// askResult is the result object of json and stream-json (its type
// "result" is added by jsonLines.emit).
func askResult(res session.Result, model string, err error) map[string]any {
	subtype := "success"
	if err != nil {
		subtype = "error"
	}
	var denials []map[string]any
	for _, a := range res.Asks {
		if a.Denied() {
			denials = append(denials, map[string]any{"ts": a.Ask.TS, "ask": a.Ask.Ask, "text": a.Ask.Text, "by": a.Response.By})
		}
	}
	out := map[string]any{
		"subtype": subtype, "is_error": err != nil, "result": res.Text,
		"completed": res.Completed, "session_id": res.SessionID, "model": model,
		"duration_ms": res.Duration.Milliseconds(), "num_turns": res.Usage.Requests,
		"usage": map[string]any{
			"input_tokens": res.Usage.InputTokens, "output_tokens": res.Usage.OutputTokens,
			"cache_read_input_tokens": res.Usage.CacheReadTokens, "cache_creation_input_tokens": res.Usage.CacheWriteTokens,
		},
		"total_cost_usd":     res.Usage.Cost,
		"permission_denials": denials,
	}
	if denials == nil {
		out["permission_denials"] = []any{}
	}
	if res.Pending != nil {
		out["pending_ask"] = res.Pending
	}
	if err != nil {
		out["error"] = errorText(err)
	}
	return out
}

// errorText says why a turn failed in words for people.
func errorText(err error) string {
	switch {
	case errors.Is(err, agent.ErrNoProvider):
		return agent.NoModelHelp
	case errors.Is(err, context.Canceled):
		return "interrupted"
	case errors.Is(err, agent.ErrAPIFailed):
		return "the model request failed: " + strings.TrimPrefix(err.Error(), agent.ErrAPIFailed.Error()+": ")
	}
	return err.Error()
}

// describeAsk is an ask in one line.
func describeAsk(ask messages.UIMessage) string {
	switch ask.Ask {
	case messages.AskCommand:
		return "execute_code: " + firstLine(ask.Text, 80)
	case messages.AskTool:
		var t struct {
			Tool  string          `json:"tool"`
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal([]byte(ask.Text), &t) == nil && t.Tool != "" {
			return t.Tool + " " + firstLine(string(t.Input), 80)
		}
	}
	return string(ask.Ask) + ": " + firstLine(ask.Text, 80)
}

// jsonLines writes one JSON object per line, "type" first; safe for
// concurrent use (the task's events, the backing kernel's outputs and the
// asks come from different goroutines). The first error is kept in err.
type jsonLines struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (j *jsonLines) emit(typ string, fields map[string]any) {
	b, err := json.Marshal(fields)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return
	}
	if err != nil {
		j.err = err
		return
	}
	t, _ := json.Marshal(typ)
	line := append([]byte(`{"type":`), t...)
	if len(b) > 2 {
		line = append(append(line, ','), b[1:]...)
	} else {
		line = append(line, '}')
	}
	if _, err := j.w.Write(append(line, '\n')); err != nil {
		j.err = err
	}
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
			var q struct {
				Question string   `json:"question"`
				Suggest  []string `json:"suggest"`
			}
			p := ask.Text
			if json.Unmarshal([]byte(ask.Text), &q) == nil && q.Question != "" {
				p = q.Question
				for i, s := range q.Suggest {
					p += fmt.Sprintf("\n  %d. %s", i+1, s)
				}
			}
			in, ok := read(ctx, "\n"+p+"\n> ")
			if !ok {
				return agent.Response{Kind: agent.ResponseMessage, Text: agent.NoAnswer, By: "stdin"}, true
			}
			return agent.Response{Kind: agent.ResponseMessage, Text: in, By: "stdin"}, true
		}
		prompt := "\nThe agent wants to run " + describeAsk(ask)
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
