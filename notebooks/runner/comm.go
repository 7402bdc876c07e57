package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/internal/nbcomm"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/notebooks"
)

// The headless runner as a frontend of the notebook comm
// (docs/notebook-protocol.md): on an agentkernel kernel, Run opens the
// comm for the notebook it runs, and the agent's notebook tools read and
// change that notebook — the copy Run returns and agentkernel run writes.

// openComm opens the notebook comm, naming the notebook path.
func (r *runner) openComm(ctx context.Context, path string) error {
	r.commID = uuid.NewString()
	return r.k.Client().Send(ctx, client.Request{MsgType: wire.MsgCommOpen, Content: map[string]any{
		"comm_id": r.commID, "target_name": nbcomm.Target, "data": nbcomm.Open{Protocol: nbcomm.Protocol, Path: path}}})
}

// onComm answers a request of the kernel on the notebook comm (an iopub
// message that belongs to no request of ours).
func (r *runner) onComm(m *wire.Message) {
	if m.Header.MsgType != wire.MsgCommMsg || r.commID == "" {
		return
	}
	var c struct {
		CommID string `json:"comm_id"`
		Data   struct {
			Request *nbcomm.Request `json:"request"`
		} `json:"data"`
	}
	if json.Unmarshal(m.Content, &c) != nil || c.CommID != r.commID || c.Data.Request == nil {
		return
	}
	req := c.Data.Request
	reply := nbcomm.Reply{ID: req.ID, OK: true}
	result, code, err := r.apply(req)
	if err == nil {
		if reply.Result, err = json.Marshal(result); err != nil {
			code = ""
		}
	}
	if err != nil {
		reply = nbcomm.Reply{ID: req.ID, Error: err.Error(), Code: code}
	}
	if err := r.k.Client().Send(context.Background(), client.Request{MsgType: wire.MsgCommMsg,
		Content: map[string]any{"comm_id": r.commID, "data": map[string]any{"reply": reply}}}); err != nil {
		r.log.Warn("notebook comm: reply", "op", req.Op, "error", err)
	}
}

// apply does one request on the notebook; code is the error's kind.
func (r *runner) apply(req *nbcomm.Request) (result any, code string, err error) {
	var a nbcomm.Args
	if err := json.Unmarshal(req.Args, &a); err != nil {
		return nil, "", fmt.Errorf("%s: %w", req.Op, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	nb := r.nb
	if req.Op == nbcomm.OpRead {
		return readView(r.opts.Path, nb, a), "", nil
	}
	if req.Op == nbcomm.OpInsert {
		if a.Index < 0 || a.Index > len(nb.Cells) {
			return nil, "", fmt.Errorf("index %d: the notebook has %d cells", a.Index, len(nb.Cells))
		}
		t := notebooks.CellType(a.CellType)
		if t != notebooks.Code && t != notebooks.Markdown && t != notebooks.Raw {
			return nil, "", fmt.Errorf("cell_type %q", a.CellType)
		}
		c := &notebooks.Cell{ID: a.ID, CellType: t, Source: a.Source, Metadata: notebooks.Metadata{}}
		if _, err := nb.CellIndex(c.ID); c.ID == "" || err == nil {
			c.ID = notebooks.NewCellID() // a cell put back keeps its id when it is free
		}
		if t == notebooks.Code {
			outs, err := decodeOutputs(a.Outputs)
			if err != nil {
				return nil, "", err
			}
			c.Outputs, c.ExecutionCount = outs, cloneInt(a.ExecutionCount)
		}
		nb.Cells = slices.Insert(nb.Cells, a.Index, c)
		return map[string]any{"cell": commCell(c, 0)}, "", nil
	}
	i := slices.IndexFunc(nb.Cells, func(c *notebooks.Cell) bool { return c.ID == a.ID })
	if i < 0 {
		return nil, nbcomm.CodeNoCell, fmt.Errorf("no cell %q", a.ID)
	}
	c := nb.Cells[i]
	switch req.Op {
	case nbcomm.OpSetSource:
		before := commCell(c, 0)
		c.Source = a.Source
		return map[string]any{"before": before}, "", nil
	case nbcomm.OpMove:
		if a.Index < 0 || a.Index >= len(nb.Cells) {
			return nil, "", fmt.Errorf("index %d: the notebook has %d cells", a.Index, len(nb.Cells))
		}
		nb.Cells = slices.Insert(slices.Delete(nb.Cells, i, i+1), a.Index, c)
		return nbcomm.Moved{From: &i}, "", nil
	case nbcomm.OpDelete:
		if c == r.rec.cell {
			return nil, nbcomm.CodeConflict, errors.New("the cell is running")
		}
		nb.Cells = slices.Delete(nb.Cells, i, i+1)
		return nbcomm.Removed{Cell: commCell(c, -1), Index: &i}, "", nil
	case nbcomm.OpSetOutputs:
		if c.CellType != notebooks.Code {
			return nil, "", fmt.Errorf("cell %q is a %s cell", a.ID, c.CellType)
		}
		outs, err := decodeOutputs(a.Outputs)
		if err != nil {
			return nil, "", err
		}
		c.Outputs, c.ExecutionCount = outs, cloneInt(a.ExecutionCount)
		return map[string]any{}, "", nil
	}
	return nil, "", fmt.Errorf("unknown op %q", req.Op)
}

// readView is the answer to a read: every cell, or with max_chars the
// cells of its range that fit (their source and outputs as sent, counted)
// and the count of all.
func readView(path string, nb *notebooks.Notebook, a nbcomm.Args) nbcomm.View {
	if a.MaxChars <= 0 {
		v := nbcomm.View{Path: path, Cells: make([]nbcomm.Cell, 0, len(nb.Cells))}
		for _, c := range nb.Cells {
			v.Cells = append(v.Cells, commCell(c, a.MaxOutput))
		}
		return v
	}
	n := len(nb.Cells)
	start := max(0, min(a.Start, n))
	end := n
	if a.End > 0 {
		end = max(start, min(a.End, n))
	}
	none := -1
	v := nbcomm.View{Path: path, Cells: []nbcomm.Cell{}, Count: &n, Start: start, ActiveIndex: &none}
	used := 0
	for i := start; i < end; i++ {
		c := commCell(nb.Cells[i], a.MaxOutput)
		used += len(c.Source)
		for _, o := range c.Outputs {
			used += len(o)
		}
		if i > start && used > a.MaxChars {
			break
		}
		v.Cells = append(v.Cells, c)
	}
	return v
}

// commCell is c as the protocol carries it: outputs' text cut to maxOutput
// characters and image data left out (0: no outputs; -1: all of them,
// whole).
func commCell(c *notebooks.Cell, maxOutput int) nbcomm.Cell {
	out := nbcomm.Cell{ID: c.ID, CellType: string(c.CellType), Source: c.Source, ExecutionCount: cloneInt(c.ExecutionCount),
		Outputs: []json.RawMessage{}}
	if maxOutput == 0 {
		return out
	}
	for _, o := range c.Outputs {
		if maxOutput < 0 { // whole
			if raw, err := json.Marshal(o); err == nil {
				out.Outputs = append(out.Outputs, raw)
			}
			continue
		}
		cp := *o
		cp.Text = cutRunes(o.Text, maxOutput)
		if o.Data != nil {
			cp.Data = notebooks.MimeBundle{}
			for mime, v := range o.Data {
				switch {
				case strings.HasPrefix(mime, "image/"):
					cp.Data.SetText(mime, "")
				case mime == "text/plain":
					s, _ := o.Data.Text(mime)
					cp.Data.SetText(mime, cutRunes(s, maxOutput))
				default:
					_ = v // other kinds are not read by the agent
				}
			}
		}
		if raw, err := json.Marshal(&cp); err == nil {
			out.Outputs = append(out.Outputs, raw)
		}
	}
	return out
}

// cutRunes cuts s to n characters, saying how many it left out.
func cutRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + fmt.Sprintf("\n[… %d more characters]", len(r)-n)
	}
	return s
}

// decodeOutputs are nbformat outputs as the notebook holds them.
func decodeOutputs(raw []json.RawMessage) ([]*notebooks.Output, error) {
	outs := make([]*notebooks.Output, 0, len(raw))
	for j, r := range raw {
		var o notebooks.Output
		if err := json.Unmarshal(r, &o); err != nil {
			return nil, fmt.Errorf("output %d: %w", j, err)
		}
		outs = append(outs, &o)
	}
	return outs, nil
}
