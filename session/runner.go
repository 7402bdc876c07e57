package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/messages"
)

// codeRunner runs the agent's execute_code in the host's backing kernel;
// the outputs go, unchanged, to the output sink of the turn that runs it.
type codeRunner struct {
	h *Host
	c *current
}

// Run implements agent.CodeRunner. The code joins the session's code log
// (what a rewind replays); a replay left pending by a rewind runs first.
func (cr *codeRunner) Run(ctx context.Context, code string, out func(agent.CodeOutput)) (agent.CodeResult, error) {
	r := cr.h.cfg.Runner
	if r == nil {
		return agent.CodeResult{}, errors.New("no backing kernel to run code in")
	}
	if _, err := cr.h.ReplayIfPending(ctx); err != nil {
		cr.h.log.Warn("replay before the code", "error", err)
	}
	e := backing.Exec{Code: code}
	if out != nil {
		e.Output = func(o backing.Output) { out(agent.CodeOutput(o)) }
	}
	anchor := cr.c.task.Stamp()
	res, err := r.Execute(ctx, e)
	cr.h.recordCode(ctx, cr.c, anchor, "agent", code, res.Status)
	return codeResult(res), err
}

// codeSink is out as the agent's sink of code outputs (nil for nil).
func codeSink(out func(backing.Output)) func(agent.CodeOutput) {
	if out == nil {
		return nil
	}
	return func(o agent.CodeOutput) { out(backing.Output(o)) }
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

// RunCell runs a cell the user gave the host (a %%code cell of prompt
// mode) in the backing kernel, replaying first if a rewind left that
// pending, and records it (RecordCell).
func (h *Host) RunCell(ctx context.Context, e backing.Exec) (backing.Result, error) {
	r := h.cfg.Runner
	if r == nil {
		return backing.Result{}, errors.New("no backing kernel to run code in")
	}
	if _, err := h.ReplayIfPending(ctx); err != nil {
		h.log.Warn("replay before the cell", "error", err)
	}
	res, err := r.Execute(ctx, e)
	if err == nil || res.Status != "" {
		h.RecordCell(ctx, e.Code, res)
	}
	return res, err
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
	ims := codeResult(res).Images
	output := cellOutput(res, ims)
	c.addCell(newCell(code, output, ims))
	h.recordCode(ctx, c, 0, "cell", code, res.Status)
	rec, _ := json.Marshal(map[string]string{"code": code, "output": capText(output, 20000), "status": res.Status})
	if _, err := c.task.Record(ctx, messages.SayCellExecuted, string(rec)); err != nil && !errors.Is(err, agent.ErrBusy) {
		h.log.Warn("record cell", "error", err)
	}
}

// UserCode records a cell the user ran in the backing kernel in code mode:
// it joins the code a rewind replays, and the cell with what it printed is
// given to the model with the next prompt (%%agent), as a %%code cell is
// in prompt mode. The notebook shows the cell itself, so it is not stored
// as a message, and no session is opened for it: cells run before the
// first prompt wait on the host for the session that prompt opens.
func (h *Host) UserCode(ctx context.Context, code string, res backing.Result) {
	ims := codeResult(res).Images
	entry := newCell(code, cellOutput(res, ims), ims)
	h.mu.Lock()
	c := h.cur
	if c == nil {
		h.cells = appendCell(h.cells, entry)
	}
	h.mu.Unlock()
	if c != nil {
		c.addCell(entry)
	}
	h.recordCode(ctx, c, 0, "user", code, res.Status)
}

// cellOutput is what a cell printed, for the model: streams, results,
// the summaries of its images (ims, as codeResult gives them), the error.
func cellOutput(res backing.Result, ims []agent.Image) string {
	output := res.Stdout + res.Stderr + res.Text
	if output != "" && !strings.HasSuffix(output, "\n") {
		output += "\n"
	}
	for _, im := range ims {
		output += im.Summary() + "\n"
	}
	if res.Error != nil {
		output += res.Error.Name + ": " + res.Error.Value + "\n"
	}
	return output
}

// cell is one cell the user ran, as the model is given it: its code and
// output as text, and the images it displayed (which a model that takes
// images is shown).
type cell struct {
	text   string
	images []agent.Image
}

// maxCellImages is how many of the cells' images (the newest) go to a
// model that takes images with the next prompt.
const maxCellImages = 2

func newCell(code, output string, ims []agent.Image) cell {
	entry := "```\n" + strings.TrimSpace(code) + "\n```"
	if out := strings.TrimSpace(output); out != "" {
		entry += "\nOutput:\n```\n" + capText(out, 2000) + "\n```"
	}
	c := cell{text: entry}
	for _, im := range ims {
		if im.DataURL() != "" { // a raster image small enough to show
			c.images = append(c.images, im)
		}
	}
	return c
}

// appendCell appends entry, keeping the last maxCells.
func appendCell(cells []cell, entry cell) []cell {
	cells = append(cells, entry)
	if len(cells) > maxCells {
		cells = cells[len(cells)-maxCells:]
	}
	return cells
}

// addCell queues a cell for the model's next prompt.
func (c *current) addCell(entry cell) {
	c.mu.Lock()
	c.cells = appendCell(c.cells, entry)
	c.mu.Unlock()
}

// takeCells returns (and forgets) the cells run since the last prompt:
// their text, and the newest maxCellImages of the images they displayed.
func (c *current) takeCells() (string, []agent.Image) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	parts = append(parts, c.notes...)
	var images []agent.Image
	if len(c.cells) > 0 {
		texts := make([]string, len(c.cells))
		for i, cl := range c.cells {
			texts[i] = cl.text
			images = append(images, cl.images...)
		}
		parts = append(parts, capText("The user ran these cells in the notebook's kernel since the last message:\n\n"+
			strings.Join(texts, "\n\n"), 20000))
	}
	if len(images) > maxCellImages {
		images = images[len(images)-maxCellImages:]
	}
	c.notes, c.cells = nil, nil
	return strings.Join(parts, "\n\n"), images
}

// capText keeps the head and tail of s within n bytes.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := s[:n*2/3], s[len(s)-n/3:]
	return head + fmt.Sprintf("\n[… %d bytes cut …]\n", len(s)-len(head)-len(tail)) + tail
}
