package agent

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
)

// TurnOptions equip the turn Start begins.
type TurnOptions struct {
	// Limits bound it (model requests, cost).
	Limits Limits
	// Output receives the outputs of the code the turn runs, as the
	// backing kernel sends them (a notebook relays them to the prompt's
	// cell). It belongs to this turn: code a later turn runs never
	// reports here. Nil: they are not relayed.
	Output func(CodeOutput)
}

// CodeOutput is one output of code a turn runs, as the backing kernel sent
// it: an iopub message's type, content, metadata and buffers.
type CodeOutput struct {
	Type     string
	Content  json.RawMessage
	Metadata json.RawMessage
	Buffers  [][]byte
}

// Turn is one turn of a Task, as Start returns it: the user's message, the
// requests and tool calls it leads to, its asks, and its end. Safe for
// concurrent use.
type Turn struct {
	task       *Task
	output     func(CodeOutput)
	done       chan struct{}
	err        error
	superseded atomic.Bool
}

// Done is closed when the turn has ended.
func (r *Turn) Done() <-chan struct{} { return r.done }

// Err is the turn's error once Done is closed (context.Canceled for a
// turn cancelled by Cancel or by a later Start); nil before.
func (r *Turn) Err() error {
	select {
	case <-r.done:
		return r.err
	default:
		return nil
	}
}

// Superseded reports whether a later Start cancelled the turn to begin
// its own (as opposed to Cancel, or the turn ending by itself).
func (r *Turn) Superseded() bool {
	return errors.Is(r.Err(), context.Canceled) && r.superseded.Load()
}

// ended reports whether the turn has ended.
func (r *Turn) ended() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Listen registers f for the task's events while the turn runs: the events
// of a later turn are not its own, and f hears none of them. The returned
// func removes it.
func (r *Turn) Listen(f func(Event)) (remove func()) {
	return r.task.lis.Add(func(e Event) {
		if !r.ended() {
			f(e)
		}
	})
}

// Next blocks until the turn pauses on an ask, which it returns with ok,
// or ends (ok false; err is the turn's), or ctx ends. An ask answered
// meanwhile is not returned again. It is woken by the change itself. The
// ask's Done says when it was answered, from any surface, or the turn
// stopped waiting for it.
func (r *Turn) Next(ctx context.Context) (ask *TurnAsk, ok bool, err error) {
	t := r.task
	for {
		t.mu.Lock()
		mine, pa, changed := t.running == r, t.pending, t.changed
		t.mu.Unlock()
		if !mine {
			// Ended, or ending: the task lets go of its turn just before
			// the turn's Done closes.
			select {
			case <-r.done:
				return nil, false, r.err
			case <-ctx.Done():
				return nil, false, ctx.Err()
			}
		}
		if pa != nil && !pa.idle {
			return pa, true, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// Start delivers the user's message. If an ask of the running turn is
// pending, the message answers it (a followup's answer, feedback) and Start
// returns that turn. Otherwise it begins a turn (a running one is cancelled
// first, and is Superseded); an idle ask an earlier turn left (a
// completion, a failed request) is answered by it. Start returns at once;
// the turn runs on a goroutine of the Task's, with no context of the
// caller's: Cancel, a later Start and Close end it.
func (t *Task) Start(p Prompt, o TurnOptions) (*Turn, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	if pa := t.pending; pa != nil && !pa.idle && t.turnDone != nil {
		run := t.running
		t.mu.Unlock()
		return run, t.Respond(pa.msg.TS, Response{Kind: ResponseMessage, Text: p.Text, By: "prompt", Images: p.Images})
	}
	running := t.turnDone
	cancel := t.cancel
	if t.running != nil {
		t.running.superseded.Store(true)
	}
	t.mu.Unlock()
	if running != nil {
		cancel()
		<-running
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	if t.rewinding || t.turnDone != nil {
		return nil, ErrBusy // a rewind, or another Start, got in between
	}
	resumeFrom := t.pending
	t.pending = nil
	if resumeFrom != nil {
		resumeFrom.end() // this turn answers it
	}
	turnCtx, cancelTurn := context.WithCancel(context.Background())
	done := make(chan struct{})
	run := &Turn{task: t, output: o.Output, done: done}
	t.cancel, t.turnDone, t.running, t.state, t.lastErr = cancelTurn, done, run, StateWorking, nil
	t.notifyLocked()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer close(done)
		err := t.runTurn(turnCtx, p, resumeFrom, o.Limits)
		cancelTurn()
		run.err = err
		t.mu.Lock()
		t.state, t.cancel, t.turnDone, t.running, t.lastErr = StateIdle, nil, nil, nil, err
		t.notifyLocked()
		t.mu.Unlock()
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, ErrMaxRequests) && !errors.Is(err, ErrMaxBudget) {
			t.log.Warn("turn ended with an error", "error", err)
		}
	}()
	return run, nil
}

// output is the running turn's output sink, or nil.
func (t *Task) output() func(CodeOutput) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running == nil {
		return nil
	}
	return t.running.output
}
