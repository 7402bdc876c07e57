package session

import (
	"context"
	"strconv"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/messages"
)

// The event log (Config.EventLog): the host writes what comes in through
// its operations — prompts, answers, commands — with the surface they came
// from, and what its sessions' tasks emit: messages created and finished
// (not each streamed version), tool calls, hook blocks and failures, and
// each turn's result with its cost. Every surface goes through here.

type sourceKey struct{}

// WithSource marks ctx as carrying an input from src: the host logs the
// operations called with it as coming from there. Without it an input is
// from the host's Config.Source.
func WithSource(ctx context.Context, src eventlog.Source) context.Context {
	return context.WithValue(ctx, sourceKey{}, src)
}

func (h *Host) sourceOf(ctx context.Context) eventlog.Source {
	if src, ok := ctx.Value(sourceKey{}).(eventlog.Source); ok && src != "" {
		return src
	}
	return h.cfg.Source
}

// turnLog is what the log keeps of a session's running turn.
type turnLog struct {
	source    eventlog.Source // of the input that started the turn
	start     agent.Totals    // the session's totals when it started
	completed bool
	aborted   bool
}

// logInput writes an input of session c (nil before there is one).
func (h *Host) logInput(ctx context.Context, c *current, e eventlog.Entry) {
	if h.cfg.EventLog == nil {
		return
	}
	e.Source = h.sourceOf(ctx)
	if c != nil {
		e.SessionID = c.id
	}
	h.cfg.EventLog.Write(e)
}

// logPrompt writes a prompt; the turn it starts has its source.
func (h *Host) logPrompt(ctx context.Context, c *current, p agent.Prompt) {
	c.mu.Lock()
	c.turn.source = h.sourceOf(ctx)
	c.mu.Unlock()
	h.logInput(ctx, c, eventlog.Entry{Event: eventlog.EventPrompt, Text: p.Text, Images: len(p.Images)})
}

// logCommand writes a command (cancel, rewind, mode, …) with its argument.
func (h *Host) logCommand(ctx context.Context, c *current, name, arg string) {
	h.logInput(ctx, c, eventlog.Entry{Event: eventlog.EventCommand, Kind: name, Text: arg})
}

// logAnswer writes the answer to the ask stamped ts.
func (h *Host) logAnswer(ctx context.Context, c *current, ts int64, r agent.Response) {
	h.logInput(ctx, c, eventlog.Entry{Event: eventlog.EventAnswer, Kind: string(r.Kind), By: r.By, TS: ts, Text: r.Text,
		Images: len(r.Images)})
}

// logEvent writes what session c's task emitted. A streamed (partial)
// update returns at once: only finished messages are written.
func (h *Host) logEvent(c *current, e agent.Event) {
	l := h.cfg.EventLog
	if l == nil {
		return
	}
	var out eventlog.Entry
	switch e.Kind {
	case agent.EventMessageUpdated:
		m := e.Message
		if m == nil || m.Partial {
			return
		}
		out = eventlog.Entry{Event: eventlog.EventMessageFinished, Kind: kindOf(m), TS: m.TS, Text: m.Text}
	case agent.EventMessageCreated:
		m := e.Message
		if m == nil {
			return
		}
		out = eventlog.Entry{Event: eventlog.EventMessageCreated, Kind: kindOf(m), TS: m.TS}
		if !m.Partial {
			out.Text = m.Text
		}
	case agent.EventToolStarted:
		out = eventlog.Entry{Event: eventlog.EventToolStart, Tool: e.Tool, ToolID: e.ToolID}
	case agent.EventToolFinished:
		ok := !e.Failed
		out = eventlog.Entry{Event: eventlog.EventToolEnd, Tool: e.Tool, ToolID: e.ToolID, OK: &ok}
	case agent.EventToolFailed:
		out = eventlog.Entry{Event: eventlog.EventError, Kind: "tool", Tool: e.Tool, Text: e.Text}
	case agent.EventHookBlocked:
		out = eventlog.Entry{Event: eventlog.EventHook, Kind: "blocked", Tool: e.Tool, Text: e.Text}
	case agent.EventHookFailed:
		out = eventlog.Entry{Event: eventlog.EventError, Kind: "hook", Tool: e.Tool, Text: e.Text}
	case agent.EventTaskStarted:
		totals := c.task.Totals()
		c.mu.Lock()
		c.turn.start, c.turn.completed, c.turn.aborted = totals, false, false
		c.mu.Unlock()
		return
	case agent.EventTaskCompleted:
		c.mu.Lock()
		c.turn.completed = true
		c.mu.Unlock()
		return
	case agent.EventTaskAborted:
		c.mu.Lock()
		c.turn.aborted = true
		c.mu.Unlock()
		return
	case agent.EventTaskIdle:
		now := c.task.Totals()
		c.mu.Lock()
		tl := c.turn
		c.mu.Unlock()
		kind := "ended"
		switch {
		case tl.completed:
			kind = "completed"
		case tl.aborted:
			kind = "cancelled"
		}
		spent := now.Since(tl.start)
		out = eventlog.Entry{Event: eventlog.EventResult, Kind: kind, CostUSD: &spent.Cost,
			TokensIn: spent.InputTokens, TokensOut: spent.OutputTokens}
		if e.Message != nil {
			out.Text = "waiting: " + kindOf(e.Message)
		}
	default:
		return
	}
	c.mu.Lock()
	out.Source = c.turn.source
	c.mu.Unlock()
	if out.Source == "" {
		out.Source = h.cfg.Source
	}
	out.SessionID = c.id
	l.Write(out)
}

// kindOf names a message's kind as "say:text", "ask:command", ….
func kindOf(m *messages.UIMessage) string {
	if m.Type == messages.TypeAsk {
		return "ask:" + string(m.Ask)
	}
	return "say:" + string(m.Say)
}

// tsArg is a ts as a command's argument.
func tsArg(ts int64) string { return strconv.FormatInt(ts, 10) }
