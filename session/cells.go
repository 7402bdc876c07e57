package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/store"
)

// The notebook's cells beside the files: what the agent's notebook tools
// do to a notebook that a frontend shows is recorded per step (the store's
// cell changes), and a rewind or a fork turns it back through the
// frontend, else in the file. A notebook that is only a file (FileCells)
// is the file checkpoints' instead.

// The operations recorded.
const (
	cellInsert = "insert"
	cellEdit   = "edit"
	cellMove   = "move"
	cellDelete = "delete"
)

// maxKeptOutputs bounds the outputs kept of a deleted cell (a rewind puts
// back a larger one without them).
const maxKeptOutputs = 256 << 10

// cellState is a cell as a change records it: for an insert or an edit its
// source, for a move its index, for a delete all of it.
type cellState struct {
	Index          int               `json:"index"` // -1: not known
	Kind           agent.CellKind    `json:"cell_type,omitempty"`
	Source         string            `json:"source"`
	ExecutionCount int               `json:"execution_count,omitempty"`
	Outputs        []json.RawMessage `json:"outputs,omitempty"`
}

func size(outputs []json.RawMessage) int {
	n := 0
	for _, o := range outputs {
		n += len(o)
	}
	return n
}

// record stores what a call did to a cell, at the step's anchor. A
// notebook that is a file is left to the file checkpoints; a failure is
// logged (the call itself succeeded).
func (n notebook) record(ctx context.Context, op, id string, before, after *cellState) {
	if _, ok := n.cells.(FileCells); ok || n.c == nil {
		return
	}
	ch := store.CellChange{Anchor: n.c.task.Stamp(), Notebook: n.cells.Path(), Op: op, CellID: id}
	var err error
	if before != nil {
		ch.Before, err = json.Marshal(before)
	}
	if after != nil && err == nil {
		ch.After, err = json.Marshal(after)
	}
	st, serr := n.code.openStore(context.WithoutCancel(ctx))
	if err == nil {
		err = serr
	}
	if err == nil {
		err = st.AddCellChange(context.WithoutCancel(ctx), n.c.id, ch)
	}
	if err != nil {
		n.code.log.Warn("record a cell change", "op", op, "cell", id, "error", err)
	}
}

// CellsReport says what a rewind did to one notebook's cells.
type CellsReport struct {
	// Notebook names it; Where is how it was reached: "the frontend" or
	// the file's path.
	Notebook, Where string
	// Restored counts the changes turned back.
	Restored int
	// Conflicts are the cells changed since by someone else, kept as they
	// are (Force overwrites).
	Conflicts []string
	// Unrestorable says what could not be turned back, and why.
	Unrestorable []string
}

// restoreCells turns back the cell changes, latest first, per notebook:
// through the frontend that shows it, else in its file (when no frontend
// shows it). It returns a report per notebook and the workspace paths of
// the notebooks' files it handled, which the files' restore leaves alone.
func (w *World) restoreCells(ctx context.Context, changes []store.CellChange, force bool) ([]CellsReport, map[string]bool) {
	var order []string
	byNB := map[string][]store.CellChange{}
	for _, c := range changes {
		if _, ok := byNB[c.Notebook]; !ok {
			order = append(order, c.Notebook)
		}
		byNB[c.Notebook] = append(byNB[c.Notebook], c)
	}
	handled := map[string]bool{}
	var out []CellsReport
	for _, nb := range order {
		rep := CellsReport{Notebook: nb, Where: "the frontend"}
		file := w.notebookFile(nb)
		if file != "" {
			if rel, err := filepath.Rel(w.set.workspace, file); err == nil && !strings.HasPrefix(rel, "..") {
				handled[filepath.ToSlash(rel)] = true
			}
		}
		cells, err := w.cellsFor(nb, file)
		if err != nil {
			rep.Unrestorable = append(rep.Unrestorable, err.Error())
			out = append(out, rep)
			continue
		}
		if fc, ok := cells.(FileCells); ok {
			rep.Where = fc.File()
		}
		w.undoCells(ctx, cells, byNB[nb], force, &rep)
		out = append(out, rep)
	}
	return out, handled
}

// cellsFor is where notebook nb's cells are put back: the frontend that
// shows it, else its file.
func (w *World) cellsFor(nb, file string) (Cells, error) {
	if fe := w.frontends.frontendsNow(); fe != nil {
		if cells := fe.Find(nb); cells != nil {
			return cells, nil
		}
	}
	if w.set.openNotebook == nil || file == "" {
		return nil, fmt.Errorf("no frontend shows %s now and its file is not found: its cells are left as they are", nb)
	}
	cells, err := w.set.openNotebook(file)
	if err != nil {
		return nil, fmt.Errorf("no frontend shows %s now, and its file: %w", nb, err)
	}
	return cells, nil
}

// notebookFile is the file of notebook nb (named relative to the Jupyter
// server's root, while the workspace is the kernel's directory: the
// notebook's own), or "" when it is not found.
func (w *World) notebookFile(nb string) string {
	if nb == "" || w.set.workspace == "" {
		return ""
	}
	rel := filepath.FromSlash(nb)
	cands := []string{filepath.Join(w.set.workspace, rel)}
	dir := filepath.Dir(rel)
	if dir == "." || strings.HasSuffix(w.set.workspace, string(filepath.Separator)+dir) {
		cands = append(cands, filepath.Join(w.set.workspace, filepath.Base(rel)))
	}
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
			return c
		}
	}
	return ""
}

// undoCells turns back one notebook's changes, latest first. A cell whose
// source is not what the agent left is someone else's since: a conflict,
// kept (and the cell's earlier changes with it) unless force.
func (w *World) undoCells(ctx context.Context, cells Cells, changes []store.CellChange, force bool, rep *CellsReport) {
	v, err := cells.Read(ctx, 1)
	if err != nil {
		rep.Unrestorable = append(rep.Unrestorable, "the notebook could not be read: "+err.Error())
		return
	}
	u := &cellUndo{cells: cells, cur: make(map[string]string, len(v.Cells)), n: len(v.Cells), alias: map[string]string{}}
	for _, c := range v.Cells {
		u.cur[c.ID] = c.Source
	}
	conflicted := map[string]bool{}
	for i := len(changes) - 1; i >= 0; i-- {
		ch := changes[i]
		id := ch.CellID
		if a, ok := u.alias[id]; ok {
			id = a
		}
		if conflicted[id] {
			continue
		}
		var before, after cellState
		_ = json.Unmarshal(ch.Before, &before)
		_ = json.Unmarshal(ch.After, &after)
		if src, exists := u.cur[id]; (ch.Op == cellInsert || ch.Op == cellEdit) && exists && src != after.Source && !force {
			conflicted[id] = true
			rep.Conflicts = append(rep.Conflicts, fmt.Sprintf("cell %s (changed since the agent's %s)", messages.ShortID(id), ch.Op))
			continue
		}
		restored, err := u.undo(ctx, ch, id, before)
		if err != nil {
			rep.Unrestorable = append(rep.Unrestorable, fmt.Sprintf("cell %s: %v", messages.ShortID(id), err))
			continue
		}
		if restored {
			rep.Restored++
		}
	}
}

// cellUndo is one notebook's cells while undoCells turns its changes back:
// their sources now, their number, and the deleted cells it put back under
// new ids.
type cellUndo struct {
	cells Cells
	cur   map[string]string // id → source
	n     int
	alias map[string]string // a deleted cell put back under a new id
}

// undo turns back change ch of cell id (now so named), which was before
// before it. It reports whether it changed the notebook: a change already
// undone (the cell is gone, or back) is left.
func (u *cellUndo) undo(ctx context.Context, ch store.CellChange, id string, before cellState) (bool, error) {
	_, exists := u.cur[id]
	switch ch.Op {
	case cellInsert:
		if !exists {
			return false, nil // gone already
		}
		if _, _, err := u.cells.Delete(ctx, id); err != nil {
			return false, err
		}
		delete(u.cur, id)
		u.n--
	case cellEdit:
		if !exists {
			return false, errors.New("deleted since: its edit cannot be turned back")
		}
		if _, err := u.cells.SetSource(ctx, id, before.Source); err != nil {
			return false, err
		}
		u.cur[id] = before.Source
	case cellMove:
		if !exists {
			return false, nil
		}
		if before.Index < 0 {
			return false, errors.New("where it was is not known")
		}
		if _, err := u.cells.Move(ctx, id, min(before.Index, u.n-1)); err != nil {
			return false, err
		}
	case cellDelete:
		if exists {
			return false, nil // back already
		}
		return true, u.putBack(ctx, ch.CellID, before)
	default:
		return false, nil
	}
	return true, nil
}

// putBack inserts deleted cell id again where it was, as it was.
func (u *cellUndo) putBack(ctx context.Context, id string, before cellState) error {
	at := before.Index
	if at < 0 || at > u.n {
		at = u.n
	}
	c, err := u.cells.Insert(ctx, at, Cell{ID: id, Kind: before.Kind, Source: before.Source,
		ExecutionCount: before.ExecutionCount, Outputs: before.Outputs})
	if err != nil {
		return err
	}
	if c.ID != id {
		u.alias[id] = c.ID
	}
	u.cur[c.ID] = before.Source
	u.n++
	return nil
}
