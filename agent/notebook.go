package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
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

// The notebook tools.
const (
	ToolNotebookRead   = "notebook_read"
	ToolNotebookInsert = "notebook_insert_cell"
	ToolNotebookEdit   = "notebook_edit_cell"
	ToolNotebookMove   = "notebook_move_cell"
	ToolNotebookDelete = "notebook_delete_cell"
	ToolNotebookRun    = "notebook_run_cell"
)

// IsNotebookTool reports whether name is one of the notebook tools.
func IsNotebookTool(name string) bool { return strings.HasPrefix(name, "notebook_") }

// NotebookToolSpecs are the notebook tools as a model, or an MCP client of
// agentkernel's server, is offered them.
func NotebookToolSpecs() []provider.Tool {
	tb := &Toolbox{}
	var out []provider.Tool
	for _, t := range tb.notebookTools() {
		s, err := t.schema()
		if err != nil {
			panic(fmt.Sprintf("agent: the schema of %s: %v", t.name, err)) // our own definitions: a bug
		}
		t.inputSchema = s
		out = append(out, t.Spec())
	}
	return out
}

// notebookTools are the notebook tools of tb: reading the notebook,
// inserting a cell, and the tools on one cell (cellTools).
func (tb *Toolbox) notebookTools() []*Tool {
	return append([]*Tool{tb.notebookReadTool(), tb.notebookInsertTool()}, tb.cellTools()...)
}

// inPrompt is a notebook tool's description code, and in prompt mode
// text after it: there a bare code cell is a request to the agent, and
// the tools say what %%code means (code mode's texts are unchanged).
func (tb *Toolbox) inPrompt(code, text string) string {
	if tb.opts.PromptCells {
		return code + " " + text
	}
	return code
}

// cellRef are the parameters that name the cell a tool is about.
var cellRef = []param{
	{name: "id", typ: tString, desc: "The cell's id (from notebook_read; ids are stable)."},
	{name: "index", typ: tInteger, desc: "The cell's index (0-based; indexes shift as cells come and go), if the id is not known."},
}

// withCellRef is cellRef, then more.
func withCellRef(more ...param) []param {
	return append(append([]param(nil), cellRef...), more...)
}

// cellKinds are the kinds of cell the agent writes.
var cellKinds = []string{string(CodeCell), string(MarkdownCell)}

// notebookReadTool reads the notebook, or one cell whole.
func (tb *Toolbox) notebookReadTool() *Tool {
	return &Tool{
		name: ToolNotebookRead, class: ClassRead,
		description: tb.inPrompt("Read the notebook the user works in: each cell's id, type, source, execution count "+
			"and outputs (text cut), and the cell the user is in. Bounded by start/end (cell "+
			"indexes) or max_tokens; id reads one cell whole, images included.",
			"A code cell without a first line %%code is a request to you, not code."),
		params: []param{
			{name: "id", typ: tString, desc: "One cell, whole (cut only to max_tokens)."},
			{name: "start", typ: tInteger, desc: "First cell (index). Default 0."},
			{name: "end", typ: tInteger, desc: "Stop before this cell (index). Default: the end."},
			{name: "max_tokens", typ: tInteger, min: 100, desc: "About how long the answer may be. Default 8000."},
		},
		run: tb.notebookRead,
	}
}

// notebookInsertTool inserts a new cell.
func (tb *Toolbox) notebookInsertTool() *Tool {
	return &Tool{
		name: ToolNotebookInsert, class: ClassNotebook,
		description: tb.inPrompt("Insert a new code or markdown cell into the notebook. By default it goes below the cell "+
			"the user is in (else at the end); give index or after_id to place it. Returns its id. It is not run.",
			"A code cell gets a first line %%code when it has none, so that it runs as code."),
		params: []param{
			{name: "source", typ: tString, required: true, blank: true, desc: "The cell's text."},
			{name: "type", typ: tString, enum: cellKinds, desc: "code (default) or markdown."},
			{name: "index", typ: tInteger, desc: "Where it goes (0: first)."},
			{name: "after_id", typ: tString, desc: "Put it after the cell with this id."},
		},
		run: tb.notebookInsert,
	}
}

// cellTools change, move, delete and run one cell, named by cellRef; each
// checks its call first (checkCell).
func (tb *Toolbox) cellTools() []*Tool {
	return []*Tool{
		{
			name: ToolNotebookEdit, class: ClassNotebook,
			description: tb.inPrompt("Change a cell: its source whole (source), or by replacing text in it (search must "+
				"match once, unless replace_all), not both; and its type (type). Changing a cell the agent did not "+
				"write asks the user.",
				"A code cell keeps its first line %%code (given back when a new source leaves it out)."),
			params: withCellRef(
				param{name: "source", typ: tString, blank: true, desc: "The cell's new text, whole."},
				param{name: "search", typ: tString, desc: "Exact text to find in the cell."},
				param{name: "replace", typ: tString, blank: true, desc: "Text to put in its place."},
				param{name: "replace_all", typ: tBoolean, desc: "Replace every occurrence. Default false."},
				param{name: "type", typ: tString, enum: cellKinds, desc: "Make it this type of cell (its id and place stay)."},
			),
			run:   tb.notebookEdit,
			check: tb.checkCell(ToolNotebookEdit),
		},
		{
			name: ToolNotebookMove, class: ClassNotebook,
			description: "Move a cell to another place in the notebook: to index, or after the cell after_id.",
			params: withCellRef(
				param{name: "to", typ: tInteger, desc: "Its new index, among the other cells."},
				param{name: "after_id", typ: tString, desc: "Put it after the cell with this id."},
			),
			run:   tb.notebookMove,
			check: tb.checkCell(ToolNotebookMove),
		},
		{
			name: ToolNotebookDelete, class: ClassNotebook,
			description: "Delete a cell. Deleting a cell the agent did not write asks the user.",
			params:      withCellRef(),
			run:         tb.notebookDelete,
			check:       tb.checkCell(ToolNotebookDelete),
		},
		{
			name: ToolNotebookRun, class: ClassExecute, subject: "code",
			description: tb.inPrompt("Run a code cell of the notebook in the live kernel, as if the user had: its outputs and "+
				"execution count appear in that cell. Returns what it printed, its result and any error.",
				"The code under its %%code line runs; a cell without one is a request, and is not run."),
			// code is the cell's, read by the check: what the policy, the
			// hooks and the ask see, and what runs.
			params: withCellRef(timeoutParam, param{name: "code", typ: tString, internal: true,
				desc: "The cell's code, as read."}),
			runCode: tb.notebookRun,
			check:   tb.checkCell(ToolNotebookRun),
		},
	}
}

// notebook returns the notebook to work in, or an error for the model.
func (tb *Toolbox) notebook() (Notebook, error) {
	if src := tb.opts.Notebook; src != nil {
		if nb := src(); nb != nil {
			return nb, nil
		}
	}
	return nil, errors.New("no notebook is open to work in (no frontend has it, and no .ipynb file can stand in)")
}

// intArg returns an integer argument and whether it was given.
func intArg(in map[string]any, name string) (int, bool) {
	v, ok := in[name].(int64)
	return int(v), ok
}

// resolveCell turns the id or index of a tool's input into a cell id.
func resolveCell(ctx context.Context, nb Notebook, in map[string]any) (string, error) {
	if id, _ := in["id"].(string); id != "" {
		return id, nil
	}
	if _, ok := intArg(in, "index"); !ok {
		return "", errors.New("give the cell's id (or its index)")
	}
	v, err := nb.Read(ctx, 0)
	if err != nil {
		return "", err
	}
	c, err := cellIn(v, in)
	return c.ID, err
}

// indexOf returns the index of cell id in v, or -1.
func indexOf(v NotebookView, id string) int {
	for i, c := range v.Cells {
		if c.ID == id {
			return i
		}
	}
	return -1
}

func (tb *Toolbox) notebookRead(ctx context.Context, in map[string]any) (Result, error) {
	nb, err := tb.notebook()
	if err != nil {
		return Result{}, err
	}
	budget := 8000
	if n, ok := intArg(in, "max_tokens"); ok {
		budget = n
	}
	if id, _ := in["id"].(string); id != "" {
		return tb.readOneCell(ctx, nb, id, budget)
	}
	// Only what can be shown is read: the page sends the cells that fit
	// in the answer's characters, and the count of the rest.
	r := ReadRange{MaxChars: budget * 4, MaxOutput: min(4000, budget*2)}
	if n, ok := intArg(in, "start"); ok {
		r.Start = max(0, n)
	}
	if n, ok := intArg(in, "end"); ok {
		r.End = max(r.Start, n)
		if r.End == 0 {
			r.End = -1 // end=0: no cells
		}
	}
	v, err := ReadCells(ctx, nb, r)
	if err != nil {
		return Result{}, fmt.Errorf("notebook_read: %w", err)
	}
	start, end := r.Bounds(v.count())
	if r.End < 0 {
		end = start
	}
	text := renderNotebook(v, start, end, r.MaxChars)
	if hasImages(v) {
		text += "\n(Images are named only here: notebook_read with a cell's id shows them.)\n"
	}
	return Result{Text: text}, nil
}

// hasImages reports whether an output of v's cells has an image.
func hasImages(v NotebookView) bool {
	for _, c := range v.Cells {
		for _, o := range c.Outputs {
			if len(o.Images) > 0 {
				return true
			}
		}
	}
	return false
}

// readOneCell reads cell id whole: its outputs cut only to the answer's
// budget (of tokens), not to a share of a page of cells.
func (tb *Toolbox) readOneCell(ctx context.Context, nb Notebook, id string, budget int) (Result, error) {
	v, err := nb.Read(ctx, 0) // sources only: where the cell is
	if err != nil {
		return Result{}, fmt.Errorf("notebook_read: %w", err)
	}
	i := indexOf(v, id)
	if i < 0 {
		return Result{}, fmt.Errorf("notebook_read: cell %s: %w", id, ErrNoCell)
	}
	r := ReadRange{Start: i, End: i + 1, MaxChars: budget * 4, MaxOutput: budget * 4, Images: true}
	part, err := ReadCells(ctx, nb, r)
	if err != nil {
		return Result{}, fmt.Errorf("notebook_read: %w", err)
	}
	res := Result{Text: renderNotebook(part, i, i+1, r.MaxChars)}
	showPictures(&res, part)
	return res, nil
}

// showPictures adds the images of v's outputs to res: the first
// maxShownImages as image blocks (which a model without vision is not
// sent: it keeps the text's description of each) and shown in the UI.
func showPictures(res *Result, v NotebookView) {
	var names []string
	for _, c := range v.Cells {
		for _, o := range c.Outputs {
			for _, im := range o.Pictures {
				if len(res.Blocks) >= maxShownImages || im.Data == "" || im.Bytes > maxShownImageBytes {
					names = append(names, im.Summary()+" (not shown)")
					continue
				}
				names = append(names, im.Summary())
				res.Images = append(res.Images, im.Summary())
				res.Shown = append(res.Shown, im.DataURL())
				res.Blocks = append(res.Blocks, messages.ContentBlock{Type: messages.BlockImage,
					Source: &messages.ImageSource{Type: "base64", MediaType: im.MIME, Data: im.Data}})
			}
		}
	}
	if len(names) > 0 {
		res.Text += "\nImages of its outputs: " + strings.Join(names, ", ") + "\n"
	}
}

// renderNotebook writes cells [start, end) of v (a part from v.Start on)
// for the model, in at most about limit characters; the cells past it are
// named, with how to read on.
func renderNotebook(v NotebookView, start, end, limit int) string {
	var b strings.Builder
	name := v.Path
	if name == "" {
		name = "The notebook"
	}
	total := v.count()
	fmt.Fprintf(&b, "%s: %d cells", name, total)
	if start > 0 || end < total {
		fmt.Fprintf(&b, " (cells %d to %d shown)", start, end-1)
	}
	if v.Active != "" {
		fmt.Fprintf(&b, "; the user is in cell %s", v.Active)
		if i := v.activeIndex(); i >= 0 {
			fmt.Fprintf(&b, " (index %d)", i)
		}
	}
	b.WriteString(".\n")
	if v.Selection != "" {
		fmt.Fprintf(&b, "Selected there: %q\n", v.Selection)
	}
	for i := start; i < end; i++ {
		if i-v.Start < 0 || i-v.Start >= len(v.Cells) {
			// The reader left the rest out: it would not fit.
			fmt.Fprintf(&b, "\n[%d more cells not shown: read with start=%d]\n", end-i, i)
			break
		}
		var cb strings.Builder
		c := v.Cells[i-v.Start]
		fmt.Fprintf(&cb, "\n[%d] id=%s %s", i, c.ID, c.Kind)
		if c.ExecutionCount > 0 {
			fmt.Fprintf(&cb, " [%d]", c.ExecutionCount)
		}
		cb.WriteString("\n" + c.Source)
		if !strings.HasSuffix(c.Source, "\n") {
			cb.WriteString("\n")
		}
		for _, o := range c.Outputs {
			fmt.Fprintf(&cb, "-- %s", o.Type)
			for _, im := range o.Images {
				fmt.Fprintf(&cb, " [%s]", im)
			}
			cb.WriteString("\n")
			if o.Text != "" {
				cb.WriteString(strings.TrimRight(o.Text, "\n") + "\n")
			}
			if o.Cut > 0 {
				fmt.Fprintf(&cb, "[… %d more characters of this output]\n", o.Cut)
			}
		}
		if b.Len()+cb.Len() > limit && i > start {
			fmt.Fprintf(&b, "\n[%d more cells not shown: read with start=%d]\n", end-i, i)
			break
		}
		b.WriteString(cb.String())
	}
	return b.String()
}

func (tb *Toolbox) notebookInsert(ctx context.Context, in map[string]any) (Result, error) {
	nb, err := tb.notebook()
	if err != nil {
		return Result{}, err
	}
	kind := CodeCell
	switch t, _ := in["type"].(string); t {
	case "", "code":
	case "markdown":
		kind = MarkdownCell
	default:
		return Result{}, fmt.Errorf("notebook_insert_cell: type %q: want code or markdown", t)
	}
	v, err := nb.Read(ctx, 0)
	if err != nil {
		return Result{}, fmt.Errorf("notebook_insert_cell: %w", err)
	}
	at := len(v.Cells)
	if after, _ := in["after_id"].(string); after != "" {
		i := indexOf(v, after)
		if i < 0 {
			return Result{}, fmt.Errorf("notebook_insert_cell: after_id %q: %w", after, ErrNoCell)
		}
		at = i + 1
	} else if i, ok := intArg(in, "index"); ok {
		if i < 0 || i > len(v.Cells) {
			return Result{}, fmt.Errorf("notebook_insert_cell: index %d: the notebook has %d cells", i, len(v.Cells))
		}
		at = i
	} else if i := indexOf(v, v.Active); i >= 0 {
		at = i + 1
	}
	source := in["source"].(string)
	if kind == CodeCell {
		source = tb.asCode(source)
	}
	c, err := nb.Insert(ctx, at, kind, source)
	if err != nil {
		return Result{}, fmt.Errorf("notebook_insert_cell: %w", err)
	}
	tb.wrote(c.ID, c.Source)
	text := fmt.Sprintf("Inserted %s cell %s at index %d.", kind, c.ID, at)
	if source != in["source"] {
		text += " Its first line is " + CodeMagic + ", which makes it code in this notebook."
	}
	return Result{Text: text}, nil
}

func (tb *Toolbox) notebookEdit(ctx context.Context, in map[string]any) (Result, error) {
	nb, err := tb.notebook()
	if err != nil {
		return Result{}, err
	}
	id, err := resolveCell(ctx, nb, in)
	if err != nil {
		return Result{}, fmt.Errorf("notebook_edit_cell: %w", err)
	}
	c, err := cellOf(ctx, nb, id)
	if err != nil {
		return Result{}, fmt.Errorf("notebook_edit_cell: %w", err)
	}
	source, err := tb.editedSource(c, in)
	if err != nil {
		return Result{}, fmt.Errorf("notebook_edit_cell: %w", err)
	}
	kind := c.Kind
	if t, _ := in["type"].(string); t != "" {
		kind = CellKind(t)
	}
	var before NotebookCell
	if kind == c.Kind {
		before, err = nb.SetSource(ctx, id, source)
	} else {
		before, err = tb.retype(ctx, nb, c, kind, source)
		source = tb.typed(kind, source)
	}
	if err != nil {
		return Result{}, fmt.Errorf("notebook_edit_cell %s: %w", id, err)
	}
	tb.wrote(id, source)
	text := fmt.Sprintf("Changed cell %s (%d → %d lines).", id, countLines(before.Source), countLines(source))
	if kind != c.Kind {
		text = fmt.Sprintf("Changed cell %s from %s to %s (%d → %d lines).", id, c.Kind, kind, countLines(before.Source), countLines(source))
	}
	return Result{Text: text, Diff: linesDiff(before.Source, source)}, nil
}

// Retyper is a Notebook that can change a cell's type: the cell keeps its
// id and place, and takes source. It returns the cell as it was.
type Retyper interface {
	SetKind(ctx context.Context, id string, kind CellKind, source string) (NotebookCell, error)
}

// retype makes cell c of nb a kind cell holding source.
func (tb *Toolbox) retype(ctx context.Context, nb Notebook, c NotebookCell, kind CellKind, source string) (NotebookCell, error) {
	r, ok := nb.(Retyper)
	if !ok {
		return NotebookCell{}, errors.New("this notebook cannot change a cell's type: insert a new cell and delete this one")
	}
	return r.SetKind(ctx, c.ID, kind, tb.typed(kind, source))
}

// typed is source as a cell of kind holds it: a code cell the agent
// writes as asCode says; a markdown cell without a %%code line.
func (tb *Toolbox) typed(kind CellKind, source string) string {
	if kind == CodeCell {
		return tb.asCode(source)
	}
	if body, ok := CutCellMagic(source, CodeMagic); ok {
		return body
	}
	return source
}

// editedSource is the source an edit's input gives cell c: source whole
// (in prompt mode a code cell's %%code line given back when it leaves it
// out), or search replaced in the cell's source.
func (tb *Toolbox) editedSource(c NotebookCell, in map[string]any) (string, error) {
	_, whole := in["source"].(string)
	_, replacing := in["search"].(string)
	if whole && replacing {
		return "", errors.New("give source (the whole new text) or search and replace, not both")
	}
	if _, retype := in["type"].(string); retype && !whole && !replacing {
		return c.Source, nil // the type alone changes
	}
	if s, ok := in["source"].(string); ok {
		if use, _ := ParseCell(c.Source, tb.opts.PromptCells); c.Kind == CodeCell && use == UseCode {
			s = tb.asCode(s)
		}
		return s, nil
	}
	search, _ := in["search"].(string)
	if search == "" {
		return "", errors.New("give source (the whole new text), or search and replace")
	}
	replace, _ := in["replace"].(string)
	all, _ := in["replace_all"].(bool)
	switch n := strings.Count(c.Source, search); {
	case n == 0:
		return "", fmt.Errorf("cell %s: search text not found; read the cell and copy the text exactly", c.ID)
	case n > 1 && !all:
		return "", fmt.Errorf("cell %s: search text found %d times; include more of the text around it, or set replace_all", c.ID, n)
	}
	if all {
		return strings.ReplaceAll(c.Source, search, replace), nil
	}
	return strings.Replace(c.Source, search, replace, 1), nil
}

// cellOf returns cell id as the notebook has it now.
func cellOf(ctx context.Context, nb Notebook, id string) (NotebookCell, error) {
	v, err := nb.Read(ctx, 0)
	if err != nil {
		return NotebookCell{}, err
	}
	i := indexOf(v, id)
	if i < 0 {
		return NotebookCell{}, fmt.Errorf("cell %s: %w", id, ErrNoCell)
	}
	return v.Cells[i], nil
}

func (tb *Toolbox) notebookMove(ctx context.Context, in map[string]any) (Result, error) {
	nb, err := tb.notebook()
	if err != nil {
		return Result{}, err
	}
	id, err := resolveCell(ctx, nb, in)
	if err != nil {
		return Result{}, fmt.Errorf("notebook_move_cell: %w", err)
	}
	to, ok := intArg(in, "to")
	if after, _ := in["after_id"].(string); after != "" {
		v, err := nb.Read(ctx, 0)
		if err != nil {
			return Result{}, fmt.Errorf("notebook_move_cell: %w", err)
		}
		i, j := indexOf(v, after), indexOf(v, id)
		if i < 0 || j < 0 {
			return Result{}, fmt.Errorf("notebook_move_cell: %w", ErrNoCell)
		}
		if j < i {
			i-- // counted without the moved cell
		}
		to, ok = i+1, true
	}
	if !ok {
		return Result{}, errors.New("notebook_move_cell: give to (an index) or after_id")
	}
	if err := nb.Move(ctx, id, to); err != nil {
		return Result{}, fmt.Errorf("notebook_move_cell %s: %w", id, err)
	}
	return Result{Text: fmt.Sprintf("Moved cell %s to index %d.", id, to)}, nil
}

func (tb *Toolbox) notebookDelete(ctx context.Context, in map[string]any) (Result, error) {
	nb, err := tb.notebook()
	if err != nil {
		return Result{}, err
	}
	id, err := resolveCell(ctx, nb, in)
	if err != nil {
		return Result{}, fmt.Errorf("notebook_delete_cell: %w", err)
	}
	c, err := nb.Delete(ctx, id)
	if err != nil {
		return Result{}, fmt.Errorf("notebook_delete_cell %s: %w", id, err)
	}
	tb.forget(id)
	return Result{Text: fmt.Sprintf("Deleted %s cell %s.", c.Kind, id), Diff: linesDiff(c.Source, "")}, nil
}

func (tb *Toolbox) notebookRun(ctx context.Context, in map[string]any, out func(CodeOutput)) (Result, error) {
	nb, err := tb.notebook()
	if err != nil {
		return Result{}, err
	}
	code, checked := in["code"].(string)
	if !checked { // run outside a task (Tool.Execute): the cell as it is now
		if in, _, err = tb.checkCell(ToolNotebookRun)(ctx, in); err != nil {
			return Result{}, fmt.Errorf("notebook_run_cell: %w", err)
		}
		code = in["code"].(string)
	}
	id := in["id"].(string)
	res, err := tb.runCode(ctx, in, out, func(ctx context.Context, out func(CodeOutput)) (CodeResult, error) {
		return nb.Run(ctx, id, code, out)
	})
	if err != nil {
		return Result{}, fmt.Errorf("notebook_run_cell %s: %w", id, err)
	}
	return res, nil
}
