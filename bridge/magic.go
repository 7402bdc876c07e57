package bridge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/rewind"
	"github.com/agentkernel/agentkernel/store"
)

// magicHelp lists the %agent subcommands.
const magicHelp = `%agent new              start a new session
%agent sessions [TEXT]  list sessions (optionally matching TEXT)
%agent resume ID        continue a stored session (an id prefix is enough)
%agent history          show this session's messages with their #N and ts
%agent rewind TS|#N     remove that message and everything after it
%agent edit TS|#N TEXT  replace a prompt of yours with TEXT and run it again
%agent model [NAME]     show or set the model (openai:gpt-4.1, anthropic:claude-sonnet-4-5, ollama:NAME, replay:FILE)
%agent mode [NAME]      show or set the permission mode (default, acceptEdits, bypassPermissions, plan)
%agent cost             tokens and cost of this session
%agent export FILE      write this session (both histories) as JSONL
%agent webview [stop]   show the live web panel (link and IFrame); stop it
%agent help             this list`

// magicWords are the subcommands, for completion.
var magicWords = []string{"new", "sessions", "resume", "history", "rewind", "edit", "model", "mode", "cost", "export", "webview", "help"}

// isMagic reports whether a cell is an %agent line magic.
func isMagic(code string) bool {
	t := strings.TrimSpace(code)
	return t == "%agent" || strings.HasPrefix(t, "%agent ") || strings.HasPrefix(t, "%agent\t")
}

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
	out, err := b.runMagic(ctx, sub, args)
	if err != nil {
		b.replyError(r, count, "AgentMagicError", err.Error())
		return
	}
	if out != "" {
		if err := r.Publish("stream", map[string]any{"name": "stdout", "text": out + "\n"}); err != nil {
			b.log.Debug("publish magic output", "error", err)
		}
	}
	b.replyOK(r, count, "")
}

func (b *Bridge) runMagic(ctx context.Context, sub string, args []string) (string, error) {
	switch sub {
	case "help":
		return magicHelp, nil
	case "new":
		b.amu.Lock()
		s, err := b.newSessionLocked(ctx, "")
		b.amu.Unlock()
		if err != nil {
			return "", err
		}
		return "New session " + s.task.SessionID(), nil
	case "resume":
		if len(args) != 1 {
			return "", fmt.Errorf("usage: %%agent resume ID")
		}
		b.amu.Lock()
		s, err := b.newSessionLocked(ctx, args[0])
		b.amu.Unlock()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Resumed session %s (%d messages).", s.task.SessionID(), len(s.task.UI())), nil
	case "sessions":
		return b.listSessions(ctx, strings.Join(args, " "))
	case "webview":
		return b.webviewMagic(ctx, args)
	}
	s, err := b.agentFor(ctx)
	if err != nil {
		return "", err
	}
	switch sub {
	case "history":
		return formatHistory(s.task.UI()), nil
	case "rewind":
		if len(args) != 1 {
			return "", fmt.Errorf("usage: %%agent rewind TS|#N")
		}
		ts, err := resolveRef(s.task.UI(), args[0])
		if err != nil {
			return "", err
		}
		before := len(s.task.UI())
		res, err := s.task.Rewind(ctx, ts, rewind.Options{})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Rewound: %d messages removed; %d shown and %d sent to the model remain.",
			before-len(res.UI), len(res.UI), len(messages.Effective(res.API))), nil
	case "model":
		if len(args) == 0 {
			b.amu.Lock()
			model := s.model
			b.amu.Unlock()
			if model == "" {
				return "No model configured. " + agent.NoModelHelp, nil
			}
			return "Model: " + model, nil
		}
		if b.cfg.OpenModel == nil {
			return "", fmt.Errorf("models cannot be changed in this kernel")
		}
		b.amu.Lock()
		p, err := b.openModelLocked(args[0])
		b.amu.Unlock()
		if err != nil {
			return "", err
		}
		s.task.SetProvider(p)
		model := args[0]
		b.amu.Lock()
		s.model = model
		b.amu.Unlock()
		providerName, _, _ := strings.Cut(model, ":")
		if err := s.store.UpdateSession(ctx, s.task.SessionID(), store.SessionUpdate{Model: &model, Provider: &providerName}); err != nil {
			return "", err
		}
		b.panelSettingsChanged(s)
		return "Model: " + model, nil
	case "mode":
		if len(args) == 0 {
			return "Permission mode: " + string(s.policy.Mode()), nil
		}
		m, err := agent.ParseMode(args[0])
		if err != nil {
			return "", err
		}
		if err := s.policy.SetMode(m); err != nil {
			return "", err
		}
		b.panelSettingsChanged(s)
		return "Permission mode: " + string(m), nil
	case "cost":
		sess, err := s.store.GetSession(ctx, s.task.SessionID())
		if err != nil {
			return "", err
		}
		u := sess.Usage
		return fmt.Sprintf("Session %s: %d input, %d output tokens (cache %d read, %d written), $%.4f.",
			shortID(sess.ID), u.TokensIn, u.TokensOut, u.CacheReads, u.CacheWrites, u.Cost), nil
	case "export":
		if len(args) != 1 {
			return "", fmt.Errorf("usage: %%agent export FILE")
		}
		return b.export(ctx, s, args[0])
	}
	return "", fmt.Errorf("unknown subcommand %q\n%s", sub, magicHelp)
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func (b *Bridge) listSessions(ctx context.Context, search string) (string, error) {
	b.amu.Lock()
	st, err := b.openStoreLocked()
	b.amu.Unlock()
	if err != nil {
		return "", err
	}
	list, err := st.ListSessions(ctx, store.ListOptions{Search: search, Limit: 50})
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "No sessions.", nil
	}
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tUPDATED\tMESSAGES\tMODEL\tTITLE")
	for _, s := range list {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\n", shortID(s.ID), s.UpdatedAt.Local().Format("2006-01-02 15:04"), s.MessageCount, s.Model, s.Title)
	}
	w.Flush()
	return strings.TrimRight(sb.String(), "\n"), nil
}

// formatHistory lists the UI history with #N and ts for rewind and edit.
func formatHistory(ui []messages.UIMessage) string {
	if len(ui) == 0 {
		return "The session is empty."
	}
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "#\tTS\tKIND\tTEXT")
	for i, m := range ui {
		kind := "say:" + string(m.Say)
		if m.Type == messages.TypeAsk {
			kind = "ask:" + string(m.Ask)
		}
		text := strings.Join(strings.Fields(m.Text), " ")
		if r := []rune(text); len(r) > 70 {
			text = string(r[:70]) + "…"
		}
		fmt.Fprintf(w, "#%d\t%d\t%s\t%s\n", i, m.TS, kind, text)
	}
	w.Flush()
	return strings.TrimRight(sb.String(), "\n")
}

// resolveRef turns "#N" or a ts into a UI message ts.
func resolveRef(ui []messages.UIMessage, ref string) (int64, error) {
	if n, ok := strings.CutPrefix(ref, "#"); ok {
		i, err := strconv.Atoi(n)
		if err != nil || i < 0 || i >= len(ui) {
			return 0, fmt.Errorf("no message %s (see %%agent history)", ref)
		}
		return ui[i].TS, nil
	}
	ts, err := strconv.ParseInt(ref, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a ts nor #N (see %%agent history)", ref)
	}
	return ts, nil
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
	s, err := b.agentFor(ctx)
	if err != nil {
		b.replyError(r, count, "AgentMagicError", err.Error())
		return
	}
	ts, err := resolveRef(s.task.UI(), ref)
	if err != nil {
		b.replyError(r, count, "AgentMagicError", err.Error())
		return
	}
	if _, err := s.task.Rewind(ctx, ts, rewind.Options{}); err != nil {
		b.replyError(r, count, "AgentMagicError", err.Error())
		return
	}
	b.prompt(ctx, r, text, count)
}

// export writes the session as JSONL.
func (b *Bridge) export(ctx context.Context, s *session, path string) (string, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(b.workspaceDir(), path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".export-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if err := s.store.Export(ctx, s.task.SessionID(), f); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return "", err
	}
	return "Exported session " + shortID(s.task.SessionID()) + " to " + path, nil
}
