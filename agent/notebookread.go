package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentkernel/agentkernel/messages"
)

// This file: notebook_read, and how a notebook is written for the model.

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
