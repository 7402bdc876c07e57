package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
)

// rewind is sessions rewind and sessions fork: the host's own rewind, with
// no kernel here (the session's kernel state is rebuilt when it next runs
// code) and the files in the workspace the session recorded.
func (c *sessionsCmd) rewind(ctx context.Context, ref, at string, opts session.RewindOptions, fork bool, log hclog.Logger) error {
	s, err := c.find(ctx, ref)
	if err != nil {
		return err
	}
	if err := c.st.CheckWritable(s); err != nil {
		if !fork {
			return err
		}
		return c.forkOthers(ctx, s, at)
	}
	w, err := c.app.OpenWorkspace(s.Workspace, s.Mode)
	if err != nil {
		return err
	}
	defer w.Close()
	h := w.Host
	if _, err := h.ResumeOwn(ctx, s.ID); err != nil {
		return err
	}
	ts, err := h.Conversation().Ref(at)
	if err != nil {
		return err
	}
	var (
		rw   session.Rewound
		info session.Info
	)
	if fork {
		info, rw, err = h.World().Fork(ctx, ts, opts)
	} else {
		rw, err = h.World().Rewind(ctx, ts, opts)
	}
	if err != nil {
		return err
	}
	if c.json {
		out := map[string]any{"session_id": s.ID, "removed": rw.Removed, "ui": rw.UI, "api": rw.API,
			"files": rw.Files, "kernel": rw.Kernel, "kernel_note": rw.KernelNote}
		if fork {
			out["fork_id"] = info.ID
		}
		return c.printJSON(out)
	}
	if fork {
		fmt.Fprintf(c.stdout, "Forked %s at %s: new session %s (%d messages).\n", messages.ShortID(s.ID), at, info.ID, info.Messages)
		if rw.Files != nil || rw.KernelNote != "" {
			if _, rest, ok := strings.Cut(rw.Summary(), "\n"); ok {
				fmt.Fprintln(c.stdout, rest)
			}
		}
		return nil
	}
	fmt.Fprintln(c.stdout, rw.Summary())
	return nil
}

// forkOthers is sessions fork of another user's session, shared with the
// user: a session of their own with its conversation before at (#N or a
// ts, as show numbers them), never the other's files or kernel.
func (c *sessionsCmd) forkOthers(ctx context.Context, s store.Session, at string) error {
	ts, n, err := parseBefore(at)
	if err != nil {
		return fmt.Errorf("%q: want #N or a message's ts (see sessions show)", at)
	}
	if n >= 0 {
		m, err := c.st.LoadUI(ctx, s.ID, store.Page{Offset: n, Limit: 1})
		if err != nil {
			return err
		}
		if len(m) == 0 {
			return fmt.Errorf("%s: no such message (see sessions show %s)", at, messages.ShortID(s.ID))
		}
		ts = m[0].TS
	}
	fork, err := c.st.ForkSession(ctx, s.ID, ts)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]any{"session_id": s.ID, "fork_id": fork.ID, "ui": fork.MessageCount, "owner": s.Owner})
	}
	fmt.Fprintf(c.stdout, "Forked %s's session %s at %s: your own session %s (%d messages). Its files and kernel stay %s's.\n",
		s.Whose(), messages.ShortID(s.ID), at, fork.ID, fork.MessageCount, s.Owner)
	return nil
}
