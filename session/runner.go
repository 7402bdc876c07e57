package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
)

// codeRunner runs the agent's execute_code of session c in the code log's
// backing kernel; the outputs go, unchanged, to the output sink of the
// turn that runs it.
type codeRunner struct {
	code *CodeLog
	c    *current
}

// Run implements agent.CodeRunner. The code joins the session's code log
// (what a rewind replays); a replay left pending by a rewind runs first.
func (cr *codeRunner) Run(ctx context.Context, code string, out func(agent.CodeOutput)) (agent.CodeResult, error) {
	r := cr.code.runner
	if r == nil {
		return agent.CodeResult{}, errors.New("no backing kernel to run code in")
	}
	if _, err := cr.code.world.ReplayIfPending(ctx); err != nil {
		cr.code.log.Warn("replay before the code", "error", err)
	}
	e := backing.Exec{Code: code}
	if out != nil {
		e.Output = func(o backing.Output) { out(agent.CodeOutput(o)) }
	}
	anchor := cr.c.task.Stamp()
	res, err := r.Execute(ctx, e)
	cr.code.record(ctx, cr.c, anchor, "agent", code, res.Status)
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
	// made, when set, makes the cell when it is first read: a cell run
	// through the proxy is made from its outputs off that cell's path
	// (UserCodeOutput).
	made func() cell
}

// read returns c, made if it was made later.
func (c cell) read() cell {
	if c.made != nil {
		return c.made()
	}
	return c
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

// takeCells returns (and forgets) what the model is told with the next
// prompt: the host's notes, the cells run since the last prompt (their
// text) and the newest maxCellImages of the images they displayed.
func (c *current) takeCells() (notes []string, cells string, images []agent.Image) {
	c.mu.Lock()
	defer c.mu.Unlock()
	notes = c.notes
	if len(c.cells) > 0 {
		texts := make([]string, len(c.cells))
		for i, cl := range c.cells {
			cl = cl.read()
			texts[i] = cl.text
			images = append(images, cl.images...)
		}
		cells = capText("The user ran these cells in the notebook's kernel since the last message:\n\n"+
			strings.Join(texts, "\n\n"), 20000)
	}
	if len(images) > maxCellImages {
		images = images[len(images)-maxCellImages:]
	}
	c.notes, c.cells = nil, nil
	return notes, cells, images
}

// capText keeps the head and tail of s within n bytes.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := s[:n*2/3], s[len(s)-n/3:]
	return head + fmt.Sprintf("\n[… %d bytes cut …]\n", len(s)-len(head)-len(tail)) + tail
}
