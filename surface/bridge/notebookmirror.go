package bridge

import (
	"sync"
	"unicode/utf8"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/internal/nbcomm"
	"github.com/agentkernel/agentkernel/session"
)

// This file: the kernel's mirror of a page's notebook (issue 44). A page
// whose comm_open says nbcomm.Mirror sends a snapshot of its notebook and
// then its changes, each with the next version, as a collaborator's client
// is fed by the shared model; the kernel keeps them here and answers the
// agent's reads from them, so that a read waits on no round trip to the
// page. The page is still asked when the mirror is stale or lacks what the
// read wants (notebookMirror.view says when); writes always go to the page,
// which checks them against the user's typing, and their changes come back
// as any other.

// notebookMirror is one page's notebook as its snapshot and changes say.
// It is safe for concurrent use: reply feeds it on the comm's receiving
// goroutine while the tools read it on theirs. The zero value knows
// nothing: every read goes to the page.
type notebookMirror struct {
	mu sync.Mutex
	// on: the page said it sends changes (Open.Mirror).
	on bool
	// current: a snapshot came and every change since, in order (no gap,
	// no reply saying of a change that never came).
	current bool
	// resyncing: the kernel asked for a snapshot and none came yet.
	resyncing bool
	version   int64
	// writes is the number of the kernel's writes in flight: until the
	// page's reply (behind the write's change) comes, the mirror may not
	// show it.
	writes int
	cells  []mirrorCell
}

// mirrorCell is a cell of the mirror: as the agent reads it, its outputs'
// text cut to nbcomm.MirrorText characters.
type mirrorCell struct {
	agent.NotebookCell
	// cut: the page cut an output's text to MirrorText (its whole text is
	// the page's); images: an output has an image (named only, its data
	// the page's).
	cut, images bool
}

// newMirrorCell is w as the mirror keeps it.
func newMirrorCell(w nbcomm.MirrorCell) mirrorCell {
	c := mirrorCell{NotebookCell: agent.NotebookCell{ID: w.ID, Kind: agent.CellKind(w.CellType), Source: w.Source}, cut: w.Cut}
	if w.ExecutionCount != nil {
		c.ExecutionCount = *w.ExecutionCount
	}
	for _, o := range w.Outputs {
		// The page cut a longer text already, with its mark: kept.
		out := session.SummarizeOutput(o, nbcomm.MirrorText+64)
		c.images = c.images || len(out.Images) > 0
		c.Outputs = append(c.Outputs, out)
	}
	return c
}

// snapshot makes s the mirror.
func (m *notebookMirror) snapshot(s nbcomm.Snapshot) {
	cells := make([]mirrorCell, len(s.Cells))
	for i, w := range s.Cells {
		cells[i] = newMirrorCell(w)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cells, m.version, m.current, m.resyncing = cells, s.Version, true, false
}

// change applies ch to the mirror. A change that does not follow the
// last one (a gap), or whose order names a cell the mirror does not have,
// makes the mirror stale until the next snapshot.
func (m *notebookMirror) change(ch nbcomm.Changes) {
	changed := make(map[string]mirrorCell, len(ch.Cells))
	for _, w := range ch.Cells {
		changed[w.ID] = newMirrorCell(w)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.current || ch.Version != m.version+1 {
		m.current = false
		m.version = max(m.version, ch.Version)
		return
	}
	m.version = ch.Version
	if ch.Order == nil {
		for i := range m.cells {
			if c, ok := changed[m.cells[i].ID]; ok {
				m.cells[i] = c
				delete(changed, c.ID)
			}
		}
		if len(changed) > 0 { // a change of a cell the mirror does not have
			m.current = false
		}
		return
	}
	had := make(map[string]int, len(m.cells))
	for i, c := range m.cells {
		had[c.ID] = i
	}
	cells := make([]mirrorCell, 0, len(ch.Order))
	for _, id := range ch.Order {
		if c, ok := changed[id]; ok {
			cells = append(cells, c)
		} else if i, ok := had[id]; ok {
			cells = append(cells, m.cells[i])
		} else {
			m.current = false
			return
		}
	}
	m.cells = cells
}

// replied is told the version a page's reply carries (nil: none): a
// version the mirror has not seen means a change that did not come.
func (m *notebookMirror) replied(v *int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.on && (v == nil || *v > m.version) {
		m.current = false
	}
}

// writing counts a write in flight (+1 when sent, -1 when it ended).
func (m *notebookMirror) writing(d int) {
	m.mu.Lock()
	m.writes += d
	m.mu.Unlock()
}

// resync reports whether the kernel should ask the page for a snapshot
// now: the mirror is stale and none was asked for since.
func (m *notebookMirror) resync() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.on || m.current || m.resyncing {
		return false
	}
	m.resyncing = true
	return true
}

// view is the read r from the mirror (outputs cut to r.MaxOutput), and
// whether the mirror could answer it: it is current, no write is in
// flight, and the cells the read takes are whole in it (no output text the
// page cut when outputs are asked for, no image when images are). whole is
// a read of every cell (Read), else of r's part (ReadRange).
func (m *notebookMirror) view(r agent.ReadRange, whole bool) (agent.NotebookView, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.on || !m.current || m.writes > 0 {
		return agent.NotebookView{}, false
	}
	lacks := false
	cell := func(i int) agent.NotebookCell {
		c := m.cells[i]
		if (c.cut && r.MaxOutput > 0) || (c.images && r.Images) {
			lacks = true
		}
		return c.cutTo(r.MaxOutput)
	}
	var v agent.NotebookView
	if whole {
		v.Cells = make([]agent.NotebookCell, len(m.cells))
		for i := range m.cells {
			v.Cells[i] = cell(i)
		}
	} else {
		v.Part, v.Count, v.ActiveIndex = true, len(m.cells), -1
		v.Start, v.Cells = r.Take(len(m.cells), cell)
	}
	if lacks {
		return agent.NotebookView{}, false
	}
	return v, true
}

// indexOf is the index of cell id in the mirror, or -1.
func (m *notebookMirror) indexOf(id string) int {
	if id == "" {
		return -1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, c := range m.cells {
		if c.ID == id {
			return i
		}
	}
	return -1
}

// cutTo is c as a read with max_output n gives it: each output's text cut
// to n characters (none of it, and no outputs, for 0, as the page sends
// none then).
func (c mirrorCell) cutTo(n int) agent.NotebookCell {
	out := c.NotebookCell
	if n <= 0 {
		out.Outputs = nil
		return out
	}
	out.Outputs = make([]agent.CellOutput, len(c.Outputs))
	for i, o := range c.Outputs {
		if len(o.Text) > n { // else it has at most n runes
			if at, ok := runeOffset(o.Text, n); ok {
				o.Cut += utf8.RuneCountInString(o.Text[at:])
				o.Text = o.Text[:at]
			}
		}
		out.Outputs[i] = o
	}
	return out
}

// runeOffset is the byte offset of rune n of s, and whether s has more
// than n runes.
func runeOffset(s string, n int) (int, bool) {
	for at := range s {
		if n == 0 {
			return at, true
		}
		n--
	}
	return len(s), false
}
