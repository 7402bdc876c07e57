package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/notebooks"
	"github.com/agentkernel/agentkernel/session"
)

// NotebookFile is the .ipynb at path as the notebook the agent works in
// (session.Cells), for a surface that no frontend shows the notebook to
// (agentkernel ask --notebook, mcp serve --notebook): each change is
// written to the file at once, and never over a newer file
// (notebooks.ErrChanged), which a change then says.
func NotebookFile(path string) (session.FileCells, error) {
	d, err := notebooks.OpenFile(path)
	if err != nil {
		return nil, err
	}
	return docCells{d: d, name: filepath.Base(path)}, nil
}

// promptFile reports whether cells are a notebook file (NotebookFile's)
// of agentkernel's prompt mode, by its kernelspec (notebooks.PromptMode).
func promptFile(cells session.Cells) bool {
	c, ok := cells.(docCells)
	if !ok {
		return false
	}
	nb, err := c.d.Notebook()
	return err == nil && notebooks.PromptMode(nb)
}

// Path implements session.Cells.
func (c docCells) Path() string { return c.name }

// File implements session.FileCells.
func (c docCells) File() string { return c.d.Path() }

// docCells is a notebooks.Doc as session.Cells.
type docCells struct {
	d    *notebooks.Doc
	name string
}

func (c docCells) Read(_ context.Context, maxOutput int) (agent.NotebookView, error) {
	nb, err := c.d.Notebook()
	if err != nil {
		return agent.NotebookView{}, err
	}
	v := agent.NotebookView{Path: c.name, Cells: make([]agent.NotebookCell, 0, len(nb.Cells))}
	for _, cell := range nb.Cells {
		v.Cells = append(v.Cells, agentCell(cell, maxOutput, false))
	}
	return v, nil
}

// ReadRange implements agent.RangeReader: only the cells of r are
// summarized for the agent.
func (c docCells) ReadRange(_ context.Context, r agent.ReadRange) (agent.NotebookView, error) {
	nb, err := c.d.Notebook()
	if err != nil {
		return agent.NotebookView{}, err
	}
	v := agent.NotebookView{Path: c.name, Part: true, Count: len(nb.Cells), ActiveIndex: -1}
	v.Start, v.Cells = r.Take(len(nb.Cells), func(i int) agent.NotebookCell { return agentCell(nb.Cells[i], r.MaxOutput, r.Images) })
	return v, nil
}

// agentCell is a notebook cell as the agent reads it, with its outputs'
// images when images is set.
func agentCell(c *notebooks.Cell, maxOutput int, images bool) agent.NotebookCell {
	out := agent.NotebookCell{ID: c.ID, Kind: agent.CellKind(c.CellType), Source: c.Source}
	if c.ExecutionCount != nil {
		out.ExecutionCount = *c.ExecutionCount
	}
	for _, o := range c.Outputs {
		raw, err := json.Marshal(o)
		if err != nil {
			continue
		}
		o := session.SummarizeOutput(raw, maxOutput)
		if images {
			o.Pictures = session.OutputPictures(raw)
		}
		out.Outputs = append(out.Outputs, o)
	}
	return out
}

func (c docCells) Insert(_ context.Context, index int, in session.Cell) (agent.NotebookCell, error) {
	nc := &notebooks.Cell{ID: in.ID, CellType: notebooks.CellType(in.Kind), Source: in.Source}
	if in.ExecutionCount > 0 {
		nc.ExecutionCount = &in.ExecutionCount
	}
	for i, raw := range in.Outputs {
		var o notebooks.Output
		if err := json.Unmarshal(raw, &o); err != nil {
			return agent.NotebookCell{}, fmt.Errorf("output %d: %w", i, err)
		}
		nc.Outputs = append(nc.Outputs, &o)
	}
	cell, err := c.d.Insert(index, nc)
	if err != nil {
		return agent.NotebookCell{}, err
	}
	return agentCell(cell, 0, false), nil
}

func (c docCells) SetSource(_ context.Context, id, source string) (agent.NotebookCell, error) {
	before, err := c.d.SetSource(id, source)
	if err != nil {
		return agent.NotebookCell{}, cellErr(err)
	}
	return agentCell(before, 0, false), nil
}

func (c docCells) Move(_ context.Context, id string, index int) (int, error) {
	from, err := c.d.Move(id, index)
	return from, cellErr(err)
}

func (c docCells) Delete(_ context.Context, id string) (session.Cell, int, error) {
	gone, at, err := c.d.Delete(id)
	if err != nil {
		return session.Cell{}, -1, cellErr(err)
	}
	out := session.Cell{ID: gone.ID, Kind: agent.CellKind(gone.CellType), Source: gone.Source}
	if gone.ExecutionCount != nil {
		out.ExecutionCount = *gone.ExecutionCount
	}
	for _, o := range gone.Outputs {
		if raw, err := json.Marshal(o); err == nil {
			out.Outputs = append(out.Outputs, raw)
		}
	}
	return out, at, nil
}

func (c docCells) SetOutputs(_ context.Context, id string, outputs []json.RawMessage, count int) error {
	var n *int
	if count > 0 {
		n = &count
	}
	return cellErr(c.d.SetOutputs(id, outputs, n))
}

// cellErr says a missing cell in the agent's words.
func cellErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, notebooks.ErrNoCell) {
		return fmt.Errorf("%w (%v)", agent.ErrNoCell, err)
	}
	return err
}
