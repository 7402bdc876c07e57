package agent

import (
	"context"
	"sync"

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

	done    chan struct{}
	endOnce sync.Once
}

// newAsk is the ask of m; idle: see TurnAsk.idle.
func newAsk(m messages.UIMessage, idle bool) *TurnAsk {
	return &TurnAsk{msg: m, answer: make(chan Response, 1), idle: idle, done: make(chan struct{})}
}

// Message is the ask as the UI history holds it.
func (a *TurnAsk) Message() messages.UIMessage { return a.msg }

// Done is closed once the ask is answered, from any surface, or its turn
// no longer waits for it.
func (a *TurnAsk) Done() <-chan struct{} { return a.done }

// Context returns a context of parent's that is also cancelled when the
// ask is done: an approver given it stops waiting when someone else
// answered. Call cancel when done with it.
func (a *TurnAsk) Context(parent context.Context) (ctx context.Context, cancel context.CancelFunc) {
	ctx, cancel = context.WithCancel(parent)
	go func() {
		select {
		case <-a.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// end marks the ask done; later calls do nothing.
func (a *TurnAsk) end() { a.endOnce.Do(func() { close(a.done) }) }
