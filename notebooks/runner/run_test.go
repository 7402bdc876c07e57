package runner

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/internal/nbtest"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/notebooks"
)

// testLogger logs warnings to stderr; AGENTKERNEL_LOG_LEVEL=debug shows all.
func testLogger() hclog.Logger {
	level := hclog.LevelFromString(os.Getenv("AGENTKERNEL_LOG_LEVEL"))
	if level == hclog.NoLevel {
		level = hclog.Warn
	}
	return hclog.New(&hclog.LoggerOptions{Name: "test", Level: level, Output: os.Stderr})
}

// python3Spec returns Debian's ipykernel spec, or skips.
func python3Spec(t testing.TB) *client.Spec {
	t.Helper()
	if testing.Short() {
		t.Skip("starts ipykernel")
	}
	nbtest.HavePython(t, "ipykernel")
	spec, err := client.ReadSpec("/usr/share/jupyter/kernels/python3")
	if err != nil {
		t.Skipf("no python3 kernelspec: %v", err)
	}
	return spec
}

func runOpts(t testing.TB) RunOptions {
	return RunOptions{
		Spec:   python3Spec(t),
		Logger: testLogger(),
		Dir:    t.TempDir(),
		Client: client.Options{ConnectionDir: t.TempDir()},
	}
}

// testCtx is a safety net against hangs, not a timing assertion.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

const pngB64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// tourCells are the cells of the runner tour, by purpose.
var tourCells = []struct{ name, source string }{
	{"md", ""},
	{"streams", "import sys\nprint('out')\nsys.stdout.flush()\nprint('err', file=sys.stderr)\nsys.stderr.flush()\nprint('more')\nprint('again')"},
	{"result", "1 + 1"},
	{"html", "from IPython.display import HTML, display\ndisplay(HTML('<b>bold</b>'))"},
	{"png", "import base64\nfrom IPython.display import Image\ndisplay(Image(data=base64.b64decode('" + pngB64 + "')))"},
	{"display", "h = display('first', display_id=True)\nh.update('second')"},
	{"update", "h.update('third')"},
	{"clear", "from IPython.display import clear_output\nprint('gone')\nclear_output()\nprint('kept')"},
	{"clearwait", "print('old')\nclear_output(wait=True)\nprint('new')"},
	{"empty", "  \n"},
	{"input", "input('name? ')"},
	{"error", "1/0"},
	{"widget", "from ipykernel.comm import Comm\nw = Comm(target_name='jupyter.widget', data={'state': {'_model_name': 'IntSliderModel', '_model_module': '@jupyter-widgets/controls', '_model_module_version': '2.0.0', 'value': 3}, 'buffer_paths': [['data']]}, buffers=[b'\\x01\\x02'])\nw.send({'method': 'update', 'state': {'value': 4}, 'buffer_paths': []})"},
	{"after", "print('after')"},
}

func tour() *notebooks.Notebook {
	nb := notebooks.New()
	for _, c := range tourCells {
		if c.name == "md" {
			nb.Cells = append(nb.Cells, notebooks.NewMarkdownCell("# Tour"))
			continue
		}
		cell := notebooks.NewCodeCell(c.source)
		cell.ID = c.name
		nb.Cells = append(nb.Cells, cell)
	}
	// The empty cell keeps what it had: nbclient skips it.
	empty := nb.Cells[cellIndex("empty")]
	empty.Outputs = []*notebooks.Output{{OutputType: notebooks.Stream, Name: "stdout", Text: "stale\n"}}
	empty.ExecutionCount = new(99)
	return nb
}

func cellIndex(name string) int {
	for i, c := range tourCells {
		if c.name == name {
			return i
		}
	}
	panic(name)
}

func texts(c *notebooks.Cell) []string {
	var out []string
	for _, o := range c.Outputs {
		switch o.OutputType {
		case notebooks.Stream:
			out = append(out, o.Name+":"+o.Text)
		case notebooks.ErrorOutput:
			out = append(out, "error:"+o.Ename)
		default:
			s, _ := o.Data.Text("text/plain")
			out = append(out, string(o.OutputType)+":"+s)
		}
	}
	return out
}

func eq(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}

func TestRunTour(t *testing.T) {
	opts := runOpts(t)
	opts.AllowErrors = true
	var events []ProgressEvent
	opts.Progress = func(ev ProgressEvent) { events = append(events, ev) }
	in := tour()
	before, _ := notebooks.Marshal(in)
	out, err := Run(testCtx(t), in, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if after, _ := notebooks.Marshal(in); string(after) != string(before) {
		t.Error("Run changed its input notebook")
	}
	cell := func(name string) *notebooks.Cell { return out.Cells[cellIndex(name)] }
	want := map[string][]string{
		"streams":   {"stdout:out\n", "stderr:err\n", "stdout:more\nagain\n"},
		"result":    {"execute_result:2"},
		"html":      {"display_data:<IPython.core.display.HTML object>"},
		"png":       {"display_data:<IPython.core.display.Image object>"},
		"display":   {"display_data:'third'"},
		"update":    nil,
		"clear":     {"stdout:kept\n"},
		"clearwait": {"stdout:new\n"},
		"empty":     {"stdout:stale\n"},
		"input":     {"error:StdinNotImplementedError"},
		"error":     {"error:ZeroDivisionError"},
		"after":     {"stdout:after\n"},
		"widget":    nil,
	}
	for name, w := range want {
		if got := texts(cell(name)); !eq(got, w) {
			t.Errorf("cell %s outputs = %q, want %q", name, got, w)
		}
	}
	if s, _ := cell("html").Outputs[0].Data.Text("text/html"); s != "<b>bold</b>" {
		t.Errorf("text/html = %q", s)
	}
	if s, _ := cell("png").Outputs[0].Data.Text("image/png"); strings.TrimSpace(s) != pngB64 {
		t.Errorf("image/png = %q", s)
	}
	if o := cell("result").Outputs[0]; o.ExecutionCount == nil || *o.ExecutionCount != 2 {
		t.Errorf("execute_result count = %v", o.ExecutionCount)
	}
	e := cell("error").Outputs[0]
	if e.Evalue != "division by zero" || len(e.Traceback) == 0 {
		t.Errorf("error output = %+v", e)
	}
	// Execution counts number the executed cells; skipped ones keep theirs.
	n := 0
	for i, c := range out.Cells {
		switch {
		case c.CellType != notebooks.Code:
		case tourCells[i].name == "empty":
			if c.ExecutionCount == nil || *c.ExecutionCount != 99 {
				t.Errorf("skipped cell count = %v", c.ExecutionCount)
			}
		default:
			n++
			if c.ExecutionCount == nil || *c.ExecutionCount != n {
				t.Errorf("cell %s execution_count = %v, want %d", c.ID, c.ExecutionCount, n)
			}
		}
	}
	// Metadata as nbclient writes it.
	var li struct{ Name string }
	if ok, _ := out.Metadata.Get("language_info", &li); !ok || li.Name != "python" {
		t.Errorf("language_info = %+v", li)
	}
	if ks, ok := out.Kernelspec(); !ok || ks.Name != "python3" || ks.Language != "python" {
		t.Errorf("kernelspec = %+v", ks)
	}
	// Progress: a start and a finish per executed cell.
	if len(events) != 2*n {
		t.Fatalf("%d progress events, want %d", len(events), 2*n)
	}
	for j, ev := range events {
		if ev.Finished != (j%2 == 1) || ev.N != j/2+1 || ev.Total != n {
			t.Errorf("event %d = %+v", j, ev)
		}
	}
	last := events[len(events)-1]
	if last.ID != "after" || last.Status != StatusOK || last.ExecutionCount != n {
		t.Errorf("last event = %+v", last)
	}
	if ev := events[2*(cellIndex("error")-2)+1]; ev.ID != "error" || ev.Status != StatusError {
		t.Errorf("error event = %+v", ev)
	}
	writeTemp(t, out, "tour.ipynb")
}

func TestRunStopsAtError(t *testing.T) {
	opts := runOpts(t)
	out, err := Run(testCtx(t), tour(), opts)
	var ce *CellError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *CellError", err)
	}
	i := cellIndex("input")
	if ce.Index != i || ce.ID != "input" || ce.Ename != "StdinNotImplementedError" || errors.Is(err, ErrTimeout) {
		t.Errorf("CellError = %+v", ce)
	}
	if !strings.Contains(err.Error(), `cell 10 (id "input"): StdinNotImplementedError`) {
		t.Errorf("error text %q", err)
	}
	if out == nil {
		t.Fatal("no partial notebook")
	}
	if got := texts(out.Cells[i]); !eq(got, []string{"error:StdinNotImplementedError"}) {
		t.Errorf("failing cell outputs = %q", got)
	}
	for _, name := range []string{"error", "after"} {
		if c := out.Cells[cellIndex(name)]; len(c.Outputs) != 0 || c.ExecutionCount != nil {
			t.Errorf("cell %s ran after the error: %+v", name, c)
		}
	}
	writeTemp(t, out, "partial.ipynb")
}

func TestRunRaisesExceptionTag(t *testing.T) {
	nb := notebooks.New()
	bad := notebooks.NewCodeCell("raise ValueError('expected')")
	bad.Metadata.Set("tags", []string{"raises-exception"})
	skipped := notebooks.NewCodeCell("print('never')")
	skipped.Metadata.Set("tags", []string{"skip-execution"})
	nb.Cells = append(nb.Cells, bad, skipped, notebooks.NewCodeCell("print('ok')"))
	out, err := Run(testCtx(t), nb, runOpts(t))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := texts(out.Cells[0]); !eq(got, []string{"error:ValueError"}) {
		t.Errorf("tagged cell = %q", got)
	}
	if len(out.Cells[1].Outputs) != 0 || out.Cells[1].ExecutionCount != nil {
		t.Errorf("skip-execution cell ran")
	}
	if got := texts(out.Cells[2]); !eq(got, []string{"stdout:ok\n"}) || *out.Cells[2].ExecutionCount != 2 {
		t.Errorf("last cell = %q", got)
	}
}

func TestRunTimeout(t *testing.T) {
	opts := runOpts(t)
	opts.Timeout = 2 * time.Second
	nb := notebooks.New()
	nb.Cells = append(nb.Cells,
		notebooks.NewCodeCell("x = 1"),
		notebooks.NewCodeCell("import time\nprint('sleeping', flush=True)\ntime.sleep(30)"),
		notebooks.NewCodeCell("print('never')"))
	nb.Cells[1].ID = "slow"
	out, err := Run(testCtx(t), nb, opts)
	var ce *CellError
	if !errors.As(err, &ce) || !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want a timeout *CellError", err)
	}
	if ce.Index != 1 || ce.ID != "slow" || ce.Timeout != 2*time.Second {
		t.Errorf("CellError = %+v", ce)
	}
	if !strings.Contains(err.Error(), `cell 1 (id "slow"): timed out after 2s`) {
		t.Errorf("error text %q", err)
	}
	// The interrupt's KeyboardInterrupt is kept, as the frontend would show it.
	if got := texts(out.Cells[1]); !eq(got, []string{"stdout:sleeping\n", "error:KeyboardInterrupt"}) {
		t.Errorf("slow cell outputs = %q", got)
	}
	if len(out.Cells[2].Outputs) != 0 {
		t.Error("cell after the timeout ran")
	}
}

func TestRunNoKernel(t *testing.T) {
	nb := notebooks.New()
	nb.Metadata.Set("kernelspec", notebooks.KernelspecMeta{Name: "no-such-kernel-xyz", DisplayName: "x"})
	_, err := Run(testCtx(t), nb, RunOptions{Logger: testLogger()})
	if !errors.Is(err, client.ErrNoSpec) || !strings.Contains(err.Error(), `"no-such-kernel-xyz"`) {
		t.Errorf("err = %v", err)
	}
}

// TestRunMatchesNbconvert runs the tour with Run and with Debian's
// `jupyter nbconvert --to notebook --execute` and compares outputs and
// execution counts (tracebacks are compared by ename only: they hold file
// names and ANSI colours).
func TestRunMatchesNbconvert(t *testing.T) {
	opts := runOpts(t)
	if _, err := os.Stat("/usr/bin/jupyter-nbconvert"); err != nil {
		t.Skip("no jupyter-nbconvert")
	}
	opts.AllowErrors = true
	dir := t.TempDir()
	in := tour()
	in.Metadata.Set("kernelspec", notebooks.KernelspecMeta{Name: "python3", DisplayName: "Python 3", Language: "python"})
	src := filepath.Join(dir, "tour.ipynb")
	if err := notebooks.WriteFile(src, in); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/jupyter", "nbconvert", "--to", "notebook", "--execute", "--allow-errors",
		"--output", "nbconvert", "--output-dir", dir, src)
	cmd.Env = append(os.Environ(), "JUPYTER_RUNTIME_DIR="+t.TempDir(), "JUPYTER_PATH=", "PATH=/usr/bin:/bin")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nbconvert: %v\n%s", err, b)
	}
	want, err := notebooks.ReadFile(filepath.Join(dir, "nbconvert.ipynb"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Run(testCtx(t), in, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Cells) != len(want.Cells) {
		t.Fatalf("%d cells, nbconvert %d", len(got.Cells), len(want.Cells))
	}
	for i := range got.Cells {
		g, w := normalise(got.Cells[i]), normalise(want.Cells[i])
		if testing.Verbose() && i == cellIndex("display") {
			t.Logf("display cell, both: %s", g)
		}
		if g != w {
			t.Errorf("cell %d (%s):\n ours: %s\n nbconvert: %s", i, got.Cells[i].ID, g, w)
		}
	}
	var gl, wl map[string]any
	got.Metadata.Get("language_info", &gl)
	want.Metadata.Get("language_info", &wl)
	if gl["version"] != wl["version"] || gl["name"] != wl["name"] {
		t.Errorf("language_info ours %v, nbconvert %v", gl, wl)
	}
	var gw, ww any
	if ok, _ := got.Metadata.Get("widgets", &gw); !ok {
		t.Error("no widgets metadata")
	}
	want.Metadata.Get("widgets", &ww)
	if !reflect.DeepEqual(widgetStates(gw), widgetStates(ww)) {
		t.Errorf("widgets metadata\n ours: %s\n nbconvert: %s", got.Metadata["widgets"], want.Metadata["widgets"])
	}
	writeTemp(t, got, "ours.ipynb")
}

// normalise renders a cell's outputs and count for comparison.
func normalise(c *notebooks.Cell) string {
	cp := c.Clone()
	cp.ID, cp.Metadata = "", nil
	for _, o := range cp.Outputs {
		if o.OutputType == notebooks.ErrorOutput {
			o.Traceback = nil
		}
	}
	if c.CellType != notebooks.Code {
		return string(c.CellType)
	}
	b, _ := notebooks.Marshal(&notebooks.Notebook{Nbformat: 4, NbformatMinor: 4, Cells: []*notebooks.Cell{cp}})
	return string(b)
}

// widgetStates drops the comm ids (random per run) from widgets metadata.
func widgetStates(w any) []any {
	m, _ := w.(map[string]any)
	ws, _ := m["application/vnd.jupyter.widget-state+json"].(map[string]any)
	st, _ := ws["state"].(map[string]any)
	var out []any
	for _, v := range st {
		out = append(out, v)
	}
	return out
}

func TestRunKernelDies(t *testing.T) {
	nb := notebooks.New()
	nb.Cells = append(nb.Cells, notebooks.NewCodeCell("print('hi')"), notebooks.NewCodeCell("import os\nos._exit(1)"), notebooks.NewCodeCell("print('never')"))
	nb.Cells[1].ID = "exit"
	out, err := Run(testCtx(t), nb, runOpts(t))
	if !errors.Is(err, client.ErrDead) || !strings.Contains(err.Error(), `run cell 1 (id "exit")`) {
		t.Fatalf("err = %v, want one naming cell 1 and wrapping client.ErrDead", err)
	}
	var ce *CellError
	if errors.As(err, &ce) {
		t.Errorf("a dead kernel is not a *CellError: %+v", ce)
	}
	if got := texts(out.Cells[0]); !eq(got, []string{"stdout:hi\n"}) {
		t.Errorf("first cell = %q", got)
	}
}

func TestRunCancel(t *testing.T) {
	nb := notebooks.New()
	nb.Cells = append(nb.Cells, notebooks.NewCodeCell("import time\ntime.sleep(30)"), notebooks.NewCodeCell("print('never')"))
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	opts := runOpts(t)
	opts.Progress = func(ev ProgressEvent) {
		if !ev.Finished && ev.N == 1 {
			cancel() // Execute sees a cancelled context at once
		}
	}
	out, err := Run(ctx, nb, opts)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "cell 0") {
		t.Fatalf("err = %v", err)
	}
	if out == nil || len(out.Cells[1].Outputs) != 0 {
		t.Error("second cell ran")
	}
}
