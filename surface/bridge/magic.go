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

// A magic is one %agent subcommand: its name, how it is called, what it
// does, and the function that runs it. magicTable is the one list of them:
// the dispatch (magic), %agent help, the completion of the subcommand
// (magicWords) and the README's check all read it, as a ServeMux is the
// one router of its handlers.
type magicCmd struct {
	name  string
	usage string // the arguments, after "%agent NAME"
	doc   string // what it does, for %agent help; lines after the first are indented under it
	run   magicRun
	// answers: run answers the cell itself when it returns no error
	// (webview shows the panel; edit goes on to run the new prompt), so
	// magic prints and replies nothing after it.
	answers bool
}

// magicRun runs a magic: what the cell prints, or why it failed.
type magicRun func(b *Bridge, ctx context.Context, c magicCall) (string, error)

// magicCall is one %agent line being run: the subcommand's name, its
// arguments, and the cell it came in (r is nil when a test runs a magic
// without one).
type magicCall struct {
	name  string
	args  []string
	line  string // the whole line, for edit's TEXT as it was typed
	r     *kernel.Request
	count int
}

// usageError is the error of a call that does not match its magic's usage.
func (c magicCall) usageError() error {
	m, _ := lookupMagic(c.name)
	return fmt.Errorf("usage: %%agent %s %s", c.name, m.usage)
}

// magicTable lists the %agent subcommands, in the order %agent help
// shows them. It is a function, not a variable, because help reads it.
func magicTable() []magicCmd {
	return []magicCmd{
		{name: "new", doc: "start a new session", run: (*Bridge).newMagic},
		{name: "sessions", usage: "[--all] [TEXT]", doc: "your sessions of this directory (--all: all you may see), matching TEXT",
			run: (*Bridge).sessionsMagic},
		{name: "resume", usage: "ID", doc: "continue a stored session (an id prefix is enough; another user's is forked)",
			run: (*Bridge).resumeMagic},
		{name: "history", usage: "[--last N] [--role R]",
			doc: "show this session's messages with their #N and ts (R: user, assistant, tool, system)",
			run: inSession(func(b *Bridge, _ context.Context, c magicCall) (string, error) {
				return historyMagic(b.host.Conversation().UI(), c.args)
			})},
		{name: "rewind", usage: "TS|#N [--conversation-only|--no-files|--no-kernel] [--force]",
			doc: "go back to before that message: the conversation, the files\nthe agent changed, and the kernel (restarted, its code replayed)",
			run: (*Bridge).magicRewind},
		{name: "fork", usage: "TS|#N", doc: "a new session holding the history before that message", run: (*Bridge).magicRewind},
		{name: "edit", usage: "TS|#N TEXT", doc: "replace a prompt of yours with TEXT and run it again",
			run: (*Bridge).magicEdit, answers: true},
		{name: "model", usage: "[NAME]",
			doc: "show or set the model (openai:gpt-4.1, anthropic:claude-sonnet-4-5, ollama:NAME, replay:FILE)",
			run: inSession((*Bridge).modelMagic)},
		{name: "use", usage: "AGENT", doc: "let an ACP agent answer (claude, codex, gemini, or its command line); it runs code here",
			run: inSession((*Bridge).useMagic)},
		{name: "title", usage: "[TEXT]", doc: "show or set the session's title (the panel's header, sessions list)",
			run: inSession((*Bridge).titleMagic)},
		{name: "rules", doc: "the instructions the agent is given: AGENTS.md, CLAUDE.md, .agentkernel/rules/*.md",
			run: inSession(func(b *Bridge, ctx context.Context, _ magicCall) (string, error) {
				return formatRules(b.host.Modes().Rules(ctx)), nil
			})},
		{name: "effort", usage: "[LEVEL]", doc: "show or set how hard the model thinks: low, medium, high, off",
			run: inSession((*Bridge).effortMagic)},
		{name: "mode", usage: "[NAME]", doc: "show or set the agent mode: code, ask, architect, debug, yours (.agentkernel/modes)",
			run: inSession((*Bridge).modeMagic)},
		{name: "permissions", usage: "[MODE]", doc: "show or set the permission mode: " + strings.Join(permissionModes, ", "),
			run: inSession((*Bridge).permissionsMagic)},
		{name: "cost", doc: "tokens and cost of this session", run: inSession((*Bridge).costMagic)},
		{name: "export", usage: "FILE", doc: "write this session: FILE.ipynb as a notebook, else both histories as JSONL",
			run: inSession((*Bridge).exportMagic)},
		{name: "notebook", usage: "[FILE|off]",
			doc: "where the agent's notebook tools work: the notebook a frontend shows\n(JupyterLab, Notebook 7), else FILE (an .ipynb changed on disk: nbclient, papermill)",
			run: func(b *Bridge, _ context.Context, c magicCall) (string, error) { return b.notebookMagic(c.args) }},
		{name: "attach", usage: "[FILE ...|clear]",
			doc: "images (PNG, JPEG, GIF, WebP) to send with your next prompt; list or drop them",
			run: func(b *Bridge, _ context.Context, c magicCall) (string, error) { return b.attachMagic(c.args) }},
		{name: "webview", usage: "[stop]", doc: "show the live web panel (link and IFrame); stop it", answers: true,
			run: func(b *Bridge, ctx context.Context, c magicCall) (string, error) {
				b.magicWebview(ctx, c.r, c.args, c.count)
				return "", nil
			}},
		{name: "mcp", usage: "[restart [NAME]|serve|stop]",
			doc: "the MCP servers: status, transport, tools, errors; restart one or all;\nserve: serve this kernel (its code, sessions and the open notebook) to MCP\n" +
				"clients such as Claude Code: a loopback URL and a token; stop: stop it",
			run: func(b *Bridge, ctx context.Context, c magicCall) (string, error) { return b.mcpMagic(ctx, c.args) }},
		{name: "help", doc: "this list", run: (*Bridge).helpMagic},
	}
}

// lookupMagic finds the magic called name.
func lookupMagic(name string) (magicCmd, bool) {
	table := magicTable()
	i := slices.IndexFunc(table, func(m magicCmd) bool { return m.name == name })
	if i < 0 {
		return magicCmd{}, false
	}
	return table[i], true
}

// magicWords are the subcommands' names, for completion.
var magicWords = func() []string {
	var names []string
	for _, m := range magicTable() {
		names = append(names, m.name)
	}
	return names
}()

// magicHelp is %agent help's list: each magic's usage, and what it does
// beside it (under it when the usage is too long), continued lines
// indented to the same column.
func magicHelp() string {
	const col = 24
	var lines []string
	for _, m := range magicTable() {
		use := strings.TrimSpace("%agent " + m.name + " " + m.usage)
		doc := strings.ReplaceAll(m.doc, "\n", "\n"+strings.Repeat(" ", col))
		if len(use)+2 > col {
			lines = append(lines, use, strings.Repeat(" ", col)+doc)
		} else {
			lines = append(lines, use+strings.Repeat(" ", col-len(use))+doc)
		}
	}
	return strings.Join(lines, "\n")
}

// magic runs an %agent line and answers the cell.
func (b *Bridge) magic(ctx context.Context, r *kernel.Request, line string, count int) {
	c := magicCall{name: "help", line: line, r: r, count: count}
	if fields := strings.Fields(strings.TrimSpace(line)); len(fields) > 1 {
		c.name, c.args = fields[1], fields[2:]
	}
	m, ok := lookupMagic(c.name)
	if !ok {
		b.replyError(r, count, "AgentMagicError", fmt.Sprintf("unknown subcommand %q\n%s", c.name, magicHelp()))
		return
	}
	out, err := m.run(b, ctx, c)
	if err != nil {
		b.replyError(r, count, "AgentMagicError", err.Error())
		return
	}
	if m.answers {
		return
	}
	if out != "" {
		if err := r.Publish(wire.MsgStream, wire.Stream{Name: "stdout", Text: out + "\n"}); err != nil {
			b.log.Debug("publish magic output", "error", err)
		}
	}
	b.replyOK(r, count, "")
}

// inSession runs a magic in the current session, which it starts (or
// resumes) first.
func inSession(run magicRun) magicRun {
	return func(b *Bridge, ctx context.Context, c magicCall) (string, error) {
		if _, err := b.host.Current(ctx); err != nil {
			return "", err
		}
		return run(b, ctx, c)
	}
}

// helpMagic is %agent help: the magics, and the configuration's problems
// if it has any.
func (b *Bridge) helpMagic(context.Context, magicCall) (string, error) {
	if len(b.cfg.Problems) > 0 {
		return magicHelp() + "\n\nConfiguration problems (these settings are at their defaults):\n  " +
			strings.Join(b.cfg.Problems, "\n  "), nil
	}
	return magicHelp(), nil
}

// newMagic is %agent new.
func (b *Bridge) newMagic(ctx context.Context, _ magicCall) (string, error) {
	info, err := b.host.NewSession(ctx)
	if err != nil {
		return "", err
	}
	return "New session " + info.ID, nil
}

// sessionsMagic is %agent sessions [--all] [TEXT].
func (b *Bridge) sessionsMagic(ctx context.Context, c magicCall) (string, error) {
	all := slices.Contains(c.args, "--all")
	search := slices.DeleteFunc(slices.Clone(c.args), func(a string) bool { return a == "--all" })
	return b.listSessions(ctx, strings.Join(search, " "), all)
}

// resumeMagic is %agent resume ID: the session continued, or the user's
// own fork of another's, and what the user should know of it.
func (b *Bridge) resumeMagic(ctx context.Context, c magicCall) (string, error) {
	if len(c.args) != 1 {
		return "", c.usageError()
	}
	info, err := b.host.Resume(ctx, c.args[0])
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
			"conversation and the kernel, never files: rewind it from its own directory for those.", info.Elsewhere, b.host.Workspace())
	}
	return out, nil
}

// modelMagic is %agent model [NAME].
func (b *Bridge) modelMagic(ctx context.Context, c magicCall) (string, error) {
	models := b.host.Models()
	if len(c.args) == 0 {
		if m := models.Model(); m != "" {
			return "Model: " + m, nil
		}
		return "No model configured. " + agent.NoModelHelp, nil
	}
	if err := models.Set(ctx, c.args[0]); err != nil {
		return "", err
	}
	return "Model: " + models.Model(), nil
}

// useMagic is %agent use AGENT: an external ACP agent answers the prompts.
func (b *Bridge) useMagic(ctx context.Context, c magicCall) (string, error) {
	if len(c.args) == 0 {
		return "Usage: %agent use claude|codex|gemini|COMMAND [ARGS...] — an external ACP agent answers the prompts " +
			"(%agent model MODEL goes back to a model).", nil
	}
	cmd := strings.Join(c.args, " ")
	if err := b.host.Models().Set(ctx, acpagent.Model(cmd)); err != nil {
		return "", err
	}
	return "Agent: " + cmd + " (ACP). Its turns are stored in this session; it runs code in this " +
		"kernel through agentkernel's MCP server, and its permission requests are asked here.", nil
}

// titleMagic is %agent title [TEXT].
func (b *Bridge) titleMagic(ctx context.Context, c magicCall) (string, error) {
	conv := b.host.Conversation()
	if len(c.args) > 0 {
		if err := conv.SetTitle(ctx, strings.Join(c.args, " ")); err != nil {
			return "", err
		}
	}
	t, err := conv.Title(ctx)
	if err != nil {
		return "", err
	}
	return "Title: " + t, nil
}

// effortMagic is %agent effort [LEVEL].
func (b *Bridge) effortMagic(ctx context.Context, c magicCall) (string, error) {
	models := b.host.Models()
	if len(c.args) > 0 {
		e, err := provider.ParseEffort(c.args[0])
		if err != nil {
			return "", err
		}
		if err := models.SetEffort(ctx, e); err != nil {
			return "", err
		}
	}
	if e := models.Effort(); e != "" {
		return fmt.Sprintf("Effort: %s (Anthropic: a %d-token thinking budget; OpenAI: reasoning_effort %s)", e, provider.EffortBudget(e), e), nil
	}
	return "Effort: the model's default (no extended thinking, no reasoning_effort sent)", nil
}

// modeMagic is %agent mode [NAME]: the modes there are, or a switch to
// the agent mode called NAME. It takes agent modes only: the name of a
// permission mode that no agent mode has is an error that points to
// %agent permissions.
func (b *Bridge) modeMagic(ctx context.Context, c magicCall) (string, error) {
	modes := b.host.Modes()
	if len(c.args) == 0 {
		return formatModes(b.host), nil
	}
	name := c.args[0]
	if _, err := agent.ParsePermissionMode(name); err == nil {
		agentModes, _ := modes.AgentModes()
		if _, ok := rules.FindMode(agentModes, name); !ok {
			names := make([]string, 0, len(agentModes))
			for _, m := range agentModes {
				names = append(names, m.Name)
			}
			return "", fmt.Errorf("%s is not an agent mode (there are %s); permission modes are set with %%agent permissions %s",
				name, strings.Join(names, ", "), name)
		}
	}
	m, err := modes.SetAgent(ctx, name)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Mode: %s — %s (permission mode %s)", m.Name, m.Description, modes.Permission()), nil
}

// permissionsMagic is %agent permissions [MODE].
func (b *Bridge) permissionsMagic(ctx context.Context, c magicCall) (string, error) {
	modes := b.host.Modes()
	if len(c.args) == 0 {
		return fmt.Sprintf("Permission mode: %s (of %s)", modes.Permission(), strings.Join(permissionModes, ", ")), nil
	}
	pm, err := agent.ParsePermissionMode(c.args[0])
	if err != nil {
		return "", err
	}
	if err := modes.SetPermission(ctx, pm); err != nil {
		return "", err
	}
	return "Permission mode: " + string(pm), nil
}

// costMagic is %agent cost.
func (b *Bridge) costMagic(ctx context.Context, _ magicCall) (string, error) {
	sess, err := b.host.Conversation().Cost(ctx)
	if err != nil {
		return "", err
	}
	u := sess.Usage
	return fmt.Sprintf("Session %s: %d input, %d output tokens (cache %d read, %d written), $%.4f.",
		messages.ShortID(sess.ID), u.TokensIn, u.TokensOut, u.CacheReads, u.CacheWrites, u.Cost), nil
}

// exportMagic is %agent export FILE.
func (b *Bridge) exportMagic(ctx context.Context, c magicCall) (string, error) {
	if len(c.args) != 1 {
		return "", c.usageError()
	}
	path, err := b.host.Conversation().Export(ctx, c.args[0])
	if err != nil {
		return "", err
	}
	info, _ := b.host.Current(ctx)
	return "Exported session " + messages.ShortID(info.ID) + " to " + path, nil
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
