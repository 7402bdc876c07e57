package notebooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentkernel/agentkernel/kernel/client"
)

// Doc is an .ipynb file (OpenFile) whose cells are changed by id, as the
// agent's notebook tools change them when no frontend has the notebook. Its methods are
// safe for concurrent use; each returns copies, never its own cells.
type Doc struct {
	mu   sync.Mutex
	nb   *Notebook
	path string
	seen fileState // the file as last read or written
	// hook, when set (tests), is called at each point of a save's swap
	// ("written", "moved", "linked"): a writer can be timed into it.
	hook func(step string)
}

// ErrNoCell is returned for a cell id the notebook does not have.
var ErrNoCell = errors.New("no such cell")

// ErrChanged is returned when the file changed on disk since the Doc read
// it: nothing is written over a newer file, and the change was not made
// (read the notebook again and redo it).
var ErrChanged = errors.New("the notebook file changed on disk since it was read: the change was not made; read the notebook again")

// OpenFile returns a Doc of the .ipynb at path. Each change reads the file
// again when it changed (someone saved it) and is written at once, unless
// the file changed between that read and the write (ErrChanged): a save
// that lost a race with another writer, however close, leaves that
// writer's file in place (see swap).
func OpenFile(path string) (*Doc, error) {
	d := &Doc{path: path}
	if err := d.reload(); err != nil {
		return nil, err
	}
	return d, nil
}

// Path returns the file's path ("" in memory).
func (d *Doc) Path() string { return d.path }

// reload reads the file when it changed since the last read (d.mu held,
// or d not yet shared).
func (d *Doc) reload() error {
	if d.path == "" {
		return nil
	}
	if d.nb != nil {
		same, err := d.seen.same(d.path)
		if err != nil {
			return fmt.Errorf("notebooks: %w", err)
		}
		if same {
			return nil
		}
	}
	nb, st, err := readState(d.path)
	if err != nil {
		return err
	}
	d.nb, d.seen = nb, st
	return nil
}

// save writes the file (d.mu held), refusing to write over a file that
// changed since it was read.
func (d *Doc) save() error {
	if d.path == "" {
		return nil
	}
	same, err := d.seen.same(d.path)
	if err != nil {
		return fmt.Errorf("notebooks: %w", err)
	}
	if !same {
		d.nb = nil // read it again next time
		return changedErr(d.path, nil)
	}
	b, err := Marshal(d.nb)
	if err != nil {
		return fmt.Errorf("%w (%s)", err, d.path)
	}
	seen := time.Now()
	tmp, fi, err := writeSynced(d.path, b)
	if err != nil {
		return err
	}
	if err := d.swap(tmp); err != nil {
		if errors.Is(err, ErrChanged) {
			d.nb = nil
		}
		return err
	}
	d.seen = stateOf(fi, b, seen)
	return nil
}

// change runs f on the notebook, read again if its file changed, and
// saves it when f succeeds.
func (d *Doc) change(f func(nb *Notebook) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reload(); err != nil {
		return err
	}
	before, err := Marshal(d.nb)
	if err != nil {
		return err
	}
	if err := f(d.nb); err != nil {
		return err
	}
	if err := d.save(); err != nil {
		if nb, perr := Parse(before); perr == nil && d.nb != nil {
			d.nb = nb // the change did not land: the notebook is as it was
		}
		return err
	}
	return nil
}

// Notebook returns a copy of the notebook now.
func (d *Doc) Notebook() (*Notebook, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reload(); err != nil {
		return nil, err
	}
	return d.nb.Clone(), nil
}

// findCell returns the index of cell id, or an error.
// CellIndex is the index of the cell id in nb; ErrNoCell when there is
// none.
func (nb *Notebook) CellIndex(id string) (int, error) { return findCell(nb, id) }

func findCell(nb *Notebook, id string) (int, error) {
	for i, c := range nb.Cells {
		if c.ID == id {
			return i, nil
		}
	}
	return -1, fmt.Errorf("cell %q: %w", id, ErrNoCell)
}

// Insert adds c at index and returns it: with its id when it has one that
// the notebook does not, else with a new one.
func (d *Doc) Insert(index int, c *Cell) (*Cell, error) {
	c = c.Clone()
	if c.Metadata == nil {
		c.Metadata = Metadata{}
	}
	if c.CellType == Code && c.Outputs == nil {
		c.Outputs = []*Output{}
	}
	err := d.change(func(nb *Notebook) error {
		if index < 0 || index > len(nb.Cells) {
			return fmt.Errorf("index %d: the notebook has %d cells", index, len(nb.Cells))
		}
		if _, err := findCell(nb, c.ID); c.ID == "" || err == nil {
			c.ID = NewCellID()
		}
		nb.Cells = append(nb.Cells[:index], append([]*Cell{c}, nb.Cells[index:]...)...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c.Clone(), nil
}

// SetSource replaces cell id's source and returns the cell as it was.
func (d *Doc) SetSource(id, source string) (*Cell, error) {
	var before *Cell
	err := d.change(func(nb *Notebook) error {
		i, err := findCell(nb, id)
		if err != nil {
			return err
		}
		before = nb.Cells[i].Clone()
		nb.Cells[i].Source = source
		return nil
	})
	return before, err
}

// Move moves cell id to index, counted among the other cells, and returns
// the index it was at.
func (d *Doc) Move(id string, to int) (int, error) {
	from := -1
	err := d.change(func(nb *Notebook) error {
		i, err := findCell(nb, id)
		if err != nil {
			return err
		}
		from = i
		if to < 0 || to >= len(nb.Cells) {
			return fmt.Errorf("index %d: the notebook has %d cells", to, len(nb.Cells))
		}
		c := nb.Cells[i]
		rest := append(append([]*Cell(nil), nb.Cells[:i]...), nb.Cells[i+1:]...)
		nb.Cells = append(rest[:to], append([]*Cell{c}, rest[to:]...)...)
		return nil
	})
	return from, err
}

// Delete removes cell id and returns it, and the index it was at.
func (d *Doc) Delete(id string) (*Cell, int, error) {
	var gone *Cell
	at := -1
	err := d.change(func(nb *Notebook) error {
		i, err := findCell(nb, id)
		if err != nil {
			return err
		}
		gone, at = nb.Cells[i], i
		nb.Cells = append(nb.Cells[:i], nb.Cells[i+1:]...)
		return nil
	})
	return gone, at, err
}

// SetOutputs replaces code cell id's outputs (nbformat output objects) and
// its execution count (nil: none).
func (d *Doc) SetOutputs(id string, outputs []json.RawMessage, count *int) error {
	outs := make([]*Output, 0, len(outputs))
	for i, raw := range outputs {
		var o Output
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&o); err != nil {
			return fmt.Errorf("output %d: %w", i, err)
		}
		outs = append(outs, &o)
	}
	return d.change(func(nb *Notebook) error {
		i, err := findCell(nb, id)
		if err != nil {
			return err
		}
		if nb.Cells[i].CellType != Code {
			return fmt.Errorf("cell %q is a %s cell, not code", id, nb.Cells[i].CellType)
		}
		nb.Cells[i].Outputs, nb.Cells[i].ExecutionCount = outs, count
		return nil
	})
}

// PromptMode reports whether nb is a notebook of agentkernel's prompt
// mode — the "Agent" kernel, where a bare code cell is a request to the
// agent and code runs under a %%code line — by its kernelspec: installed
// here, an agentkernel one says its mode in its metadata; one not
// installed here (or that says none) by the language the notebook gives
// it, markdown for a prompt-mode kernel.
func PromptMode(nb *Notebook) bool {
	ks, ok := nb.Kernelspec()
	if !ok {
		return false
	}
	if spec, err := client.FindSpec(ks.Name); err == nil {
		ak, ours := spec.Metadata["agentkernel"].(map[string]any)
		if !ours {
			return false
		}
		if mode, ok := ak["mode"].(string); ok {
			return mode == "prompt"
		}
	}
	return ks.Language == "markdown"
}
