package agent

import (
	"context"
	"fmt"

	"github.com/agentkernel/agentkernel/messages"
)

// TurnAsk is one ask of a turn, as Turn.Next hands it out: the message, and
// its end. It is answered once, from any surface (Task.Respond: the
// notebook's stdin, the web panel, a policy; the first answer wins), and
// Done closes then, or when the turn stops waiting for it (the turn is
// cancelled, superseded or rewound away). Safe for concurrent use.
type TurnAsk struct {
	msg    messages.UIMessage
	answer chan Response // cap 1
	// idle marks an ask that does not hold a turn (completion_result,
	// api_req_failed, …): the next Start or Respond starts a turn.
	idle bool

	// ended is done once the ask is (end).
	ended context.Context
	end   context.CancelFunc
}

// newAsk is the ask of m; idle: see TurnAsk.idle.
func newAsk(m messages.UIMessage, idle bool) *TurnAsk {
	ended, end := context.WithCancel(context.Background())
	return &TurnAsk{msg: m, answer: make(chan Response, 1), idle: idle, ended: ended, end: end}
}

// Message is the ask as the UI history holds it.
func (a *TurnAsk) Message() messages.UIMessage { return a.msg }

// Done is closed once the ask is answered, from any surface, or its turn
// no longer waits for it.
func (a *TurnAsk) Done() <-chan struct{} { return a.ended.Done() }

// Context returns a context of parent's that is also cancelled when the
// ask is done: an approver given it stops waiting when someone else
// answered. Call cancel when done with it.
func (a *TurnAsk) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(a.ended, cancel)
	return ctx, func() { stop(); cancel() }
}

// ResponseKind is how the user answered an ask (Roo-Code's askResponse).
type ResponseKind string

// The responses.
const (
	ResponseYes      ResponseKind = "yesButtonClicked" // allow / retry / continue
	ResponseNo       ResponseKind = "noButtonClicked"  // deny / give up
	ResponseAllowAll ResponseKind = "allowAll"         // allow this tool for the rest of the session
	ResponseMessage  ResponseKind = "messageResponse"  // free text (followup answers, feedback)
)

// Response answers an ask.
type Response struct {
	Kind ResponseKind `json:"kind"`
	Text string       `json:"text,omitempty"`
	// By names who answered ("stdin", "webview", "policy"); recorded.
	By string `json:"by,omitempty"`
	// Images attached to a message answer (the web panel); they go to the
	// model with the answer, as a prompt's do.
	Images []Image `json:"-"`
}

// PendingAsk returns the ask waiting for an answer, if any.
func (t *Task) PendingAsk() (messages.UIMessage, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		return messages.UIMessage{}, false
	}
	return t.pending.msg, true
}

// Respond answers the pending ask stamped ts. The first answer wins; a
// later one, or one for an ask that is not pending, gets ErrNoAsk.
func (t *Task) Respond(ts int64, a Response) error {
	t.mu.Lock()
	p := t.pending
	if p == nil || p.msg.TS != ts {
		t.mu.Unlock()
		return fmt.Errorf("%w: %d", ErrNoAsk, ts)
	}
	if t.turnDone == nil || p.idle {
		// An idle ask: the answer starts a turn (after the one that left
		// it, if it is still ending).
		t.mu.Unlock()
		if a.Kind == ResponseNo {
			return t.closeIdleAsk(ts, a)
		}
		_, err := t.Start(Prompt{Text: a.Text, Images: a.Images}, TurnOptions{})
		return err
	}
	select {
	case p.answer <- a:
		// Answered: no longer pending, so Wait and PendingAsk do not offer
		// it again while the turn picks the answer up; done everywhere.
		t.pending = nil
		p.end()
		t.state = StateWorking
		t.notifyLocked()
	default:
		t.mu.Unlock()
		return fmt.Errorf("%w: %d already answered", ErrNoAsk, ts)
	}
	t.mu.Unlock()
	return nil
}

// closeIdleAsk records a "no" to an idle ask (nothing to resume).
func (t *Task) closeIdleAsk(ts int64, a Response) error {
	t.mu.Lock()
	p := t.pending
	if p == nil || p.msg.TS != ts {
		t.mu.Unlock()
		return fmt.Errorf("%w: %d", ErrNoAsk, ts)
	}
	t.pending = nil
	p.end()
	t.notifyLocked()
	t.mu.Unlock()
	return t.markAnswered(context.Background(), p.msg)
}
