package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/store"
)

// Conversation is the current session's record: its two histories, its
// title and cost, and its export. It holds no state of its own.
type Conversation struct{ h *Host }

// UI returns the current session's UI history (empty without one).
func (cv *Conversation) UI() []messages.UIMessage {
	h := cv.h
	c := h.active()
	if c == nil {
		return nil
	}
	return c.task.UI()
}

// API returns the current session's API history (empty without one).
func (cv *Conversation) API() []messages.APIMessage {
	h := cv.h
	c := h.active()
	if c == nil {
		return nil
	}
	return c.task.API()
}

// Ref turns "#N" (a position in History) or a ts into the ts of a message
// of the current session.
func (cv *Conversation) Ref(ref string) (int64, error) {
	ui := cv.UI()
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
	for _, m := range ui {
		if m.TS == ts {
			return ts, nil
		}
	}
	return 0, fmt.Errorf("no message with ts %d in this session (see %%agent history)", ts)
}

// Cost returns the current session's stored usage.
func (cv *Conversation) Cost(ctx context.Context) (store.Session, error) {
	h := cv.h
	c, err := h.session(ctx)
	if err != nil {
		return store.Session{}, err
	}
	st, err := h.Store(ctx)
	if err != nil {
		return store.Session{}, err
	}
	return st.GetSession(ctx, c.id)
}

// NotebookWriter writes a stored session (its record and both histories)
// as a Jupyter notebook. The host cannot build notebooks itself (package
// notebooks sits above it); cmd wires one in.
type NotebookWriter func(w io.Writer, s store.Session, h store.Histories) error

// Export writes the current session to path, relative to the workspace,
// replacing it atomically: a path ending in .ipynb gets a notebook of the
// session (Config.Notebook), any other both histories as JSONL (what
// import reads). It returns the path written.
func (cv *Conversation) Export(ctx context.Context, path string) (string, error) {
	h := cv.h
	c, err := h.session(ctx)
	if err != nil {
		return "", err
	}
	st, err := h.Store(ctx)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(h.cfg.Workspace, path)
	}
	write := func(w io.Writer) error { return st.Export(ctx, c.id, w) }
	if strings.EqualFold(filepath.Ext(path), ".ipynb") {
		if h.cfg.Notebook == nil {
			return "", errors.New("session: export: notebooks cannot be written here; use a .jsonl file")
		}
		write = func(w io.Writer) error {
			if err := st.Flush(ctx); err != nil {
				return err
			}
			s, err := st.GetSession(ctx, c.id)
			if err != nil {
				return err
			}
			hist, err := st.Load(ctx, c.id)
			if err != nil {
				return err
			}
			return h.cfg.Notebook(w, s, hist)
		}
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".export-*")
	if err != nil {
		return "", fmt.Errorf("session: export: %w", err)
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return "", fmt.Errorf("session: export: %w", err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return "", fmt.Errorf("session: export: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("session: export: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return "", fmt.Errorf("session: export: %w", err)
	}
	return path, nil
}

// Sessions lists the user's own stored live sessions of the host's
// workspace (with all, every session they may see: of every workspace,
// and those other users shared with them) whose title or id contains
// search, newest first.
func (h *Host) Sessions(ctx context.Context, search string, limit int, all bool) ([]store.Session, error) {
	st, err := h.Store(ctx)
	if err != nil {
		return nil, err
	}
	o := store.ListOptions{Search: search, Limit: limit, Workspace: h.cfg.Workspace, Mine: true}
	if all {
		o.Workspace, o.Mine = "", false
	}
	return st.ListSessions(ctx, o)
}

// Search runs a full-text search over the messages of the user's own
// sessions of the host's workspace (with all, of every session they may
// see).
func (h *Host) Search(ctx context.Context, query string, limit int, all bool) ([]store.SearchHit, error) {
	st, err := h.Store(ctx)
	if err != nil {
		return nil, err
	}
	o := store.SearchOptions{Limit: limit, Workspace: h.cfg.Workspace, Mine: true}
	if all {
		o.Workspace, o.Mine = "", false
	}
	return st.Search(ctx, query, o)
}

// Title returns the current session's title ("" without a session).
func (cv *Conversation) Title(ctx context.Context) (string, error) {
	h := cv.h
	c := h.active()
	if c == nil {
		return "", nil
	}
	st, err := h.Store(ctx)
	if err != nil {
		return "", err
	}
	s, err := st.GetSession(ctx, c.id)
	if err != nil {
		return "", err
	}
	return s.Title, nil
}

// SetTitle names the current session (%agent title, the panel, sessions
// rename); "" drops the name, and the title is derived again from the
// first prompt. Every display of the session is told.
func (cv *Conversation) SetTitle(ctx context.Context, title string) error {
	h := cv.h
	c, err := h.session(ctx)
	if err != nil {
		return err
	}
	st, err := h.Store(ctx)
	if err != nil {
		return err
	}
	title = strings.Join(strings.Fields(title), " ")
	h.logCommand(ctx, c, "title", title)
	if err := st.UpdateSession(ctx, c.id, store.SessionUpdate{DisplayName: &title}); err != nil {
		return err
	}
	h.lis.Emit(agent.Event{Kind: EventSettingsChanged})
	return nil
}

// Snapshot is the current session's state, for a display that mirrors it.
type Snapshot struct {
	ID, Title  string
	Messages   []messages.UIMessage
	Mode       agent.PermissionMode
	Model      string
	Totals     agent.Totals
	State      agent.State
	PendingAsk *messages.UIMessage
}

// Snapshot returns the current session's state, creating a session on
// first use.
func (cv *Conversation) Snapshot(ctx context.Context) (Snapshot, error) {
	h := cv.h
	c, err := h.session(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	t := c.task
	s := Snapshot{ID: c.id, Messages: t.UI(), Mode: c.policy.PermissionMode(), Model: c.modelName(), Totals: t.Totals(), State: t.State()}
	if ask, ok := t.PendingAsk(); ok {
		s.PendingAsk = &ask
	}
	if st, err := h.Store(ctx); err == nil {
		if info, err := st.GetSession(ctx, c.id); err == nil {
			s.Title = info.Title
		}
	}
	return s, nil
}
