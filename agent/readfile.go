package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentkernel/agentkernel/messages"
)

// read_file's other kinds of file: images, given to a model that takes
// them as images (one that does not gets their description), and
// notebooks, given as their cells, as notebook_read gives them.

// imageType is the media type of an image file read_file shows as an
// image, by its name; "" for any other file.
func imageType(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".gif":
		return "image/gif"
	}
	return ""
}

// readImage reads the image file abs (path as the model named it): its
// description, and the image for a model that takes images; an image
// larger than an attached one may be is described only.
func (tb *Toolbox) readImage(path, abs, mime string) (Result, error) {
	fi, err := os.Stat(abs)
	if err != nil {
		return Result{}, fmt.Errorf("read_file %s: %w", path, err)
	}
	if fi.Size() > MaxAttachedImageBytes {
		return Result{Text: fmt.Sprintf("%s: %s, %s: too large to show (images up to %s are shown).", path, mime,
			humanBytes(int(fi.Size())), humanBytes(MaxAttachedImageBytes))}, nil
	}
	raw, err := os.ReadFile(abs)
	if err != nil {
		return Result{}, fmt.Errorf("read_file %s: %w", path, err)
	}
	im, err := ImageFromBytes(mime, raw)
	if err != nil {
		return Result{}, fmt.Errorf("read_file %s: %w", path, err)
	}
	return Result{Text: path + ": " + im.Summary(), Images: []string{im.Summary()}, Shown: []string{im.DataURL()},
		Blocks: []messages.ContentBlock{{Type: messages.BlockImage,
			Source: &messages.ImageSource{Type: "base64", MediaType: im.MIME, Data: im.Data}}}}, nil
}

// readNotebookFile reads the notebook file abs as its cells, bounded as
// notebook_read's answer is (start_line and end_line are cell indexes
// here, from 1).
func (tb *Toolbox) readNotebookFile(ctx context.Context, path, abs string, in map[string]any) (Result, error) {
	limit := tb.readLimit()
	v, err := tb.opts.NotebookFile(ctx, abs, min(4000, limit/4))
	if err != nil {
		return Result{}, fmt.Errorf("read_file %s: %w", path, err)
	}
	v.Path = path
	r := ReadRange{MaxChars: limit, MaxOutput: min(4000, limit/4)}
	if n, ok := intArg(in, "start_line"); ok {
		r.Start = n - 1
	}
	if n, ok := intArg(in, "end_line"); ok {
		r.End = n
	}
	part := PartOf(v, r)
	start, end := r.Bounds(part.count())
	text := renderNotebook(part, start, end, limit)
	if !strings.Contains(text, "more cells not shown") && (start > 0 || end < part.count()) {
		text += fmt.Sprintf("\n[cells %d to %d of %d: start_line and end_line count cells from 1 here]\n", start+1, end, part.count())
	}
	return Result{Text: tb.capText(text)}, nil
}

// notOpenNotebook refuses a write to the notebook the user works in (its
// file is the frontend's to save): its cells change through the notebook
// tools, so that the page shows the change and saves it.
func (tb *Toolbox) notOpenNotebook(tool, path, abs string) error {
	nb := tb.environment().Notebook
	if nb == "" || !strings.EqualFold(filepath.Ext(abs), ".ipynb") {
		return nil
	}
	open, err := tb.ws.Resolve(nb)
	if err != nil || open != abs {
		return nil
	}
	return fmt.Errorf("%s %s: this is the notebook the user has open: change its cells with the notebook tools "+
		"(notebook_edit_cell, notebook_insert_cell), so that the page shows the change and saves it", tool, path)
}
