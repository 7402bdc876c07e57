package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
)

// The notebook the agent works in. Where its cells are changed is a
// Cells — the frontend's (a comm of the JupyterLab extension), the
// headless runner's, the .ipynb file's — given by Config.Cells; the host
// makes it the agent's agent.Notebook, running a cell in its own backing
// kernel (the code joins the session's code log, as execute_code's does)
// and handing the outputs to the Cells.

// Cells is where a notebook's cells are read and changed. Implementations
// are safe for concurrent use.
type Cells interface {
	// Path names the notebook as its frontend does ("" when not known).
	Path() string
	// Read returns the notebook, outputs cut to maxOutput characters.
	Read(ctx context.Context, maxOutput int) (agent.NotebookView, error)
	// Insert adds c at index and returns it with its id: c.ID when it is
	// given and the notebook has no cell by it (a rewind putting a cell
	// back), else a new one.
	Insert(ctx context.Context, index int, c Cell) (agent.NotebookCell, error)
	// SetSource replaces cell id's source and returns the cell as it was.
	SetSource(ctx context.Context, id, source string) (agent.NotebookCell, error)
	// Move moves cell id to index and returns the index it was at (-1:
	// not known).
	Move(ctx context.Context, id string, index int) (int, error)
	// Delete removes cell id and returns it whole, and the index it was at
	// (-1: not known).
	Delete(ctx context.Context, id string) (Cell, int, error)
	// SetOutputs replaces code cell id's outputs (nbformat output
	// objects) and execution count (0: none).
	SetOutputs(ctx context.Context, id string, outputs []json.RawMessage, count int) error
}

// Cell is a cell whole, as Cells take and give it back.
type Cell struct {
	ID             string            `json:"id,omitempty"`
	Kind           agent.CellKind    `json:"cell_type"`
	Source         string            `json:"source"`
	ExecutionCount int               `json:"execution_count,omitempty"`
	Outputs        []json.RawMessage `json:"outputs,omitempty"`
}

// FileCells is a Cells that writes a file on disk at each change: the
// file checkpoints see what it does, so the host does not record its
// cells' changes.
type FileCells interface {
	Cells
	// File is the notebook's path on disk.
	File() string
}

// Frontends are the notebooks that frontends show the kernel (the
// bridge's notebook comms).
type Frontends interface {
	// Current is the notebook the agent works in now: the one of the
	// frontend that sent the running prompt, else the one opened last;
	// nil when no frontend shows one.
	Current() Cells
	// Find is the notebook named path (as Cells.Path names it) that a
	// frontend shows; nil when none does.
	Find(path string) Cells
}

// notebook is session c's agent.Notebook over the Cells of the moment: it
// records what each call does to a cell (a rewind puts it back), and runs
// a cell in the code log's backing kernel.
type notebook struct {
	cells Cells
	code  *CodeLog
	tools *Tools // whether the cells are in prompt mode
	c     *current
}

// SetFrontends makes f the notebooks frontends show, from now on, in every
// session of the host (the kernel's bridge sets it: the notebook comms).
// Its Current, when it gives one, is where the notebook tools work,
// before Config.Cells.
func (t *Tools) SetFrontends(f Frontends) {
	t.mu.Lock()
	t.frontends = f
	t.mu.Unlock()
}

// frontendsNow are the frontends SetFrontends gave (nil: none).
func (t *Tools) frontendsNow() Frontends {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.frontends
}

// notebookSource is a session's agent.NotebookSource: the frontends'
// current notebook, else Config.Cells, as the agent's notebook, which
// open makes of the cells.
func (t *Tools) notebookSource(open func(Cells) agent.Notebook) agent.NotebookSource {
	t.mu.Lock()
	none := t.set.cells == nil && t.frontends == nil && !t.cellsLater
	t.mu.Unlock()
	if none {
		return nil
	}
	return func() agent.Notebook {
		cells := t.currentCells()
		if cells == nil {
			return nil
		}
		return open(cells)
	}
}

// currentCells is where the notebook the agent works in is changed now
// (nil: nowhere).
func (t *Tools) currentCells() Cells {
	if fe := t.frontendsNow(); fe != nil {
		if cells := fe.Current(); cells != nil {
			return cells
		}
	}
	if cells := t.set.cells; cells != nil {
		return cells()
	}
	return nil
}

// OpenNotebookFile opens the .ipynb at path (relative to the workspace)
// as Cells that change the file itself (Config.OpenNotebook): for a kernel
// that no frontend with the notebook comm is attached to (nbclient,
// papermill, a console), told which notebook is its by %agent notebook or
// AGENTKERNEL_NOTEBOOK.
func (t *Tools) OpenNotebookFile(path string) (FileCells, error) {
	if t.set.openNotebook == nil {
		return nil, errors.New("this kernel cannot open notebook files")
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(t.set.workspace, path)
	}
	if filepath.Ext(path) != ".ipynb" {
		return nil, fmt.Errorf("%s: not a notebook (.ipynb)", path)
	}
	return t.set.openNotebook(path)
}

// SetPromptCells says whether the notebooks the agent works in are in
// prompt mode (a bare code cell is a request to the agent; code runs under
// a %%code line: agent.ToolboxOptions.PromptCells), for the sessions
// opened from now on: a kernel's bridge says its mode. Until then it is
// Config.PromptCells.
func (t *Tools) SetPromptCells(on bool) {
	t.mu.Lock()
	t.prompt = on
	t.mu.Unlock()
}

// promptCells is what SetPromptCells said, else Config.PromptCells.
func (t *Tools) promptCells() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.prompt
}

// ExpectCells says that SetFrontends will be called (a kernel's bridge, whose
// frontend opens the notebook comm after the session may exist): sessions
// opened before get the notebook tools too.
func (t *Tools) ExpectCells() {
	t.mu.Lock()
	t.cellsLater = true
	t.mu.Unlock()
}

// Read implements agent.Notebook.
func (n notebook) Read(ctx context.Context, maxOutput int) (agent.NotebookView, error) {
	return n.cells.Read(ctx, maxOutput)
}

// ReadRange implements agent.RangeReader: by the Cells' own when they
// have one (the frontend's comm sends only those cells).
func (n notebook) ReadRange(ctx context.Context, r agent.ReadRange) (agent.NotebookView, error) {
	return agent.ReadCells(ctx, n.cells, r)
}

// Insert implements agent.Notebook.
func (n notebook) Insert(ctx context.Context, index int, kind agent.CellKind, source string) (agent.NotebookCell, error) {
	c, err := n.cells.Insert(ctx, index, Cell{Kind: kind, Source: source})
	if err == nil {
		n.record(ctx, cellInsert, c.ID, nil, &cellState{Index: index, Kind: kind, Source: source})
	}
	return c, err
}

// SetSource implements agent.Notebook.
func (n notebook) SetSource(ctx context.Context, id, source string) (agent.NotebookCell, error) {
	before, err := n.cells.SetSource(ctx, id, source)
	if err == nil {
		n.record(ctx, cellEdit, id, &cellState{Index: -1, Kind: before.Kind, Source: before.Source},
			&cellState{Index: -1, Kind: before.Kind, Source: source})
	}
	return before, err
}

// Move implements agent.Notebook.
func (n notebook) Move(ctx context.Context, id string, index int) error {
	from, err := n.cells.Move(ctx, id, index)
	if err == nil {
		n.record(ctx, cellMove, id, &cellState{Index: from}, &cellState{Index: index})
	}
	return err
}

// Delete implements agent.Notebook.
func (n notebook) Delete(ctx context.Context, id string) (agent.NotebookCell, error) {
	gone, _, err := n.remove(ctx, id)
	if err != nil {
		return agent.NotebookCell{}, err
	}
	out := agent.NotebookCell{ID: gone.ID, Kind: gone.Kind, Source: gone.Source, ExecutionCount: gone.ExecutionCount}
	for _, o := range gone.Outputs {
		out.Outputs = append(out.Outputs, SummarizeOutput(o, 0))
	}
	return out, nil
}

// remove deletes cell id, records it (a rewind puts it back) and returns
// it whole with the index it was at.
func (n notebook) remove(ctx context.Context, id string) (Cell, int, error) {
	gone, at, err := n.cells.Delete(ctx, id)
	if err != nil {
		return Cell{}, 0, err
	}
	st := &cellState{Index: at, Kind: gone.Kind, Source: gone.Source, ExecutionCount: gone.ExecutionCount, Outputs: gone.Outputs}
	if size(gone.Outputs) > maxKeptOutputs {
		st.Outputs, st.ExecutionCount = nil, 0 // put back without them
	}
	n.record(ctx, cellDelete, id, st, nil)
	return gone, at, nil
}

// SetKind implements agent.Retyper: the cell is taken out and put back
// at its place, with its id, as a kind cell holding source — two changes,
// each recorded, which a rewind undoes latest first. Were the second to
// fail, the cell is put back as it was.
func (n notebook) SetKind(ctx context.Context, id string, kind agent.CellKind, source string) (agent.NotebookCell, error) {
	gone, at, err := n.remove(ctx, id)
	if err != nil {
		return agent.NotebookCell{}, err
	}
	if at < 0 {
		at = 0
	}
	if _, err := n.cells.Insert(ctx, at, Cell{ID: id, Kind: kind, Source: source}); err != nil {
		back := gone
		back.ID = id
		if _, perr := n.cells.Insert(context.WithoutCancel(ctx), at, back); perr != nil {
			err = errors.Join(err, fmt.Errorf("and the cell could not be put back: %w", perr))
		}
		return agent.NotebookCell{}, err
	}
	n.record(ctx, cellInsert, id, nil, &cellState{Index: at, Kind: kind, Source: source})
	return agent.NotebookCell{ID: id, Kind: gone.Kind, Source: gone.Source, ExecutionCount: gone.ExecutionCount}, nil
}

// SetOutputs puts a run's outputs in the cell.
func (n notebook) SetOutputs(ctx context.Context, id string, outputs []json.RawMessage, count int) error {
	return n.cells.SetOutputs(ctx, id, outputs, count)
}

// Run implements agent.Notebook: code — the cell's, as approved — runs in
// the backing kernel when the cell still holds it, its outputs go to the
// turn's output sink and, as nbformat outputs, into the cell.
func (n notebook) Run(ctx context.Context, id, code string, sink func(agent.CodeOutput)) (agent.CodeResult, error) {
	v, err := n.Read(ctx, 0)
	if err != nil {
		return agent.CodeResult{}, err
	}
	var cell *agent.NotebookCell
	for i := range v.Cells {
		if v.Cells[i].ID == id {
			cell = &v.Cells[i]
		}
	}
	switch {
	case cell == nil:
		return agent.CodeResult{}, fmt.Errorf("cell %s: %w", id, agent.ErrNoCell)
	case cell.Kind != agent.CodeCell:
		return agent.CodeResult{}, fmt.Errorf("cell %s is a %s cell: only code cells run", id, cell.Kind)
	}
	if use, now := agent.ParseCell(cell.Source, n.tools.promptCells()); use != agent.UseCode || now != code {
		return agent.CodeResult{}, fmt.Errorf("cell %s changed since its code was read and approved, so it was not run; "+
			"read it, and run it again if it is still to run (%w)", id, agent.ErrConflict)
	}
	r := n.code.runner
	if r == nil {
		return agent.CodeResult{}, errors.New("no backing kernel to run code in")
	}
	if _, err := n.code.world.ReplayIfPending(ctx); err != nil {
		n.code.log.Warn("replay before the cell", "error", err)
	}
	var out backing.CellOutputs
	anchor := n.c.task.Stamp()
	res, err := r.Execute(ctx, backing.Exec{Code: code, Output: func(o backing.Output) {
		out.Add(o)
		if sink != nil {
			sink(agent.CodeOutput(o))
		}
	}})
	n.code.record(ctx, n.c, anchor, "agent", code, res.Status)
	outs, count := out.Result()
	if serr := n.SetOutputs(context.WithoutCancel(ctx), id, outs, count); serr != nil {
		err = errors.Join(err, fmt.Errorf("the outputs could not be put in the cell: %w", serr))
	}
	return codeResult(res), err
}

// cutText cuts s to at most n characters for the agent, and says how many
// were left out.
func cutText(s string, n int) (string, int) {
	if n <= 0 {
		return "", len([]rune(s))
	}
	r := []rune(s)
	if len(r) <= n {
		return s, 0
	}
	return string(r[:n]), len(r) - n
}

// SummarizeOutput is an nbformat output as the agent reads it: its type,
// its text cut to maxText characters, its images named.
func SummarizeOutput(raw json.RawMessage, maxText int) agent.CellOutput {
	var o struct {
		OutputType string                     `json:"output_type"`
		Text       any                        `json:"text"`
		Data       map[string]json.RawMessage `json:"data"`
		Ename      string                     `json:"ename"`
		Evalue     string                     `json:"evalue"`
		Traceback  []string                   `json:"traceback"`
	}
	_ = json.Unmarshal(raw, &o)
	out := agent.CellOutput{Type: o.OutputType}
	var text string
	switch o.OutputType {
	case "stream":
		text = joinLines(o.Text)
	case "error":
		text = o.Ename + ": " + o.Evalue
		if len(o.Traceback) > 0 {
			text += "\n" + stripANSI(strings.Join(o.Traceback, "\n"))
		}
	default:
		if raw, ok := o.Data["text/plain"]; ok {
			var v any
			_ = json.Unmarshal(raw, &v)
			text = joinLines(v)
		}
		for mime := range o.Data {
			if strings.HasPrefix(mime, "image/") {
				out.Images = append(out.Images, mime)
			}
		}
	}
	out.Text, out.Cut = cutText(text, maxText)
	return out
}

// OutputPictures are the images of an nbformat output (raw): those whose
// data it carries that the models take (PNG, JPEG, GIF, WebP) within
// agent.MaxAttachedImageBytes, decoded and checked; an image that is
// larger or broken is left out (SummarizeOutput still names it).
func OutputPictures(raw json.RawMessage) []agent.Image {
	var o struct {
		Data map[string]json.RawMessage `json:"data"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return nil
	}
	var ims []agent.Image
	for mime, v := range o.Data {
		if !strings.HasPrefix(mime, "image/") {
			continue
		}
		var data any
		_ = json.Unmarshal(v, &data)
		b64 := strings.Map(func(r rune) rune {
			if r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, joinLines(data))
		if b64 == "" {
			continue
		}
		if im, err := agent.ImageFromDataURL("data:" + mime + ";base64," + b64); err == nil {
			ims = append(ims, im)
		}
	}
	slices.SortFunc(ims, func(a, b agent.Image) int { return strings.Compare(a.MIME, b.MIME) })
	return ims
}

// joinLines is nbformat's multiline string: a string or a list of them.
func joinLines(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		var b strings.Builder
		for _, s := range t {
			if s, ok := s.(string); ok {
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

// stripANSI removes terminal colour codes from a traceback.
func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
