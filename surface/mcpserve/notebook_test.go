package mcpserve

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

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
	ctx := context.Background()
	f, path, _ := notebookFixture(t, agent.ApproveAll)
	h := f.host
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

// notebookFixture is a server whose notebook tools work on a notebook
// file (one markdown cell, note0001), its kernel a real ipykernel; asks
// without elicitation get approve's answer.
func notebookFixture(t *testing.T, approve agent.ApprovalPolicy) (*fixture, string, session.FileCells) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a kernel")
	}
	if _, err := client.FindSpec("python3"); err != nil {
		t.Skipf("no python3 kernelspec: %v", err)
	}
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
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
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
	return &fixture{host: h, runner: r, srv: New(Options{Host: h, Runner: r, Version: "test", Approve: approve, Notebook: true,
		Logger: hclog.New(&hclog.LoggerOptions{Output: os.Stderr, Level: hclog.Warn})})}, path, cells
}

// TestNotebookRunElicited: a client that answers asks (elicitation) is
// asked about a run of a cell with the cell's code, naming the cell, as
// execute_code's ask shows its code; its answer holds for that code only:
// a cell changed between the question and the answer is not run.
func TestNotebookRunElicited(t *testing.T) {
	f, path, cells := notebookFixture(t, agent.ApproveNone)
	ctx := context.Background()
	var asked []string
	var change func()
	cs := f.connect(t, func(r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked = append(asked, r.Params.Message)
		if change != nil {
			change()
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow"}}, nil
	})
	out, res := call(t, cs, "notebook_insert_cell", map[string]any{"source": "print(6 * 7)"})
	if res.IsError {
		t.Fatalf("notebook_insert_cell: %s", out)
	}
	id := strings.Fields(strings.TrimPrefix(out, "Inserted code cell "))[0]
	if out, res := call(t, cs, "notebook_run_cell", map[string]any{"index": 1}); res.IsError || !strings.Contains(out, "42") {
		t.Fatalf("notebook_run_cell: %s", out)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "run cell "+id+" of the notebook") || !strings.Contains(asked[0], "print(6 * 7)") {
		t.Fatalf("asks %q, want one with the cell's code", asked)
	}
	change = func() {
		if _, err := cells.SetSource(ctx, id, "open('ran', 'w').close()"); err != nil {
			t.Error(err)
		}
	}
	if out, res := call(t, cs, "notebook_run_cell", map[string]any{"id": id}); !res.IsError || !strings.Contains(out, "changed since it was asked") {
		t.Fatalf("a run of a cell changed after the ask: %s", out)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "ran")); !os.IsNotExist(err) {
		t.Fatalf("the changed cell ran: %v", err)
	}
}
