package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// This file: the notebook tools that change the notebook: insert, edit,
// move, delete and run a cell.

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
