package mcpserve

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/notebooks"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
)

// TestNotebookTools: an MCP client (the go-sdk's) is offered the agent's
// notebook tools when the server has a notebook: it reads the cells,
// inserts one, runs it in the real kernel (its output lands in the
// .ipynb), and the calls are the agent's own (the session's history has
// them).
func TestNotebookTools(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kernel")
	}
	if _, err := client.FindSpec("python3"); err != nil {
		t.Skipf("no python3 kernelspec: %v", err)
	}
	ctx := context.Background()
	ws := t.TempDir()
	path := filepath.Join(ws, "work.ipynb")
	nb := notebooks.New()
	nb.Cells = append(nb.Cells, &notebooks.Cell{ID: "note0001", CellType: notebooks.Markdown, Source: "Compute the answer.", Metadata: notebooks.Metadata{}})
	if err := notebooks.WriteFile(path, nb); err != nil {
		t.Fatal(err)
	}
	cells, err := app.NotebookFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	r := backing.NewLocal(backing.LocalOptions{Kernel: "python3", Dir: ws})
	h := session.New(session.Config{Store: st, Runner: r, Workspace: ws, Kind: "mcp", Source: Source,
		Cells: func() session.Cells { return cells }})
	t.Cleanup(func() {
		h.Close()
		r.Close()
		st.Close()
	})
	f := &fixture{host: h, runner: r, srv: New(Options{Host: h, Runner: r, Version: "test", Approve: agent.ApproveAll, Notebook: true,
		Logger: hclog.New(&hclog.LoggerOptions{Output: os.Stderr, Level: hclog.Warn})})}
	cs := f.connect(t, nil)
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"notebook_read", "notebook_insert_cell", "notebook_edit_cell", "notebook_run_cell"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	if out, _ := call(t, cs, "notebook_read", nil); !strings.Contains(out, "[0] id=note0001 markdown\nCompute the answer.") {
		t.Fatalf("notebook_read: %s", out)
	}
	out, res := call(t, cs, "notebook_insert_cell", map[string]any{"source": "print(6 * 7)"})
	if res.IsError || !strings.Contains(out, "Inserted code cell") {
		t.Fatalf("notebook_insert_cell: %s", out)
	}
	if out, res := call(t, cs, "notebook_run_cell", map[string]any{"index": 1}); res.IsError || !strings.Contains(out, "42") {
		t.Fatalf("notebook_run_cell: %s", out)
	}
	got, err := notebooks.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Cells) != 2 || got.Cells[1].Source != "print(6 * 7)" || len(got.Cells[1].Outputs) != 1 || got.Cells[1].Outputs[0].Text != "42\n" {
		t.Fatalf("the notebook after the calls: %+v", got.Cells)
	}
	if _, res := call(t, cs, "notebook_edit_cell", map[string]any{"id": "nosuch", "source": "x"}); !res.IsError {
		t.Error("an edit of a cell that is not there did not fail")
	}
	hist := ""
	for _, m := range h.Conversation().UI() {
		hist += m.Text + "\n"
	}
	if !strings.Contains(hist, "notebook_insert_cell") || !strings.Contains(hist, "notebook_run_cell") {
		t.Errorf("the calls are not in the session's history:\n%s", hist)
	}
}
