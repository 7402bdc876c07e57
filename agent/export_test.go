package agent

import "context"

// Tests follow whichever turn runs, where a surface follows its own
// (Turn.Next).

// Wait blocks until the running turn ends or pauses on an ask, or ctx
// ends. It returns the task's state then and, for an ended turn, its error.
// It is woken by the change itself, not by polling.
func (t *Task) Wait(ctx context.Context) (State, error) {
	for {
		t.mu.Lock()
		state, done, err, changed := t.state, t.turnDone, t.lastErr, t.changed
		// An idle ask left as the turn ends is not one the turn waits on.
		waiting := t.pending != nil && !t.pending.idle
		t.mu.Unlock()
		if done == nil {
			return state, err
		}
		if waiting {
			return StateWaiting, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return t.State(), ctx.Err()
		}
	}
}
