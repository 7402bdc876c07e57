package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// This file: a notebook call checked before it is decided. The cell it
// names is read first, so that
//
//   - a call that cannot be done (an unknown cell, an index out of range,
//     search text the cell does not hold, a run of a cell that is not
//     code) is an error the model gets at once, with nothing asked;
//   - the call is decided, hooked and run on that cell, named by its id;
//   - a run's subject is the cell's code, which the dangerous-code screen,
//     the rules (execute_code's too), the hooks and the ask see, and which
//     is what runs: a cell changed since is not run (ErrConflict);
//   - a change of a cell is asked with its diff, unless the cell is the
//     agent's own, as the agent left it.

// review is what a checked change of a cell shows the policy's ask.
type review struct {
	// own: the call changes only a cell the agent wrote, unchanged since.
	own bool
	// diff shows the change, per cell.
	diff string
}

// checkCall is call as it is decided and run, and the review of the
// change it makes: a tool with a check (the notebook tools) reads what
// the call is about first, and an error is a call that cannot be done
// (the model is told, nothing is asked). A call of another tool, or one
// whose input does not validate (the policy refuses it), comes back as
// it is.
func (tb *Toolbox) checkCall(ctx context.Context, t *Tool, call provider.ToolCall) (provider.ToolCall, review, error) {
	if t.check == nil {
		return call, review{}, nil
	}
	in, err := t.Validate(call.Input)
	if err != nil {
		return call, review{}, nil
	}
	raw := map[string]json.RawMessage{}
	_ = json.Unmarshal(call.Input, &raw) // it validated
	if extra := t.unknownFields(raw, false); len(extra) > 0 {
		return call, review{}, t.unknownField(extra[0])
	}
	out, rv, err := t.check(ctx, in)
	if err != nil {
		return call, review{}, fmt.Errorf("%s: %w", t.name, err)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return call, review{}, fmt.Errorf("%s: %w", t.name, err)
	}
	call.Input = b
	return call, rv, nil
}

// checkCell is the check of the notebook tools that name a cell (edit,
// move, delete, run): the cell is read, and the input names it by id.
func (tb *Toolbox) checkCell(name string) func(ctx context.Context, in map[string]any) (map[string]any, review, error) {
	return func(ctx context.Context, in map[string]any) (map[string]any, review, error) {
		nb, err := tb.notebook()
		if err != nil {
			return nil, review{}, err
		}
		v, err := nb.Read(ctx, 0)
		if err != nil {
			return nil, review{}, err
		}
		c, err := cellIn(v, in)
		if err != nil {
			return nil, review{}, err
		}
		out := maps.Clone(in)
		delete(out, "index")
		out["id"] = c.ID
		switch name {
		case ToolNotebookEdit:
			after, err := tb.editedSource(c, in)
			if err != nil {
				return nil, review{}, err
			}
			head := "cell " + c.ID
			if t, _ := in["type"].(string); t != "" && CellKind(t) != c.Kind {
				after = tb.typed(CellKind(t), after)
				head += fmt.Sprintf(" (%s → %s)", c.Kind, t)
			}
			return out, review{own: tb.agentCell(c), diff: fmt.Sprintf("%s:\n%s", head, linesDiff(c.Source, after))}, nil
		case ToolNotebookDelete:
			return out, review{own: tb.agentCell(c), diff: fmt.Sprintf("cell %s (deleted):\n%s", c.ID, linesDiff(c.Source, ""))}, nil
		case ToolNotebookMove:
			if after, _ := in["after_id"].(string); after != "" && indexOf(v, after) < 0 {
				return nil, review{}, fmt.Errorf("after_id %s: %w", after, ErrNoCell)
			}
		case ToolNotebookRun:
			code, err := tb.runnable(c)
			if err != nil {
				return nil, review{}, err
			}
			return map[string]any{"id": c.ID, "code": code}, review{}, nil
		}
		return out, review{}, nil
	}
}

// cellIn is the cell of v that a tool's input names by id (or index).
func cellIn(v NotebookView, in map[string]any) (NotebookCell, error) {
	if id, _ := in["id"].(string); id != "" {
		i := indexOf(v, id)
		if i < 0 {
			return NotebookCell{}, fmt.Errorf("cell %s: %w", id, ErrNoCell)
		}
		return v.Cells[i], nil
	}
	i, ok := intArg(in, "index")
	if !ok {
		return NotebookCell{}, errors.New("give the cell's id (or its index)")
	}
	if i < 0 || i >= len(v.Cells) {
		return NotebookCell{}, fmt.Errorf("index %d: the notebook has %d cells (0 to %d)", i, len(v.Cells), len(v.Cells)-1)
	}
	return v.Cells[i], nil
}

// runnable is the code a run of cell c runs: a code cell's (in prompt
// mode, under its %%code line); a cell that is not code — markdown, a
// request to the agent, an %agent command — is not run.
func (tb *Toolbox) runnable(c NotebookCell) (string, error) {
	if c.Kind != CodeCell {
		return "", fmt.Errorf("cell %s is a %s cell: only code cells run", c.ID, c.Kind)
	}
	switch use, code := ParseCell(c.Source, tb.opts.PromptCells); {
	case use == UseCommand:
		return "", fmt.Errorf("cell %s is an %%agent command of the kernel's, not code: it is not run", c.ID)
	case use == UsePrompt && tb.opts.PromptCells:
		return "", fmt.Errorf("cell %s is a request to the agent, not code: in this notebook a code cell starts with a %s line; it is not run", c.ID, CodeMagic)
	case use == UsePrompt:
		return "", fmt.Errorf("cell %s is a request to the agent (a %s cell), not code: it is not run", c.ID, AgentMagic)
	default:
		return code, nil
	}
}

// wrote records that the agent left cell id with source: changing it
// again, while it still holds that, asks nobody.
func (tb *Toolbox) wrote(id, source string) {
	tb.cellsMu.Lock()
	defer tb.cellsMu.Unlock()
	if tb.cells == nil {
		tb.cells = map[string]string{}
	}
	tb.cells[id] = source
}

func (tb *Toolbox) forget(id string) {
	tb.cellsMu.Lock()
	defer tb.cellsMu.Unlock()
	delete(tb.cells, id)
}

// agentCell reports whether cell c is as the agent left it.
func (tb *Toolbox) agentCell(c NotebookCell) bool {
	tb.cellsMu.Lock()
	defer tb.cellsMu.Unlock()
	s, ok := tb.cells[c.ID]
	return ok && s == c.Source
}
