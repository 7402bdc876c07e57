package bridge

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/acpagent"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/rules"
	"github.com/agentkernel/agentkernel/session"
)

// magicHelp lists the %agent subcommands.
const magicHelp = `%agent new              start a new session
%agent sessions [--all] [TEXT]
                        your sessions of this directory (--all: all you may see), matching TEXT
%agent resume ID        continue a stored session (an id prefix is enough; another user's is forked)
%agent history [--last N] [--role R]  show this session's messages with their #N and ts (R: user, assistant, tool, system)
%agent rewind TS|#N [--conversation-only|--no-files|--no-kernel] [--force]
                        go back to before that message: the conversation, the files
                        the agent changed, and the kernel (restarted, its code replayed)
%agent fork TS|#N       a new session holding the history before that message
%agent edit TS|#N TEXT  replace a prompt of yours with TEXT and run it again
%agent model [NAME]     show or set the model (openai:gpt-4.1, anthropic:claude-sonnet-4-5, ollama:NAME, replay:FILE)
%agent use AGENT        let an ACP agent answer (claude, codex, gemini, or its command line); it runs code here
%agent title [TEXT]     show or set the session's title (the panel's header, sessions list)
%agent rules            the instructions the agent is given: AGENTS.md, CLAUDE.md, .agentkernel/rules/*.md
%agent effort [LEVEL]   show or set how hard the model thinks: low, medium, high, off
%agent mode [NAME]      show or set the agent mode: code, ask, architect, debug, yours (.agentkernel/modes)
%agent permissions [MODE]
                        show or set the permission mode: default, acceptEdits, bypassPermissions, plan
%agent cost             tokens and cost of this session
%agent export FILE      write this session: FILE.ipynb as a notebook, else both histories as JSONL
%agent notebook [FILE|off]
                        where the agent's notebook tools work: the notebook a frontend shows
                        (JupyterLab, Notebook 7), else FILE (an .ipynb changed on disk: nbclient, papermill)
%agent attach [FILE ...|clear]
                        images (PNG, JPEG, GIF, WebP) to send with your next prompt; list or drop them
%agent webview [stop]   show the live web panel (link and IFrame); stop it
%agent mcp [restart [NAME]]
                        the MCP servers: status, transport, tools, errors; restart one or all
%agent mcp serve|stop   serve this kernel (its code, sessions and the open notebook) to MCP
                        clients such as Claude Code: a loopback URL and a token; stop it
%agent help             this list`

// magicWords are the subcommands, for completion.
var magicWords = []string{"new", "sessions", "resume", "history", "rewind", "fork", "edit", "model", "use", "rules", "effort", "title", "mode", "permissions", "cost", "export", "notebook", "attach", "webview", "mcp", "help"}

// magic runs an %agent line and answers the cell.
func (b *Bridge) magic(ctx context.Context, r *kernel.Request, line string, count int) {
	fields := strings.Fields(strings.TrimSpace(line))
	sub, args := "help", []string{}
	if len(fields) > 1 {
		sub, args = fields[1], fields[2:]
	}
	if sub == "edit" {
		b.magicEdit(ctx, r, line, count)
		return
	}
	if sub == "webview" {
		b.magicWebview(ctx, r, args, count)
		return
	}
	if sub == "rewind" || sub == "fork" {
		out, err := b.magicRewind(ctx, r, sub, args)
		if err != nil {
			b.replyError(r, count, "AgentMagicError", err.Error())
			return
		}
		if err := r.Publish(wire.MsgStream, wire.Stream{Name: "stdout", Text: out + "\n"}); err != nil {
			b.log.Debug("publish magic output", "error", err)
		}
		b.replyOK(r, count, "")
		return
	}
	out, err := b.runMagic(ctx, sub, args)
	if err != nil {
		b.replyError(r, count, "AgentMagicError", err.Error())
		return
	}
	if out != "" {
		if err := r.Publish(wire.MsgStream, map[string]any{"name": "stdout", "text": out + "\n"}); err != nil {
			b.log.Debug("publish magic output", "error", err)
		}
	}
	b.replyOK(r, count, "")
}

func (b *Bridge) runMagic(ctx context.Context, sub string, args []string) (string, error) {
	h := b.host
	switch sub {
	case "help":
		if len(b.cfg.Problems) > 0 {
			return magicHelp + "\n\nConfiguration problems (these settings are at their defaults):\n  " +
				strings.Join(b.cfg.Problems, "\n  "), nil
		}
		return magicHelp, nil
	case "new":
		info, err := h.NewSession(ctx)
		if err != nil {
			return "", err
		}
		return "New session " + info.ID, nil
	case "resume":
		if len(args) != 1 {
			return "", fmt.Errorf("usage: %%agent resume ID")
		}
		info, err := h.Resume(ctx, args[0])
		if err != nil {
			return "", err
		}
		out := fmt.Sprintf("Resumed session %s (%d messages, model %s).", info.ID, info.Messages, orNone(info.Model))
		if info.ForkOf != "" {
			out = fmt.Sprintf("Session %s is %s's, %s: this is your own fork of it, %s (%d messages, model %s).",
				messages.ShortID(info.ForkOf), info.ForkOfOwner, info.ForkReason(), info.ID, info.Messages, orNone(info.Model))
		}
		if info.Interrupted {
			out += "\n" + agent.ResumeText
		}
		if info.Elsewhere != "" {
			out += fmt.Sprintf("\nIt was started in %s; this kernel works in %s. Its rewinds here restore the "+
				"conversation and the kernel, never files: rewind it from its own directory for those.", info.Elsewhere, h.Workspace())
		}
		return out, nil
	case "sessions":
		all := slices.Contains(args, "--all")
		args = slices.DeleteFunc(args, func(a string) bool { return a == "--all" })
		return b.listSessions(ctx, strings.Join(args, " "), all)
	case "mcp":
		return b.mcpMagic(ctx, args)
	case "attach":
		return b.attachMagic(args)
	case "notebook":
		return b.notebookMagic(args)
	}
	if _, err := h.Current(ctx); err != nil {
		return "", err
	}
	switch sub {
	case "history":
		return historyMagic(h.Conversation().UI(), args)
	case "model":
		if len(args) == 0 {
			if m := h.Models().Model(); m != "" {
				return "Model: " + m, nil
			}
			return "No model configured. " + agent.NoModelHelp, nil
		}
		if err := h.Models().Set(ctx, args[0]); err != nil {
			return "", err
		}
		return "Model: " + h.Models().Model(), nil
	case "rules":
		return formatRules(h.Modes().Rules(ctx)), nil
	case "title":
		if len(args) > 0 {
			if err := h.Conversation().SetTitle(ctx, strings.Join(args, " ")); err != nil {
				return "", err
			}
		}
		t, err := h.Conversation().Title(ctx)
		if err != nil {
			return "", err
		}
		return "Title: " + t, nil
	case "effort":
		if len(args) > 0 {
			e, err := provider.ParseEffort(args[0])
			if err != nil {
				return "", err
			}
			if err := h.Models().SetEffort(ctx, e); err != nil {
				return "", err
			}
		}
		if e := h.Models().Effort(); e != "" {
			return fmt.Sprintf("Effort: %s (Anthropic: a %d-token thinking budget; OpenAI: reasoning_effort %s)", e, provider.EffortBudget(e), e), nil
		}
		return "Effort: the model's default (no extended thinking, no reasoning_effort sent)", nil
	case "use":
		if len(args) == 0 {
			return "Usage: %agent use claude|codex|gemini|COMMAND [ARGS...] — an external ACP agent answers the prompts " +
				"(%agent model MODEL goes back to a model).", nil
		}
		if err := h.Models().Set(ctx, acpagent.Model(strings.Join(args, " "))); err != nil {
			return "", err
		}
		return "Agent: " + strings.Join(args, " ") + " (ACP). Its turns are stored in this session; it runs code in this " +
			"kernel through agentkernel's MCP server, and its permission requests are asked here.", nil
	case "mode":
		if len(args) == 0 {
			return formatModes(h), nil
		}
		m, err := h.Modes().SetAgent(ctx, args[0])
		if err != nil {
			// Notebooks written when %agent mode also took permission
			// modes go on working; an agent mode of that name wins.
			if pm, perr := agent.ParsePermissionMode(args[0]); perr == nil {
				return setPermissions(ctx, h, pm, " (%agent permissions sets it; %agent mode is the agent mode)")
			}
			return "", err
		}
		return fmt.Sprintf("Mode: %s — %s (permission mode %s)", m.Name, m.Description, h.Modes().Permission()), nil
	case "permissions":
		if len(args) == 0 {
			return fmt.Sprintf("Permission mode: %s (of %s)", h.Modes().Permission(), strings.Join(permissionModes, ", ")), nil
		}
		pm, err := agent.ParsePermissionMode(args[0])
		if err != nil {
			return "", err
		}
		return setPermissions(ctx, h, pm, "")
	case "cost":
		sess, err := h.Conversation().Cost(ctx)
		if err != nil {
			return "", err
		}
		u := sess.Usage
		return fmt.Sprintf("Session %s: %d input, %d output tokens (cache %d read, %d written), $%.4f.",
			messages.ShortID(sess.ID), u.TokensIn, u.TokensOut, u.CacheReads, u.CacheWrites, u.Cost), nil
	case "export":
		if len(args) != 1 {
			return "", fmt.Errorf("usage: %%agent export FILE")
		}
		path, err := h.Conversation().Export(ctx, args[0])
		if err != nil {
			return "", err
		}
		info, _ := h.Current(ctx)
		return "Exported session " + messages.ShortID(info.ID) + " to " + path, nil
	}
	return "", fmt.Errorf("unknown subcommand %q\n%s", sub, magicHelp)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// listSessions is %agent sessions [--all] [TEXT]: the user's sessions of
// this workspace, or with all every one they may see, with whose each is
// and where it was started.
func (b *Bridge) listSessions(ctx context.Context, search string, all bool) (string, error) {
	list, err := b.host.Sessions(ctx, search, 50, all)
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		if all {
			return "No sessions.", nil
		}
		return fmt.Sprintf("No sessions of yours in %s (%%agent sessions --all lists all you may see).", b.host.Workspace()), nil
	}
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	head := "ID\tUPDATED\tMESSAGES\tMODEL\tTITLE"
	if all {
		head += "\tOWNER\tWORKSPACE"
	}
	fmt.Fprintln(w, head)
	for _, s := range list {
		line := fmt.Sprintf("%s\t%s\t%d\t%s\t%s", messages.ShortID(s.ID), s.UpdatedAt.Local().Format("2006-01-02 15:04"), s.MessageCount, s.Model, s.Title)
		if all {
			line += "\t" + orNone(s.Whose()) + "\t" + orNone(messages.Printable(s.Workspace, 0))
		}
		fmt.Fprintln(w, line)
	}
	w.Flush()
	out := strings.TrimRight(sb.String(), "\n")
	if !all {
		out += fmt.Sprintf("\n(your sessions of %s; --all for all you may see)", b.host.Workspace())
	}
	return out, nil
}

// historyMagic is %agent history [--last N] [--role user|assistant|tool|system]:
// the messages that match, numbered as in the whole history.
func historyMagic(ui []messages.UIMessage, args []string) (string, error) {
	last, role := 0, ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case (a == "--last" || a == "--role") && i+1 < len(args):
			if a == "--last" {
				n, err := strconv.Atoi(args[i+1])
				if err != nil || n < 0 {
					return "", fmt.Errorf("%%agent history: --last %q: want a number", args[i+1])
				}
				last = n
			} else {
				role = args[i+1]
				if !slices.Contains([]string{"user", "assistant", "tool", "system"}, role) {
					return "", fmt.Errorf("%%agent history: --role %q: want user, assistant, tool or system", role)
				}
			}
			i++
		default:
			return "", fmt.Errorf("%%agent history: unexpected %q (usage: %%agent history [--last N] [--role user|assistant|tool|system])", a)
		}
	}
	var at []int
	for i, m := range ui {
		r := messages.RoleOf(m, i == 0)
		if role == "" || string(r) == role {
			at = append(at, i)
		}
	}
	if last > 0 && len(at) > last {
		at = at[len(at)-last:]
	}
	return formatHistoryAt(ui, at), nil
}

// formatHistoryAt lists the messages of ui at the indexes at, with #N and
// ts for rewind and edit.
func formatHistoryAt(ui []messages.UIMessage, at []int) string {
	if len(ui) == 0 {
		return "The session is empty."
	}
	if len(at) == 0 {
		return "No messages match."
	}
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "#\tTS\tKIND\tTEXT")
	for _, i := range at {
		m := ui[i]
		kind := "say:" + string(m.Say)
		if m.Type == messages.TypeAsk {
			kind = "ask:" + string(m.Ask)
		}
		text := strings.Join(strings.Fields(m.Text), " ")
		if m.Say == messages.SayAPIReqFinished {
			text = requestMeta(m.Text)
		}
		if r := []rune(text); len(r) > 70 {
			text = string(r[:70]) + "…"
		}
		fmt.Fprintf(w, "#%d\t%d\t%s\t%s\n", i, m.TS, kind, text)
	}
	w.Flush()
	return strings.TrimRight(sb.String(), "\n")
}

// magicEdit replaces a prompt and runs the new text as the cell's prompt.
func (b *Bridge) magicEdit(ctx context.Context, r *kernel.Request, line string, count int) {
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "%agent"))
	rest = strings.TrimSpace(strings.TrimPrefix(rest, "edit"))
	ref, text, _ := strings.Cut(rest, " ")
	text = strings.TrimSpace(text)
	if ref == "" || text == "" {
		b.replyError(r, count, "AgentMagicError", "usage: %agent edit TS|#N TEXT")
		return
	}
	if _, err := b.host.Current(ctx); err != nil {
		b.replyError(r, count, "AgentMagicError", err.Error())
		return
	}
	ts, err := b.host.Conversation().Ref(ref)
	if err != nil {
		b.replyError(r, count, "AgentMagicError", err.Error())
		return
	}
	rw, err := b.host.World().Rewind(ctx, ts, session.RewindOptions{ConfirmReplay: b.confirmReplay(r)})
	if err != nil {
		b.replyError(r, count, "AgentMagicError", err.Error())
		return
	}
	if err := r.Publish(wire.MsgStream, wire.Stream{Name: "stdout", Text: rw.Summary() + "\n"}); err != nil {
		b.log.Debug("publish rewind", "error", err)
	}
	b.prompt(ctx, r, text, count)
}

// magicRewind runs %agent rewind and %agent fork: REF and the options in
// any order.
func (b *Bridge) magicRewind(ctx context.Context, r *kernel.Request, sub string, args []string) (string, error) {
	usage := fmt.Errorf("usage: %%agent %s TS|#N [--conversation-only|--no-files|--no-kernel] [--force]", sub)
	opts := session.RewindOptions{ConfirmReplay: b.confirmReplay(r)}
	ref := ""
	for _, a := range args {
		switch a {
		case "--conversation-only":
			opts.ConversationOnly = true
		case "--no-files":
			opts.NoFiles = true
		case "--no-kernel":
			opts.NoKernel = true
		case "--force":
			opts.Force = true
		default:
			if ref != "" || strings.HasPrefix(a, "-") {
				return "", usage
			}
			ref = a
		}
	}
	if ref == "" {
		return "", usage
	}
	if _, err := b.host.Current(ctx); err != nil {
		return "", err
	}
	ts, err := b.host.Conversation().Ref(ref)
	if err != nil {
		return "", err
	}
	if sub == "fork" {
		info, rw, err := b.host.World().Fork(ctx, ts, opts)
		if err != nil {
			return "", err
		}
		out := fmt.Sprintf("Forked: new session %s holds the %d messages before %s; the original is unchanged.", info.ID, info.Messages, ref)
		if rw.Files != nil || len(rw.Kernel) > 0 || rw.KernelNote != "" {
			summary := rw.Summary()
			if _, rest, ok := strings.Cut(summary, "\n"); ok {
				out += "\n" + rest
			}
		}
		return out, nil
	}
	rw, err := b.host.World().Rewind(ctx, ts, opts)
	if err != nil {
		return "", err
	}
	return rw.Summary(), nil
}

// confirmReplay asks, before a rewind restarts the kernel and replays
// code, on the frontend's stdin when it allows it; headless, the approval
// policy decides (all: yes).
func (b *Bridge) confirmReplay(r *kernel.Request) func(context.Context, []session.CodeRun) bool {
	return func(ctx context.Context, code []session.CodeRun) bool {
		if !r.AllowStdin() {
			return b.cfg.Approve == agent.ApproveAll
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "The kernel will be restarted and %d cells run again:\n", len(code))
		for i, c := range code {
			fmt.Fprintf(&sb, "  [%d] %s\n", i+1, firstLineOf(c.Code, 70))
		}
		sb.WriteString("Replay? [y]es / [n]o (the kernel keeps its current state): ")
		prompt := sb.String()
		for {
			in, err := r.Input(ctx, prompt, false)
			if err != nil {
				return false
			}
			switch strings.ToLower(strings.TrimSpace(in)) {
			case "y", "yes":
				return true
			case "n", "no":
				return false
			}
			prompt = "Please answer y (yes) or n (no): "
		}
	}
}

func firstLineOf(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if rs := []rune(s); len(rs) > n {
		s = string(rs[:n]) + "…"
	}
	return s
}

// formatRules is %agent rules: the rule files that apply, those that do
// not (and why), and the files that could not be used.
func formatRules(applying, all []rules.Rule, c rules.Context, problems []error) string {
	var b strings.Builder
	scope := func(r rules.Rule) string {
		var parts []string
		for _, p := range []struct {
			name string
			vals []string
		}{{"kernels", r.Kernels}, {"modes", r.Modes}, {"paths", r.Paths}} {
			if len(p.vals) > 0 {
				parts = append(parts, p.name+": "+strings.Join(p.vals, ", "))
			}
		}
		if len(parts) == 0 {
			return r.Scope
		}
		return r.Scope + "; " + strings.Join(parts, "; ")
	}
	fmt.Fprintf(&b, "Rules for the next turn (kernel %s, mode %s", cmp.Or(c.Language, c.Kernel, "not started"), cmp.Or(c.Mode, "default"))
	if c.Notebook != "" {
		fmt.Fprintf(&b, ", notebook %s", c.Notebook)
	}
	b.WriteString("):\n")
	if len(applying) == 0 {
		b.WriteString("  none\n")
	}
	for _, r := range applying {
		fmt.Fprintf(&b, "  %s (%s)\n", r.Path, scope(r))
	}
	var skipped []rules.Rule
	for _, r := range all {
		if !slices.ContainsFunc(applying, func(a rules.Rule) bool { return a.Path == r.Path }) {
			skipped = append(skipped, r)
		}
	}
	if len(skipped) > 0 {
		b.WriteString("Not applying here:\n")
		for _, r := range skipped {
			fmt.Fprintf(&b, "  %s (%s)\n", r.Path, scope(r))
		}
	}
	for _, err := range problems {
		fmt.Fprintf(&b, "Problem: %v\n", err)
	}
	if len(all) == 0 && len(problems) == 0 {
		b.WriteString("Write instructions in AGENTS.md or CLAUDE.md (the workspace, its repository, or the config directory), " +
			"or scoped ones in .agentkernel/rules/*.md with front matter (kernels:, modes:, paths:).\n")
	}
	return b.String()
}

// permissionModes are the permission modes' names, for %agent permissions.
var permissionModes = []string{string(agent.PermissionDefault), string(agent.PermissionAcceptEdits),
	string(agent.PermissionBypass), string(agent.PermissionPlan)}

// setPermissions is %agent permissions MODE.
func setPermissions(ctx context.Context, h *session.Host, m agent.PermissionMode, note string) (string, error) {
	if err := h.Modes().SetPermission(ctx, m); err != nil {
		return "", err
	}
	return "Permission mode: " + string(m) + note, nil
}

// formatModes is %agent mode: the agent mode and the permission mode, and
// the modes there are.
func formatModes(h *session.Host) string {
	var b strings.Builder
	cur := h.Modes().Agent()
	fmt.Fprintf(&b, "Mode: %s; permission mode: %s\n\nModes (%%agent mode NAME):\n", cur.Name, h.Modes().Permission())
	modes, problems := h.Modes().AgentModes()
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, m := range modes {
		mark := " "
		if m.Name == cur.Name {
			mark = "*"
		}
		tools := "all tools"
		if len(m.Tools) > 0 {
			tools = strings.Join(m.Tools, ", ")
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\n", mark, m.Name, m.Description, tools, m.Source)
	}
	tw.Flush()
	fmt.Fprintf(&b, "\nPermission modes (%%agent permissions MODE): %s\n", strings.Join(permissionModes, ", "))
	for _, err := range problems {
		fmt.Fprintf(&b, "Problem: %v\n", err)
	}
	return b.String()
}

// requestMeta is an api_req_finished message as a line: the model, its
// tokens, cost, latency to the first token and duration.
func requestMeta(text string) string {
	var u struct {
		Model                 string
		TokensIn, TokensOut   int
		Cost                  float64
		LatencyMs, DurationMs *int64
	}
	if json.Unmarshal([]byte(text), &u) != nil {
		return text
	}
	out := fmt.Sprintf("%d in, %d out, $%.4f", u.TokensIn, u.TokensOut, u.Cost)
	if u.Model != "" {
		out = u.Model + ": " + out
	}
	if u.LatencyMs != nil {
		out += fmt.Sprintf(", first token %.2f s", float64(*u.LatencyMs)/1000)
	}
	if u.DurationMs != nil {
		out += fmt.Sprintf(", %.1f s", float64(*u.DurationMs)/1000)
	}
	return out
}

// notebookMagic is %agent notebook [FILE|off]: where the notebook tools
// work, or the file they work on while no frontend shows a notebook.
func (b *Bridge) notebookMagic(args []string) (string, error) {
	n := b.notebooks
	switch {
	case len(args) > 1:
		return "", fmt.Errorf("usage: %%agent notebook [FILE|off]")
	case len(args) == 1 && args[0] == "off":
		n.setFile(nil)
	case len(args) == 1:
		f, err := b.host.Tools().OpenNotebookFile(args[0])
		if err != nil {
			return "", err
		}
		n.setFile(f)
	}
	switch c := n.Current().(type) {
	case nil:
		return "Notebook: none. No frontend with the agentkernel extension (JupyterLab 4, Notebook 7) shows a " +
			"notebook on this kernel; %agent notebook FILE lets the agent work on an .ipynb on disk.", nil
	case session.FileCells:
		return "Notebook: " + c.File() + " (on disk: each change is written at once, never over a newer file; " +
			"a frontend that opens the notebook comm takes over)", nil
	default:
		return "Notebook: " + cmp.Or(c.Path(), "unnamed") + ", in the frontend that shows it", nil
	}
}
