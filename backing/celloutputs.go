package backing

import (
	"encoding/json"
	"sync"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// CellOutputs turns a cell's outputs into nbformat outputs, as a
// frontend keeps them in the cell: streams of one name merged, clear_output honoured
// (at once, or with wait before the next output), the execution count
// from execute_input.
type CellOutputs struct {
	mu        sync.Mutex
	outs      []map[string]any
	count     int
	clearWait bool
}

// Add takes one output of the cell (an Exec's Output sink).
func (c *CellOutputs) Add(o Output) {
	var m map[string]any
	if err := json.Unmarshal(o.Content, &m); err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch o.Type {
	case wire.MsgExecuteInput:
		if n, ok := m["execution_count"].(float64); ok {
			c.count = int(n)
		}
		return
	case wire.MsgClearOutput:
		if w, _ := m["wait"].(bool); w {
			c.clearWait = true
		} else {
			c.outs = nil
		}
		return
	case wire.MsgStream, wire.MsgDisplayData, wire.MsgExecuteResult, wire.MsgError:
	default:
		return // update_display_data, comm messages: not kept in a cell here
	}
	if c.clearWait {
		c.outs, c.clearWait = nil, false
	}
	out := map[string]any{"output_type": o.Type}
	switch o.Type {
	case wire.MsgStream:
		name, _ := m["name"].(string)
		text, _ := m["text"].(string)
		if n := len(c.outs); n > 0 && c.outs[n-1]["output_type"] == wire.MsgStream && c.outs[n-1]["name"] == name {
			c.outs[n-1]["text"] = c.outs[n-1]["text"].(string) + text
			return
		}
		out["name"], out["text"] = name, text
	case wire.MsgDisplayData, wire.MsgExecuteResult:
		out["data"] = orEmpty(m["data"])
		out["metadata"] = orEmpty(m["metadata"])
		if o.Type == wire.MsgExecuteResult {
			out["execution_count"] = m["execution_count"]
			if n, ok := m["execution_count"].(float64); ok && c.count == 0 {
				c.count = int(n)
			}
		}
	case wire.MsgError:
		out["ename"], out["evalue"], out["traceback"] = m["ename"], m["evalue"], orList(m["traceback"])
	}
	c.outs = append(c.outs, out)
}

func orEmpty(v any) any {
	if v == nil {
		return map[string]any{}
	}
	return v
}

func orList(v any) any {
	if v == nil {
		return []any{}
	}
	return v
}

// Result returns the outputs, as nbformat JSON, and the execution count
// (0 when none came).
func (c *CellOutputs) Result() ([]json.RawMessage, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]json.RawMessage, 0, len(c.outs))
	for _, o := range c.outs {
		if b, err := json.Marshal(o); err == nil {
			out = append(out, b)
		}
	}
	return out, c.count
}
