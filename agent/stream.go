package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
)

// streamed is what one model request produced.
type streamed struct {
	// start is when the request was sent, first when its first token came.
	start, first               time.Time
	text, reasoning, signature string
	calls                      []provider.ToolCall
	usage                      provider.Usage
	stop                       provider.StopReason
}

// stream consumes one model stream into partial say messages.
func (t *Task) stream(ctx context.Context, prov provider.Provider, req provider.Request) (streamed, error) {
	sr := &streamReader{t: t, ctx: ctx, prov: prov, updateCtx: context.WithoutCancel(ctx),
		res: streamed{start: time.Now()}, steps: map[string]*activity{}}
	s, err := prov.Stream(ctx, req)
	if err != nil {
		return sr.res, err
	}
	defer s.Close()
	// Close the stream when ctx ends so that a blocked Next returns.
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			if ferr := sr.finish(); ferr != nil {
				return sr.res, ferr
			}
			return sr.res, err
		}
		if err := sr.handle(ev); err != nil {
			return sr.res, err
		}
	}
	return sr.res, sr.finish()
}

// streamReader is one model stream being read, for one call of stream
// (whose ctx it holds): what it produced so far, and the partial say
// messages that show its text and reasoning.
type streamReader struct {
	t    *Task
	ctx  context.Context
	prov provider.Provider
	// updateCtx is ctx without its cancel, made once, not a chunk.
	updateCtx context.Context
	res       streamed

	textMsg, reasonMsg *messages.UIMessage
	// The text so far grows in place: res.text is text.String() after
	// each piece, a string over the builder's bytes, not a copy (a copy a
	// piece is quadratic in the answer's length).
	text, reasoning strings.Builder
	// An agent that runs its own tools (EventActivity, EventAsk) says
	// things between its steps: each stretch of its text is a message of
	// its own, from these offsets on.
	textFrom, reasonFrom int
	steps                map[string]*activity
}

// handle takes one event of the stream into the result and the history.
func (sr *streamReader) handle(ev provider.Event) error {
	res := &sr.res
	if res.first.IsZero() && (ev.Type == provider.EventText || ev.Type == provider.EventReasoning || ev.Type == provider.EventToolCall) {
		res.first = time.Now()
	}
	switch ev.Type {
	case provider.EventText:
		sr.text.WriteString(ev.Text)
		res.text = sr.text.String()
		return sr.grow(&sr.textMsg, messages.SayText, res.text[sr.textFrom:])
	case provider.EventReasoning:
		sr.reasoning.WriteString(ev.Text)
		res.reasoning = sr.reasoning.String()
		if ev.Signature != "" {
			res.signature = ev.Signature
		}
		return sr.grow(&sr.reasonMsg, messages.SayReasoning, res.reasoning[sr.reasonFrom:])
	case provider.EventToolCall:
		if ev.ToolCall != nil {
			res.calls = append(res.calls, *ev.ToolCall)
		}
	case provider.EventUsage:
		if ev.Usage != nil {
			res.usage = *ev.Usage
		}
	case provider.EventDone:
		res.stop = ev.StopReason
	case provider.EventActivity:
		if ev.Activity == nil {
			return nil
		}
		if err := sr.cut(); err != nil {
			return err
		}
		return sr.t.recordActivity(sr.ctx, sr.prov, sr.steps, *ev.Activity)
	case provider.EventAsk:
		if ev.Ask == nil {
			return nil
		}
		if err := sr.cut(); err != nil {
			return err
		}
		return sr.t.askForAgent(sr.ctx, *ev.Ask)
	}
	return nil
}

// grow shows full as the text of *m, saying it as a new partial message
// of kind when there is none yet.
func (sr *streamReader) grow(m **messages.UIMessage, kind messages.Say, full string) error {
	if *m == nil {
		created, err := sr.t.say(sr.ctx, kind, full, func(u *messages.UIMessage) { u.Partial = true })
		if err != nil {
			return err
		}
		*m = &created
		return nil
	}
	(*m).Text = full
	return sr.t.update(sr.updateCtx, **m)
}

// finish ends the partial messages. A turn cut short because the task
// closes (the kernel shuts down, its server died) or a newer prompt took
// over did not end: what streamed is stored, still marked partial. An
// interrupt ends the turn, and the message.
func (sr *streamReader) finish() error {
	partial := sr.ctx.Err() != nil && sr.t.cutShort()
	for _, m := range []*messages.UIMessage{sr.reasonMsg, sr.textMsg} {
		if m != nil && m.Partial {
			m.Partial = partial
			if err := sr.t.update(sr.updateCtx, *m); err != nil {
				return err
			}
		}
	}
	return nil
}

// cut ends the stretch of text so far: what the agent says after a step
// of its own is a new message, after the step's.
func (sr *streamReader) cut() error {
	if err := sr.finish(); err != nil {
		return err
	}
	sr.textMsg, sr.reasonMsg = nil, nil
	sr.textFrom, sr.reasonFrom = len(sr.res.text), len(sr.res.reasoning)
	return nil
}

// activity is what the history has of one tool call of an agent that runs
// its own tools.
type activity struct {
	started, ended bool
}

// recordActivity records a step of an agent that runs its own tools, as
// an MCP tool call of ours is recorded: mcp_server_request_started when
// the call starts (the agent's name as the server), mcp_server_response
// with a preview of its output when it ends.
func (t *Task) recordActivity(ctx context.Context, prov provider.Provider, steps map[string]*activity, a provider.Activity) error {
	st := steps[a.ID]
	if st == nil {
		st = &activity{}
		steps[a.ID] = st
	}
	if !st.started {
		st.started = true
		input := string(a.Input)
		if input == "" {
			input = "{}"
		}
		b, _ := json.Marshal(map[string]string{"serverName": prov.Model().ID, "toolName": a.Title,
			"arguments": truncateRunes(input, maxResponsePreview)})
		if _, err := t.say(ctx, messages.SayMCPServerRequestStarted, string(b), nil); err != nil {
			return err
		}
		t.lis.Emit(Event{Kind: EventToolStarted, Tool: a.Title, ToolID: a.ID})
	}
	if a.Done() && !st.ended {
		st.ended = true
		out := a.Output
		if a.Status == "failed" && out == "" {
			out = "(failed)"
		}
		if _, err := t.say(ctx, messages.SayMCPServerResponse, truncateRunes(out, maxResponsePreview), nil); err != nil {
			return err
		}
		t.countTool(a.Title, a.Status == "failed")
		t.lis.Emit(Event{Kind: EventToolFinished, Tool: a.Title, ToolID: a.ID, Failed: a.Status == "failed"})
	}
	return nil
}

// askForAgent answers a permission an agent that runs its own tools asks
// for: by the permission mode (bypassPermissions allows, plan denies),
// else by asking whoever answers asks, as our own tools' asks are.
func (t *Task) askForAgent(ctx context.Context, a provider.Ask) error {
	switch t.perm.PermissionMode() {
	case PermissionBypass:
		a.Reply(true, false)
		return nil
	case PermissionPlan:
		a.Reply(false, false)
		return nil
	}
	input := a.Input
	if !json.Valid(input) {
		input = json.RawMessage("null")
	}
	b, _ := json.Marshal(messages.ToolAsk{Tool: a.Tool, Input: input, Reason: "the agent asks for it"})
	resp, err := t.ask(ctx, messages.AskTool, string(b))
	if err != nil {
		a.Reply(false, false)
		return err
	}
	switch resp.Kind {
	case ResponseYes:
		a.Reply(true, false)
	case ResponseAllowAll:
		a.Reply(true, true)
	default:
		a.Reply(false, false)
	}
	return nil
}
