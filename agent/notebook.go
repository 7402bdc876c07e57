package agent

import (
	"context"
	"errors"
)

// This file: the notebook the agent works in, as the agent sees it. The
// agent reads every cell and inserts, edits, moves, deletes and runs cells
// through a Notebook; where the change happens — the frontend's shared
// model (JupyterLab's undo, saving and collaboration then apply), the
// headless runner's notebook, the .ipynb file — is the implementation's
// (the session host gives it), and the agent never learns Jupyter.

// CellKind is a cell's type: code, markdown or raw.
type CellKind string

// The cell kinds of nbformat.
const (
	CodeCell     CellKind = "code"
	MarkdownCell CellKind = "markdown"
	RawCell      CellKind = "raw"
)

// Notebook is the notebook the agent works in: cells addressed by their
// nbformat ids. Implementations are safe for concurrent use; an error is
// told to the model as the tool's (ErrNoCell for an id that is not there,
// ErrConflict for a cell the user is changing).
type Notebook interface {
	// Read returns the notebook now, each output's text cut to at most
	// maxOutput characters and its images named, not inlined.
	Read(ctx context.Context, maxOutput int) (NotebookView, error)
	// Insert adds a cell at index (0 is first, the number of cells last)
	// and returns it, with its new id.
	Insert(ctx context.Context, index int, kind CellKind, source string) (NotebookCell, error)
	// SetSource replaces cell id's source and returns the cell as it was.
	SetSource(ctx context.Context, id, source string) (NotebookCell, error)
	// Move moves cell id to index, counted among the other cells.
	Move(ctx context.Context, id string, index int) error
	// Delete removes cell id and returns it.
	Delete(ctx context.Context, id string) (NotebookCell, error)
	// Run runs code cell id in the live kernel as if the user had: its
	// outputs and execution count land in the cell. code is the cell's
	// code as the agent read it (ParseCell's, without a %%code line),
	// screened and approved: it is what runs, and a cell whose code is no
	// longer that is not run (ErrConflict). The result is what the model
	// is told.
	// out, when not nil, is also given the outputs as they come (the
	// running turn's TurnOptions.Output).
	Run(ctx context.Context, id, code string, out func(CodeOutput)) (CodeResult, error)
}

// NotebookView is a notebook as Read returns it, or part of it as
// ReadCells does.
type NotebookView struct {
	// Path names the notebook (relative to the workspace where it is in
	// it); "" when not known.
	Path  string
	Cells []NotebookCell
	// Active is the id of the cell the user is in, and Selection the text
	// selected there; "" when not known.
	Active, Selection string
	// Part is set when Cells are part of the notebook (ReadCells): the
	// cells from index Start on, of Count; ActiveIndex is the index of
	// Active (-1: not known).
	Part                      bool
	Start, Count, ActiveIndex int
}

// count is the number of cells in the notebook v shows.
func (v NotebookView) count() int {
	if v.Part {
		return v.Count
	}
	return len(v.Cells)
}

// activeIndex is the index of the cell the user is in, or -1.
func (v NotebookView) activeIndex() int {
	if i := indexOf(v, v.Active); i >= 0 {
		return v.Start + i
	}
	if v.Part && v.Active != "" {
		return v.ActiveIndex
	}
	return -1
}

// ReadRange bounds a read to what the model can be given: the cells from
// index Start up to End (0: the last), whole while their sources and
// outputs (each output's text cut to MaxOutput characters) come to at
// most MaxChars characters — the first one always. MaxChars 0: no bound.
type ReadRange struct {
	Start, End, MaxChars, MaxOutput int
	// Images asks for the outputs' images themselves (CellOutput.Pictures),
	// each at most MaxAttachedImageBytes; a read of one cell asks.
	Images bool
}

// RangeReader is a Notebook that reads only the cells of a ReadRange
// itself (the frontend's comm: the rest never crosses it). ReadCells uses
// it when a Notebook has it.
type RangeReader interface {
	ReadRange(ctx context.Context, r ReadRange) (NotebookView, error)
}

// NotebookReader reads a notebook whole (Notebook.Read).
type NotebookReader interface {
	Read(ctx context.Context, maxOutput int) (NotebookView, error)
}

// ReadCells reads the cells of r from nb: by its ReadRange when it has
// one, else read whole and bounded by PartOf. The view is a Part.
func ReadCells(ctx context.Context, nb NotebookReader, r ReadRange) (NotebookView, error) {
	if rr, ok := nb.(RangeReader); ok {
		return rr.ReadRange(ctx, r)
	}
	v, err := nb.Read(ctx, r.MaxOutput)
	if err != nil {
		return NotebookView{}, err
	}
	return PartOf(v, r), nil
}

// PartOf is the cells of r in v (a whole notebook): the Part a RangeReader
// gives.
func PartOf(v NotebookView, r ReadRange) NotebookView {
	p := v
	p.Part, p.Count, p.ActiveIndex = true, len(v.Cells), indexOf(v, v.Active)
	p.Start, p.Cells = r.Take(len(v.Cells), func(i int) NotebookCell { return v.Cells[i] })
	return p
}

// Bounds are the indexes [start, end) that r asks for in a notebook of n
// cells.
func (r ReadRange) Bounds(n int) (start, end int) {
	start = max(0, min(r.Start, n))
	end = n
	if r.End > 0 {
		end = max(start, min(r.End, n))
	}
	return start, end
}

// Take is the part r asks for of a notebook of n cells whose cell i is
// cell(i): the index of its first cell, and the cells from there, whole,
// while their sources and outputs come to at most MaxChars characters
// (the first one always). cell is called only for the cells looked at.
func (r ReadRange) Take(n int, cell func(i int) NotebookCell) (start int, cells []NotebookCell) {
	start, end := r.Bounds(n)
	used := 0
	for i := start; i < end; i++ {
		c := cell(i)
		used += len(c.Source)
		for _, o := range c.Outputs {
			used += len(o.Text)
		}
		if i > start && r.MaxChars > 0 && used > r.MaxChars {
			break
		}
		cells = append(cells, c)
	}
	return start, cells
}

// NotebookCell is one cell.
type NotebookCell struct {
	ID     string
	Kind   CellKind
	Source string
	// ExecutionCount is the code cell's; 0 when it has none.
	ExecutionCount int
	Outputs        []CellOutput
}

// CellOutput is one output of a code cell, as the agent reads it.
type CellOutput struct {
	// Type is nbformat's output_type: stream, display_data,
	// execute_result, error.
	Type string
	// Text is its text (a stream's, text/plain, an error's name, value
	// and traceback), cut; Cut is how many characters were left out.
	Text string
	Cut  int
	// Images are the mime types of its images (image/png), named only.
	Images []string
	// Pictures are the images themselves, when the read asked for them
	// (ReadRange.Images): those the models take, within
	// MaxAttachedImageBytes.
	Pictures []Image
}

// Errors of a Notebook, for the model.
var (
	ErrNoCell   = errors.New("no such cell")
	ErrConflict = errors.New("the user is changing the cell")
)

// NotebookSource gives the notebook the agent works in now, or nil when
// there is none (no frontend has the notebook and no file can stand in):
// the notebook tools are offered only while it gives one.
type NotebookSource func() Notebook
