package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/messages"
)

// codeRunner runs the agent's execute_code in the host's backing kernel;
// the outputs go to the Output of the turn that runs it, unchanged.
type codeRunner struct{ h *Host }

// Run implements agent.CodeRunner.
func (cr *codeRunner) Run(ctx context.Context, code string) (agent.CodeResult, error) {
	r := cr.h.cfg.Runner
	if r == nil {
		return agent.CodeResult{}, errors.New("no backing kernel to run code in")
	}
	res, err := r.Execute(ctx, backing.Exec{Code: code, Output: cr.h.turnOutput()})
	return codeResult(res), err
}

// setOutput makes out the sink of the agent's code outputs until the
// returned func is called.
func (h *Host) setOutput(out func(*wire.Message)) (restore func()) {
	h.outMu.Lock()
	prev := h.output
	h.output = out
	h.outMu.Unlock()
	return func() {
		h.outMu.Lock()
		h.output = prev
		h.outMu.Unlock()
	}
}

// turnOutput returns the sink of the running turn's code outputs, or nil.
func (h *Host) turnOutput() func(*wire.Message) {
	h.outMu.Lock()
	defer h.outMu.Unlock()
	return h.output
}

func codeResult(r backing.Result) agent.CodeResult {
	cr := agent.CodeResult{Stdout: r.Stdout, Stderr: r.Stderr, Result: r.Text}
	for _, im := range r.Images {
		data := im.Data
		if im.MIME == "image/svg+xml" {
			data = "" // text, not base64: the panel does not show SVG
		}
		cr.Images = append(cr.Images, agent.Image{MIME: im.MIME, Width: im.Width, Height: im.Height, Bytes: im.Bytes, Data: data})
	}
	if e := r.Error; e != nil {
		cr.Error = &agent.CodeError{EName: e.Name, EValue: e.Value, Traceback: e.Traceback}
	}
	return cr
}

// maxCells is how many %%code cells the model is given at the next prompt.
const maxCells = 20

// RecordCell records a cell the user ran in the backing kernel (a %%code
// cell) with what it printed: it is stored as cell_executed and given to
// the model with the next prompt. A failure is logged, not returned: the
// cell itself ran.
func (h *Host) RecordCell(ctx context.Context, code string, res backing.Result) {
	c, err := h.session(ctx)
	if err != nil {
		h.log.Warn("record cell", "error", err)
		return
	}
	output := res.Stdout + res.Stderr + res.Text
	for _, im := range codeResult(res).Images {
		output += im.Summary() + "\n"
	}
	if res.Error != nil {
		output += res.Error.Name + ": " + res.Error.Value + "\n"
	}
	entry := "```\n" + strings.TrimSpace(code) + "\n```"
	if out := strings.TrimSpace(output); out != "" {
		entry += "\nOutput:\n```\n" + capText(out, 2000) + "\n```"
	}
	c.mu.Lock()
	c.cells = append(c.cells, entry)
	if len(c.cells) > maxCells {
		c.cells = c.cells[len(c.cells)-maxCells:]
	}
	c.mu.Unlock()
	rec, _ := json.Marshal(map[string]string{"code": code, "output": capText(output, 20000), "status": res.Status})
	if _, err := c.task.Record(ctx, messages.SayCellExecuted, string(rec)); err != nil && !errors.Is(err, agent.ErrBusy) {
		h.log.Warn("record cell", "error", err)
	}
}

// takeCells returns (and forgets) the cells run since the last prompt.
func (c *current) takeCells() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cells) == 0 {
		return ""
	}
	text := "The user ran these cells in the notebook's kernel since the last message:\n\n" + strings.Join(c.cells, "\n\n")
	c.cells = nil
	return capText(text, 20000)
}

// capText keeps the head and tail of s within n bytes.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := s[:n*2/3], s[len(s)-n/3:]
	return head + fmt.Sprintf("\n[… %d bytes cut …]\n", len(s)-len(head)-len(tail)) + tail
}
