package agent

import (
	"context"
	"fmt"
	"slices"
)

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

// MemNotebook is a notebook in memory (memNotebook), its cells in prompt
// mode with prompt, for the tests of package agent_test.
type MemNotebook = memNotebook

// NewMemNotebook is a MemNotebook of code cells holding sources, with the
// ids cell0001, cell0002…
func NewMemNotebook(prompt bool, sources ...string) *MemNotebook {
	m := &memNotebook{prompt: prompt}
	for i, s := range sources {
		m.cells = append(m.cells, NotebookCell{ID: fmt.Sprintf("cell%04d", i+1), Kind: CodeCell, Source: s})
	}
	return m
}

// Ran is the code the notebook's runs ran, in order.
func (m *memNotebook) Ran() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.ran)
}

// Sources are its cells' sources.
func (m *memNotebook) Sources() []string { return m.sources() }
