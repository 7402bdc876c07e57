package agent

import (
	"context"
	"fmt"

	"github.com/agentkernel/agentkernel/messages"
)

// storeError is a failed write to the store: the turn cannot go on without
// breaking the rule that every message is stored before the next step.
type storeError struct{ err error }

func (e *storeError) Error() string { return "agent: store: " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// create stores a new UI message, appends it and tells the listeners.
func (t *Task) create(ctx context.Context, m messages.UIMessage) error {
	return t.createFor(ctx, m, "")
}

// createFor is create for a message about the tool call toolID (a
// permission decision): its event carries the call's id.
//
// A message that starts streaming (partial: the model's first words) is
// shown before it is stored, so that the first words reach the cell
// without waiting for the store; its row is appended right after, on this
// goroutine, before any of its updates. A crash in between loses only what
// streamed, as the rule allows for a message still streaming. Every other
// message is stored first.
func (t *Task) createFor(ctx context.Context, m messages.UIMessage, toolID string) error {
	if !m.Partial {
		if err := t.cfg.Store.AppendUI(context.WithoutCancel(ctx), t.cfg.SessionID, m); err != nil {
			return &storeError{err}
		}
	}
	t.mu.Lock()
	t.ui = append(t.ui, m)
	t.mu.Unlock()
	t.lis.Emit(Event{Kind: EventMessageCreated, Message: &m, ToolID: toolID})
	if m.Partial {
		if err := t.cfg.Store.AppendUI(context.WithoutCancel(ctx), t.cfg.SessionID, m); err != nil {
			return &storeError{err}
		}
	}
	return nil
}

// say creates a say message stamped now; edit may adjust it first.
func (t *Task) say(ctx context.Context, kind messages.Say, text string, edit func(*messages.UIMessage)) (messages.UIMessage, error) {
	m := messages.UIMessage{TS: t.clock.Next(), Type: messages.TypeSay, Say: kind, Text: text}
	if edit != nil {
		edit(&m)
	}
	return m, t.create(ctx, m)
}

// update stores a new version of an existing UI message (same ts). It is
// called for every chunk of a streamed answer.
func (t *Task) update(ctx context.Context, m messages.UIMessage) error {
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx) // (allocates: the stream passes one made once)
	}
	if err := t.cfg.Store.UpdateUI(ctx, t.cfg.SessionID, m); err != nil {
		return &storeError{err}
	}
	t.mu.Lock()
	for i := len(t.ui) - 1; i >= 0; i-- {
		if t.ui[i].TS == m.TS {
			t.ui[i] = m
			break
		}
	}
	t.mu.Unlock()
	t.lis.Emit(Event{Kind: EventMessageUpdated, Message: &m})
	return nil
}

// appendAPI stores and appends an API message and tells the listeners;
// reply, for the model's answer, says what its request cost.
func (t *Task) appendAPI(ctx context.Context, m messages.APIMessage, reply *Reply) error {
	if err := t.cfg.Store.AppendAPI(context.WithoutCancel(ctx), t.cfg.SessionID, m); err != nil {
		return &storeError{err}
	}
	t.mu.Lock()
	t.api = append(t.api, m)
	t.mu.Unlock()
	t.lis.Emit(Event{Kind: EventAPIMessage, API: &m, Reply: reply})
	return nil
}

// ask creates an ask, waits for its answer (from Respond: the notebook's
// stdin, the web panel, a policy — the first one wins) and marks it
// answered. If ctx ends first the ask is closed unanswered (a denial).
func (t *Task) ask(ctx context.Context, kind messages.Ask, text string) (Response, error) {
	return t.askMessage(ctx, messages.UIMessage{Ask: kind, Text: text})
}

// askMessage is ask of the ask m (its kind, text and cell), stamped now.
func (t *Task) askMessage(ctx context.Context, m messages.UIMessage) (Response, error) {
	m.TS, m.Type = t.clock.Next(), messages.TypeAsk
	kind := m.Ask
	p := newAsk(m, false)
	t.mu.Lock()
	t.pending = p
	t.state = StateWaiting
	t.notifyLocked()
	t.mu.Unlock()
	defer func() {
		p.end()
		t.mu.Lock()
		if t.pending == p {
			t.pending = nil
		}
		if t.state == StateWaiting {
			t.state = StateWorking
		}
		t.notifyLocked()
		t.mu.Unlock()
	}()
	if err := t.create(ctx, m); err != nil {
		return Response{}, err
	}
	switch messages.ClassOf(kind) {
	case messages.AskClassResumable:
		t.lis.Emit(Event{Kind: EventTaskResumable, Message: &m})
	default:
		t.lis.Emit(Event{Kind: EventTaskInteractive, Message: &m})
	}
	var resp Response
	select {
	case resp = <-p.answer:
	case <-ctx.Done():
		if err := t.markAnswered(context.WithoutCancel(ctx), m); err != nil {
			return Response{}, err
		}
		return Response{Kind: ResponseNo, By: "cancel"}, ctx.Err()
	}
	if err := t.markAnswered(ctx, m); err != nil {
		return Response{}, err
	}
	if resp.Kind == ResponseMessage && resp.Text != "" {
		if _, err := t.say(ctx, messages.SayUserFeedback, resp.Text, showImages(resp.Images)); err != nil {
			return Response{}, err
		}
	}
	t.lis.Emit(Event{Kind: EventTaskActive})
	return resp, nil
}

// askIdle creates an ask that does not hold the turn: the turn ends and the
// ask stays pending until the next Start or Respond answers it.
func (t *Task) askIdle(ctx context.Context, kind messages.Ask, text string) (messages.UIMessage, error) {
	m := messages.UIMessage{TS: t.clock.Next(), Type: messages.TypeAsk, Ask: kind, Text: text}
	if err := t.create(context.WithoutCancel(ctx), m); err != nil {
		return m, err
	}
	t.mu.Lock()
	t.pending = newAsk(m, true)
	t.notifyLocked()
	t.mu.Unlock()
	return m, nil
}

// markAnswered stores the ask with isAnswered set.
func (t *Task) markAnswered(ctx context.Context, m messages.UIMessage) error {
	if m.IsAnswered {
		return nil
	}
	m.IsAnswered = true
	if err := t.update(ctx, m); err != nil {
		return fmt.Errorf("agent: close ask: %w", err)
	}
	return nil
}
