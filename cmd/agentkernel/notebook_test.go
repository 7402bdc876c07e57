package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/notebooks"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestAskWorksOnANotebook: ask --notebook gives the agent the notebook's
// cells: it reads them (a markdown cell's words reach the model), inserts
// a markdown and a code cell, runs cells in a real kernel (their outputs
// and execution counts land in the file), and edits the user's cell after
// the approval; the file it leaves validates with nbformat.
func TestAskWorksOnANotebook(t *testing.T) {
	srv, ws := askEnv(t)
	path := filepath.Join(ws, "sales.ipynb")
	nb := notebooks.New()
	nb.Cells = append(nb.Cells,
		&notebooks.Cell{ID: "intro001", CellType: notebooks.Markdown, Source: "# Sales\nThe shop's monthly totals, in euros.", Metadata: notebooks.Metadata{}},
		&notebooks.Cell{ID: "load0001", CellType: notebooks.Code, Source: "x = 21", Metadata: notebooks.Metadata{}, Outputs: []*notebooks.Output{}})
	if err := notebooks.WriteFile(path, nb); err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("r1", "notebook_read", `{}`)),
		scripted.Reply(scripted.ToolCall("i1", "notebook_insert_cell", `{"type": "markdown", "source": "## Doubled"}`)),
		scripted.Reply(scripted.ToolCall("i2", "notebook_insert_cell", `{"source": "y = x * 2\nprint(y)"}`)),
		scripted.Reply(scripted.ToolCall("x1", "notebook_run_cell", `{"index": 1}`)),
		scripted.Reply(scripted.ToolCall("x2", "notebook_run_cell", `{"index": 3}`)),
		scripted.Reply(scripted.ToolCall("e1", "notebook_edit_cell", `{"id": "load0001", "search": "21", "replace": "42"}`)),
		scripted.Reply(scripted.Text("The notebook doubles x now.")),
	)
	out, err := ask(t, strings.NewReader(""), "Add a cell that doubles x", "--notebook", path, "--approve", "all", "--output-format", "json")
	if err != nil {
		t.Fatalf("ask: %v\n%s", err, out)
	}
	reqs := srv.Requests()
	if !strings.Contains(string(reqs[1].Raw), "The shop's monthly totals, in euros.") {
		t.Error("the markdown cell the agent read did not reach the model")
	}
	got, err := notebooks.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, c := range got.Cells {
		sources = append(sources, string(c.CellType)+": "+c.Source)
	}
	want := []string{"markdown: # Sales\nThe shop's monthly totals, in euros.", "code: x = 42", "markdown: ## Doubled", "code: y = x * 2\nprint(y)"}
	if strings.Join(sources, " | ") != strings.Join(want, " | ") {
		t.Fatalf("cells %q, want %q", sources, want)
	}
	ran := got.Cells[3]
	if ran.ExecutionCount == nil || len(ran.Outputs) != 1 || ran.Outputs[0].Text != "42\n" {
		b, _ := json.Marshal(ran.Outputs)
		t.Fatalf("the run cell: count %v, outputs %s", ran.ExecutionCount, b)
	}
	if got.Cells[1].ExecutionCount == nil {
		t.Error("the user's cell that ran has no execution count")
	}
	// The edit of the user's cell was asked (and allowed by the policy),
	// with its diff; the history keeps the diff.
	if !strings.Contains(string(reqs[len(reqs)-1].Raw), "Changed cell load0001") {
		t.Error("the edit's result did not reach the model")
	}
	if py, err := exec.LookPath("/usr/bin/python3"); err == nil {
		check := exec.Command(py, "-c", "import nbformat, sys; nbformat.validate(nbformat.read(sys.argv[1], 4))", path)
		if b, err := check.CombinedOutput(); err != nil {
			t.Errorf("nbformat does not validate the notebook: %v\n%s", err, b)
		}
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"id": "load0001"`) {
		t.Error("the user's cell lost its id")
	}
}

// TestAskWorksOnAPromptNotebook: ask --notebook on a notebook of the
// prompt-mode kernel (its kernelspec's language is markdown, as such a
// kernelspec's is): the code cell the agent inserts starts with %%code, a
// whole edit keeps the line, a run sends the kernel the code alone (its
// output lands in the file), and the user's request (a bare cell) is not
// run.
func TestAskWorksOnAPromptNotebook(t *testing.T) {
	srv, ws := askEnv(t)
	path := filepath.Join(ws, "double.ipynb")
	nb := notebooks.New()
	// A kernelspec not installed here: its language tells the mode.
	_ = nb.Metadata.Set("kernelspec", map[string]string{"name": "agent-not-installed", "display_name": "Agent", "language": "markdown"})
	nb.Cells = append(nb.Cells,
		&notebooks.Cell{ID: "ask00001", CellType: notebooks.Code, Source: "Double x", Metadata: notebooks.Metadata{}, Outputs: []*notebooks.Output{}},
		&notebooks.Cell{ID: "code0001", CellType: notebooks.Code, Source: "%%code\nx = 21", Metadata: notebooks.Metadata{}, Outputs: []*notebooks.Output{}})
	if err := notebooks.WriteFile(path, nb); err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("i1", "notebook_insert_cell", `{"source": "print(x * 2)", "index": 2}`)),
		scripted.Reply(scripted.ToolCall("e1", "notebook_edit_cell", `{"id": "code0001", "source": "x = 20 + 1"}`)),
		scripted.Reply(scripted.ToolCall("x1", "notebook_run_cell", `{"id": "code0001"}`)),
		scripted.Reply(scripted.ToolCall("x2", "notebook_run_cell", `{"index": 2}`)),
		scripted.Reply(scripted.ToolCall("x3", "notebook_run_cell", `{"id": "ask00001"}`)),
		scripted.Reply(scripted.Text("x doubled is 42.")),
	)
	out, err := ask(t, strings.NewReader(""), "Double x", "--notebook", path, "--approve", "all", "--output-format", "json")
	if err != nil {
		t.Fatalf("ask: %v\n%s", err, out)
	}
	reqs := srv.Requests()
	if !strings.Contains(string(reqs[0].Raw), "%%code") {
		t.Errorf("the tools the model was offered do not say what %%%%code means in this notebook")
	}
	if !strings.Contains(string(reqs[len(reqs)-1].Raw), "request to the agent, not code") {
		t.Error("the run of the user's request was not refused")
	}
	got, err := notebooks.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, c := range got.Cells {
		sources = append(sources, c.Source)
	}
	if want := []string{"Double x", "%%code\nx = 20 + 1", "%%code\nprint(x * 2)"}; strings.Join(sources, " | ") != strings.Join(want, " | ") {
		t.Fatalf("cells %q, want %q", sources, want)
	}
	if ran := got.Cells[2]; ran.ExecutionCount == nil || len(ran.Outputs) != 1 || ran.Outputs[0].Text != "42\n" {
		b, _ := json.Marshal(ran.Outputs)
		t.Fatalf("the run cell: count %v, outputs %s", ran.ExecutionCount, b)
	}
	if req := got.Cells[0]; req.ExecutionCount != nil || len(req.Outputs) != 0 {
		t.Errorf("the user's request ran: %+v", req)
	}
}

// TestAskReadsA10MBOutput: a cell whose run prints 10 MB, run by the agent
// in a real kernel, then read: what the model is told of it stays bounded
// (the run's result and the read), and the output is whole in the file.
func TestAskReadsA10MBOutput(t *testing.T) {
	srv, ws := askEnv(t)
	path := filepath.Join(ws, "big.ipynb")
	nb := notebooks.New()
	nb.Cells = append(nb.Cells,
		&notebooks.Cell{ID: "big00001", CellType: notebooks.Code, Source: "print('x' * 10_000_000)", Metadata: notebooks.Metadata{}, Outputs: []*notebooks.Output{}},
		&notebooks.Cell{ID: "next0001", CellType: notebooks.Code, Source: "y = 1", Metadata: notebooks.Metadata{}, Outputs: []*notebooks.Output{}})
	if err := notebooks.WriteFile(path, nb); err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("x1", "notebook_run_cell", `{"id": "big00001"}`)),
		scripted.Reply(scripted.ToolCall("r1", "notebook_read", `{}`)),
		scripted.Reply(scripted.Text("A long line of x.")),
	)
	out, err := ask(t, strings.NewReader(""), "What does the first cell print?", "--notebook", path, "--approve", "all", "--output-format", "json")
	if err != nil {
		t.Fatalf("ask: %v\n%s", err, out)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	for i, what := range []string{"the run's result", "the read's"} {
		// Each request carries the history: what the tools added to it.
		grew := len(reqs[i+1].Raw) - len(reqs[i].Raw)
		t.Logf("%s: %d bytes to the model", what, grew)
		if grew > 64<<10 {
			t.Errorf("%s: %d bytes to the model for a 10 MB output", what, grew)
		}
	}
	if !strings.Contains(string(reqs[2].Raw), "more characters") {
		t.Error("the read does not say the output was cut")
	}
	got, err := notebooks.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	outs := got.Cells[0].Outputs
	if len(outs) != 1 || len(outs[0].Text) != 10_000_001 || got.Cells[1].Source != "y = 1" {
		t.Fatalf("the file's cells after the run: %d outputs of the big cell (want its 10,000,001 characters whole), %q", len(outs), got.Cells[1].Source)
	}
}

// TestRunInsertsCells: agentkernel run opens the notebook comm for the
// notebook it runs; a prompt cell's agent reads it and inserts a cell — a
// code cell of this prompt-mode notebook, under a %%code line — which is in
// the notebook written out (not run again by the runner); the notebook
// validates, and run again headless, without the prompt, the agent's cell
// runs as code: it prints the total, and the model is asked nothing.
func TestRunInsertsCells(t *testing.T) {
	c := newCLI(t)
	srv := scripted.New(t)
	tmp := t.TempDir()
	in := filepath.Join(tmp, "report.ipynb")
	promptNotebook(t, in, "# Report\nThe numbers are 1, 2 and 3.", "Add a cell that prints the total of the numbers above.")
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("r1", "notebook_read", `{}`)),
		scripted.Reply(scripted.ToolCall("i1", "notebook_insert_cell", `{"source": "print(sum([1, 2, 3]))", "after_id": "prompt01"}`)),
		scripted.Reply(scripted.Text("Added a cell that prints the total.")),
	)
	out := filepath.Join(tmp, "out.ipynb")
	if _, stderr, err := c.run(t, scriptedEnv(srv), "run", in, "-o", out, "--model", "openai:scripted", "--approve", "all"); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	if !strings.Contains(string(srv.Requests()[1].Raw), "The numbers are 1, 2 and 3.") {
		t.Error("the markdown cell did not reach the model")
	}
	got, err := notebooks.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Cells) != 3 || got.Cells[2].Source != "%%code\nprint(sum([1, 2, 3]))" || len(got.Cells[2].Outputs) != 0 {
		t.Fatalf("cells of the written notebook: %+v", got.Cells)
	}
	if py := "/usr/bin/python3"; exec.Command(py, "-c", "import nbformat").Run() == nil {
		check := exec.Command(py, "-c", "import nbformat, sys; nbformat.validate(nbformat.read(sys.argv[1], 4))", out)
		if b, err := check.CombinedOutput(); err != nil {
			t.Errorf("nbformat does not validate the notebook: %v\n%s", err, b)
		}
	}
	got.Cells = slices.Delete(got.Cells, 1, 2) // the prompt
	again := filepath.Join(tmp, "again.ipynb")
	if err := notebooks.WriteFile(again, got); err != nil {
		t.Fatal(err)
	}
	asked := len(srv.Requests())
	if _, stderr, err := c.run(t, scriptedEnv(srv), "run", again, "-o", again, "--model", "openai:scripted"); err != nil {
		t.Fatalf("run again: %v\n%s", err, stderr)
	}
	ran, err := notebooks.ReadFile(again)
	if err != nil {
		t.Fatal(err)
	}
	if outs := ran.Cells[1].Outputs; len(outs) != 1 || outs[0].Text != "6\n" || len(srv.Requests()) != asked {
		b, _ := json.Marshal(outs)
		t.Fatalf("the agent's cell run again: outputs %s, %d model requests", b, len(srv.Requests())-asked)
	}
}

// TestNbclientWorksOnTheFile: a kernel that no frontend with the notebook
// comm is attached to (nbclient) is told its notebook with %agent
// notebook; the agent reads it and inserts a cell, which is in the .ipynb
// on disk (nbclient's copy in memory is its own), and the file validates.
func TestNbclientWorksOnTheFile(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import nbclient").Run(); err != nil {
		t.Skip("no nbclient for /usr/bin/python3")
	}
	c := newCLI(t)
	srv := scripted.New(t)
	tmp := t.TempDir()
	path := filepath.Join(tmp, "totals.ipynb")
	promptNotebook(t, path, "# Totals\nThe numbers are 4 and 5.", "%agent notebook totals.ipynb", "Add a cell that prints the sum of the numbers above.")
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("r1", "notebook_read", `{}`)),
		scripted.Reply(scripted.ToolCall("i1", "notebook_insert_cell", `{"source": "print(4 + 5)", "after_id": "prompt02"}`)),
		scripted.Reply(scripted.Text("Added a cell that prints the sum.")),
	)
	run := exec.Command(py, "-c", `import nbformat, nbclient, sys
nb = nbformat.read(sys.argv[1], 4)
nbclient.NotebookClient(nb, timeout=120, resources={"metadata": {"path": sys.argv[2]}}).execute()
print(nb.cells[1].outputs[0]["text"], end="")`, path, tmp)
	run.Env = c.env(append(scriptedEnv(srv), "AGENTKERNEL_MODEL=openai:scripted", "AGENTKERNEL_APPROVE=all"))
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("nbclient: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Notebook: "+path+" (on disk") {
		t.Errorf("%%agent notebook said:\n%s", out)
	}
	if !strings.Contains(string(srv.Requests()[1].Raw), "The numbers are 4 and 5.") {
		t.Error("the markdown cell did not reach the model")
	}
	got, err := notebooks.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Cells) != 4 || got.Cells[3].Source != "%%code\nprint(4 + 5)" {
		t.Fatalf("the file's cells: %+v", got.Cells)
	}
	check := exec.Command(py, "-c", "import nbformat, sys; nbformat.validate(nbformat.read(sys.argv[1], 4))", path)
	if b, err := check.CombinedOutput(); err != nil {
		t.Errorf("nbformat does not validate the notebook: %v\n%s", err, b)
	}
}

// promptNotebook writes a prompt-mode notebook at path: a markdown cell
// title001, then code cells prompt01, prompt02… with sources.
func promptNotebook(t *testing.T, path, markdown string, sources ...string) {
	t.Helper()
	nb := notebooks.New()
	_ = nb.Metadata.Set("kernelspec", map[string]string{"name": "agent-prompt", "display_name": "Agent", "language": "markdown"})
	nb.Cells = append(nb.Cells, &notebooks.Cell{ID: "title001", CellType: notebooks.Markdown, Source: markdown, Metadata: notebooks.Metadata{}})
	for i, src := range sources {
		nb.Cells = append(nb.Cells, &notebooks.Cell{ID: fmt.Sprintf("prompt%02d", i+1), CellType: notebooks.Code, Source: src,
			Metadata: notebooks.Metadata{}, Outputs: []*notebooks.Output{}})
	}
	if err := notebooks.WriteFile(path, nb); err != nil {
		t.Fatal(err)
	}
}

// TestNotebookReadShowsPlots: a cell whose matplotlib plot the agent ran
// in a real kernel, read by its id, reaches a vision model as the image
// itself; a model without vision gets the text's description of it (its
// type, size and pixels) and no image. A read of the whole notebook names
// the image and says how to see it.
func TestNotebookReadShowsPlots(t *testing.T) {
	for _, c := range []struct {
		model  string
		vision bool
	}{{askModel, true}, {"openai:text-only-model", false}} {
		t.Run(c.model, func(t *testing.T) {
			srv, ws := askEnv(t)
			path := filepath.Join(ws, "plot.ipynb")
			nb := notebooks.New()
			nb.Cells = append(nb.Cells, &notebooks.Cell{ID: "plot0001", CellType: notebooks.Code, Metadata: notebooks.Metadata{},
				Outputs: []*notebooks.Output{},
				Source:  "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.title('squares')\nplt.show()"})
			if err := notebooks.WriteFile(path, nb); err != nil {
				t.Fatal(err)
			}
			srv.Enqueue(
				scripted.Reply(scripted.ToolCall("x1", "notebook_run_cell", `{"id": "plot0001"}`)),
				scripted.Reply(scripted.ToolCall("r1", "notebook_read", `{}`)),
				scripted.Reply(scripted.ToolCall("r2", "notebook_read", `{"id": "plot0001"}`)),
				scripted.Reply(scripted.Text("A rising curve.")),
			)
			out, err := ask(t, strings.NewReader(""), "What does the plot show?", "--model", c.model, "--notebook", path,
				"--approve", "all", "--output-format", "json")
			if err != nil {
				t.Fatalf("ask: %v\n%s", err, out)
			}
			reqs := srv.Requests()
			if len(reqs) != 4 {
				t.Fatalf("%d model requests, want 4", len(reqs))
			}
			whole, one := string(reqs[2].Raw), string(reqs[3].Raw)
			if !strings.Contains(whole, "[image/png]") || !strings.Contains(whole, "notebook_read with a cell's id shows them") {
				t.Errorf("the whole read does not name the plot or say how to see it:\n%s", tail(whole, 1500))
			}
			if strings.Count(whole, "data:image/png;base64,") > strings.Count(string(reqs[1].Raw), "data:image/png;base64,") {
				t.Errorf("the whole read sent the image")
			}
			if !strings.Contains(one, "Images of its outputs: [image/png ") {
				t.Errorf("the read by id does not describe the plot:\n%s", tail(one, 1500))
			}
			images := strings.Count(one, "data:image/png;base64,iVBOR") - strings.Count(whole, "data:image/png;base64,iVBOR")
			if want := map[bool]int{true: 1, false: 0}[c.vision]; images != want {
				t.Errorf("vision %v: the read by id sent %d images, want %d", c.vision, images, want)
			}
		})
	}
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
