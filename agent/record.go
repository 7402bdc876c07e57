package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
)

// Recorder is implemented by a provider that records the run to a cassette
// (replay.Recorder): besides the model's answers it keeps the tool results
// the loop sent and the approval answers it got.
type Recorder interface {
	RecordToolResult(id, text string) error
	RecordApproval(ask, answer string) error
}

// Approvals is implemented by a provider that replays a recorded run
// (replay.Player): approvals are answered as they were when recorded, and
// asking anything else is a divergence.
type Approvals interface {
	NextApproval(ask string) (string, error)
}

// errReplay ends a turn whose replay diverged from its recording.
type errReplay struct{ err error }

func (e *errReplay) Error() string { return "agent: replay: " + e.err.Error() }
func (e *errReplay) Unwrap() error { return e.err }

// fatal reports whether a tool-call error must end the turn (the store
// failed, or a replay diverged) rather than go back to the model.
func fatal(err error) bool {
	var se *storeError
	var re *errReplay
	return errors.As(err, &se) || errors.As(err, &re)
}

// encodeAnswer is an approval answer as a cassette keeps it: the answer,
// and who gave it, so that a replay records the same decision.
func encodeAnswer(r Response) string {
	var a string
	switch r.Kind {
	case ResponseYes:
		a = "allow"
	case ResponseAllowAll:
		a = "allowAll"
	case ResponseMessage:
		a = "message:" + r.Text
	default:
		a = "deny"
	}
	if r.By != "" {
		a = "by=" + r.By + ";" + a
	}
	return a
}

// decodeAnswer reads an approval answer recorded by encodeAnswer.
func decodeAnswer(s string) (Response, error) {
	by := "replay"
	if rest, ok := strings.CutPrefix(s, "by="); ok {
		b, a, found := strings.Cut(rest, ";")
		if !found {
			return Response{}, fmt.Errorf("malformed recorded answer %q", s)
		}
		by, s = b, a
	}
	switch {
	case s == "allow":
		return Response{Kind: ResponseYes, By: by}, nil
	case s == "allowAll":
		return Response{Kind: ResponseAllowAll, By: by}, nil
	case s == "deny":
		return Response{Kind: ResponseNo, By: by}, nil
	case strings.HasPrefix(s, "message:"):
		return Response{Kind: ResponseMessage, Text: strings.TrimPrefix(s, "message:"), By: by}, nil
	}
	return Response{}, fmt.Errorf("unknown recorded answer %q", s)
}

// approveFunc answers an ask for approval (a DecisionMessage) in a turn.
type approveFunc func(ctx context.Context, ask messages.UIMessage) (Response, error)

// recording holds the parts of a turn that recording and replay change.
// It is built once per model (recordingFor), as decorators around the
// task's own behaviour, so the loop never asks what kind of model it talks
// to.
type recording struct {
	approve    approveFunc
	toolResult func(id, text string)
	// output is the sink of the outputs of code the calls run: the
	// turn's, or a Call's own.
	output func(CodeOutput)
}

// recordingFor decorates the task's own approval (ask whoever answers) for
// the model p: a replay answers as its recording did; a recorder keeps every
// answer and tool result.
func (t *Task) recordingFor(p provider.Provider) recording {
	h := recording{approve: t.askApproval, toolResult: func(string, string) {}}
	if ap, ok := p.(Approvals); ok {
		h.approve = t.replayApprovals(ap)
	}
	if rec, ok := p.(Recorder); ok {
		h.approve = t.recordApprovals(rec, h.approve)
		h.toolResult = func(id, text string) {
			if err := rec.RecordToolResult(id, text); err != nil {
				t.log.Warn("record tool result", "error", err)
			}
		}
	}
	return h
}

// askApproval asks whoever answers asks (Respond: stdin, panel, policy).
func (t *Task) askApproval(ctx context.Context, ask messages.UIMessage) (Response, error) {
	return t.askMessage(ctx, messages.UIMessage{Ask: ask.Ask, Text: ask.Text, Cell: ask.Cell})
}

// replayApprovals answers as the recording did, and records the ask as
// answered; asking anything else is a divergence.
func (t *Task) replayApprovals(ap Approvals) approveFunc {
	return func(ctx context.Context, ask messages.UIMessage) (Response, error) {
		recorded, err := ap.NextApproval(ask.Text)
		var resp Response
		if err == nil {
			resp, err = decodeAnswer(recorded)
		}
		if err != nil {
			return Response{}, &errReplay{err}
		}
		m := messages.UIMessage{TS: t.clock.Next(), Type: messages.TypeAsk, Ask: ask.Ask, Text: ask.Text, Cell: ask.Cell, IsAnswered: true}
		if err := t.create(ctx, m); err != nil {
			return Response{}, err
		}
		return resp, nil
	}
}

// recordApprovals keeps the answers next gives in the cassette.
func (t *Task) recordApprovals(rec Recorder, next approveFunc) approveFunc {
	return func(ctx context.Context, ask messages.UIMessage) (Response, error) {
		resp, err := next(ctx, ask)
		if err != nil {
			return resp, err
		}
		if err := rec.RecordApproval(ask.Text, encodeAnswer(resp)); err != nil {
			t.log.Warn("record approval", "error", err)
		}
		return resp, nil
	}
}
