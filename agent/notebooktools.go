package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// This file: the notebook tools as the model is offered them, and the
// helpers their calls share (the notebook, a cell named by id or index).

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
