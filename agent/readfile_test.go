package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/messages"
)

// a 1x1 PNG.
const onePixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

// TestReadFileKinds: read_file gives a PNG as an image (with its
// description, which is all a model without vision keeps), a notebook as
// its cells (not its JSON), and write_file and edit_file refuse the
// notebook the user has open, pointing to the notebook tools.
func TestReadFileKinds(t *testing.T) {
	dir := t.TempDir()
	ws, err := NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	png, _ := base64.StdEncoding.DecodeString(onePixel)
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("plot.png", png)
	write("analysis.ipynb", []byte(`{"cells":[],"metadata":{},"nbformat":4,"nbformat_minor":5}`))
	write("other.ipynb", []byte(`{"cells":[],"metadata":{},"nbformat":4,"nbformat_minor":5}`))
	tb, err := NewToolbox(ToolboxOptions{Workspace: ws,
		Environment: func() Environment { return Environment{Notebook: "analysis.ipynb"} },
		NotebookFile: func(_ context.Context, abs string, _ int) (NotebookView, error) {
			return NotebookView{Cells: []NotebookCell{
				{ID: "a1", Kind: MarkdownCell, Source: "# Sales"},
				{ID: "b2", Kind: CodeCell, Source: "df.head()", ExecutionCount: 3, Outputs: []CellOutput{{Type: "execute_result", Text: "   city  sales"}}},
			}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, in map[string]any) (Result, error) {
		tool, _ := tb.Lookup(name)
		b, _ := json.Marshal(in)
		return tool.Execute(context.Background(), b)
	}
	res, err := run(ToolReadFile, map[string]any{"path": "plot.png"})
	if err != nil || !strings.Contains(res.Text, "plot.png: [image/png 1x1") || len(res.Blocks) != 1 || res.Blocks[0].Type != messages.BlockImage {
		t.Errorf("a PNG: %+v %v", res, err)
	}
	res, err = run(ToolReadFile, map[string]any{"path": "analysis.ipynb"})
	if err != nil || !strings.Contains(res.Text, "[1] id=b2 code [3]\ndf.head()") || strings.Contains(res.Text, "nbformat") {
		t.Errorf("a notebook: %q %v", res.Text, err)
	}
	for _, c := range []struct {
		tool string
		in   map[string]any
	}{
		{ToolWriteFile, map[string]any{"path": "analysis.ipynb", "content": "{}"}},
		{ToolEditFile, map[string]any{"path": "analysis.ipynb", "search": "cells", "replace": "x"}},
	} {
		if _, err := run(c.tool, c.in); err == nil || !strings.Contains(err.Error(), "notebook the user has open") {
			t.Errorf("%s on the open notebook: %v", c.tool, err)
		}
	}
	if _, err := run(ToolWriteFile, map[string]any{"path": "other.ipynb", "content": "{}"}); err != nil {
		t.Errorf("write_file of another notebook: %v", err)
	}
}
