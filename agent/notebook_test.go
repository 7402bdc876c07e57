package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// memNotebook is a Notebook in memory, as the headless runner keeps one.
type memNotebook struct {
	mu     sync.Mutex
	cells  []NotebookCell
	active string
	n      int
	ran    []string
	prompt bool // its cells are in prompt mode
}

func (m *memNotebook) Read(_ context.Context, maxOutput int) (NotebookView, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := NotebookView{Path: "analysis.ipynb", Active: m.active}
	for _, c := range m.cells {
		c.Outputs = slices.Clone(c.Outputs)
		for i, o := range c.Outputs {
			if len(o.Text) <= maxOutput {
				continue // no more runes than bytes
			}
			if r := []rune(o.Text); len(r) > maxOutput {
				c.Outputs[i].Text, c.Outputs[i].Cut = string(r[:maxOutput]), len(r)-maxOutput
			}
		}
		v.Cells = append(v.Cells, c)
	}
	return v, nil
}

func (m *memNotebook) find(id string) (int, error) {
	for i, c := range m.cells {
		if c.ID == id {
			return i, nil
		}
	}
	return -1, fmt.Errorf("cell %s: %w", id, ErrNoCell)
}

func (m *memNotebook) Insert(_ context.Context, index int, kind CellKind, source string) (NotebookCell, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	c := NotebookCell{ID: fmt.Sprintf("new%05d", m.n), Kind: kind, Source: source}
	m.cells = slices.Insert(m.cells, index, c)
	return c, nil
}

func (m *memNotebook) SetSource(_ context.Context, id, source string) (NotebookCell, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, err := m.find(id)
	if err != nil {
		return NotebookCell{}, err
	}
	before := m.cells[i]
	m.cells[i].Source = source
	return before, nil
}

func (m *memNotebook) Move(_ context.Context, id string, to int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, err := m.find(id)
	if err != nil {
		return err
	}
	c := m.cells[i]
	m.cells = slices.Insert(slices.Delete(m.cells, i, i+1), to, c)
	return nil
}

func (m *memNotebook) Delete(_ context.Context, id string) (NotebookCell, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, err := m.find(id)
	if err != nil {
		return NotebookCell{}, err
	}
	c := m.cells[i]
	m.cells = slices.Delete(m.cells, i, i+1)
	return c, nil
}

func (m *memNotebook) Run(_ context.Context, id, code string, _ func(CodeOutput)) (CodeResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, err := m.find(id)
	if err != nil {
		return CodeResult{}, err
	}
	if _, now := ParseCell(m.cells[i].Source, m.prompt); now != code {
		return CodeResult{}, fmt.Errorf("cell %s changed: %w", id, ErrConflict)
	}
	m.ran = append(m.ran, code)
	m.cells[i].ExecutionCount = len(m.ran)
	m.cells[i].Outputs = []CellOutput{{Type: "stream", Text: "ran " + id + "\n"}}
	return CodeResult{Stdout: "ran " + id + "\n"}, nil
}

func (m *memNotebook) sources() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, c := range m.cells {
		out = append(out, c.Source)
	}
	return out
}

func userNotebook() *memNotebook {
	return &memNotebook{active: "aaaa0002", cells: []NotebookCell{
		{ID: "aaaa0001", Kind: MarkdownCell, Source: "# Sales\nMonthly totals of the shop."},
		{ID: "aaaa0002", Kind: CodeCell, Source: "import pandas as pd\ndf = pd.read_csv('sales.csv')", ExecutionCount: 1},
		{ID: "aaaa0003", Kind: CodeCell, Source: "df.plot()", ExecutionCount: 2,
			Outputs: []CellOutput{{Type: "display_data", Text: "<Figure>", Images: []string{"image/png"}}}},
	}}
}

// TestNotebookTools: the agent reads every cell (ids, types, sources,
// outputs, where the user is), inserts below the user's cell by default or
// where it is told, edits whole or by search and replace, moves, deletes
// and runs cells, addressed by id or by index; errors name what is wrong.
func TestNotebookTools(t *testing.T) {
	nb := userNotebook()
	tb := testToolbox(t, ToolboxOptions{Notebook: func() Notebook { return nb }})
	read := mustRun(t, tb, ToolNotebookRead, `{}`)
	for _, want := range []string{"analysis.ipynb: 3 cells", "the user is in cell aaaa0002 (index 1)", "[0] id=aaaa0001 markdown\n# Sales",
		"[2] id=aaaa0003 code [2]\ndf.plot()", "-- display_data [image/png]"} {
		if !strings.Contains(read.Text, want) {
			t.Errorf("notebook_read lacks %q:\n%s", want, read.Text)
		}
	}
	ins := mustRun(t, tb, ToolNotebookInsert, `{"source": "df.describe()"}`)
	if got := nb.sources(); got[2] != "df.describe()" || !strings.Contains(ins.Text, "at index 2") {
		t.Fatalf("inserted below the user's cell? %q, %s", got, ins.Text)
	}
	mustRun(t, tb, ToolNotebookInsert, `{"source": "## Notes", "type": "markdown", "index": 0}`)
	mustRun(t, tb, ToolNotebookInsert, `{"source": "print('end')", "after_id": "aaaa0003"}`)
	if got := nb.sources(); got[0] != "## Notes" || got[len(got)-1] != "print('end')" {
		t.Fatalf("placed inserts: %q", got)
	}
	edit := mustRun(t, tb, ToolNotebookEdit, `{"id": "aaaa0002", "search": "sales.csv", "replace": "sales-2026.csv"}`)
	if !strings.Contains(nb.sources()[2], "sales-2026.csv") || !strings.Contains(edit.Diff, "+ df = pd.read_csv('sales-2026.csv')") {
		t.Fatalf("edit by search: %q, diff %q", nb.sources()[2], edit.Diff)
	}
	mustRun(t, tb, ToolNotebookEdit, `{"index": 1, "source": "# Sales 2026"}`)
	if nb.sources()[1] != "# Sales 2026" {
		t.Fatalf("edit by index: %q", nb.sources())
	}
	mustRun(t, tb, ToolNotebookMove, `{"id": "aaaa0001", "to": 0}`)
	mustRun(t, tb, ToolNotebookMove, `{"id": "aaaa0003", "after_id": "aaaa0001"}`)
	if got := nb.sources(); got[0] != "# Sales 2026" || got[1] != "df.plot()" {
		t.Fatalf("moves: %q", got)
	}
	ran := mustRun(t, tb, ToolNotebookRun, `{"id": "aaaa0003"}`)
	if !strings.Contains(ran.Text, "[stdout]\nran aaaa0003") || len(nb.ran) != 1 {
		t.Fatalf("run: %s, ran %q", ran.Text, nb.ran)
	}
	del := mustRun(t, tb, ToolNotebookDelete, `{"id": "aaaa0003"}`)
	if slices.Contains(nb.sources(), "df.plot()") || !strings.Contains(del.Diff, "- df.plot()") {
		t.Fatalf("delete: %q, %q", nb.sources(), del.Diff)
	}
	for _, tt := range []struct{ tool, input, want string }{
		{ToolNotebookEdit, `{"id": "nope", "source": "x"}`, "no such cell"},
		{ToolNotebookDelete, `{"index": 99}`, "the notebook has 5 cells"},
		{ToolNotebookEdit, `{"id": "aaaa0002", "search": "not there", "replace": "x"}`, "search text not found"},
		{ToolNotebookEdit, `{"id": "aaaa0002"}`, "give source"},
		{ToolNotebookInsert, `{"source": "x", "type": "raw"}`, "want one of code, markdown"},
		{ToolNotebookEdit, `{"id": "aaaa0002", "source": "x", "search": "df", "replace": "y"}`, "not both"},
		{ToolNotebookEdit, `{"id": "aaaa0002", "type": "python"}`, "want one of code, markdown"},
		{ToolNotebookMove, `{"id": "aaaa0002"}`, "give to"},
	} {
		if _, err := run(t, tb, tt.tool, tt.input); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %s: %v, want %q", tt.tool, tt.input, err, tt.want)
		}
	}
	// No notebook: the tools are not offered, and a call says why.
	var none Notebook
	tb = testToolbox(t, ToolboxOptions{Notebook: func() Notebook { return none }})
	for _, pt := range tb.Tools(context.Background()) {
		if IsNotebookTool(pt.Name) {
			t.Errorf("%s offered with no notebook", pt.Name)
		}
	}
	if _, err := run(t, tb, ToolNotebookRead, `{}`); err == nil || !strings.Contains(err.Error(), "no notebook is open") {
		t.Errorf("read with no notebook: %v", err)
	}
}

// TestNotebookReadIsBounded: a notebook of 2,000 cells, one with 10 MB of
// output, is read within the token budget, saying how to read on.
func TestNotebookReadIsBounded(t *testing.T) {
	nb := &memNotebook{}
	for i := range 2000 {
		c := NotebookCell{ID: fmt.Sprintf("c%05d", i), Kind: CodeCell, Source: fmt.Sprintf("x%d = %d", i, i)}
		if i == 3 {
			c.Outputs = []CellOutput{{Type: "stream", Text: strings.Repeat("y", 10<<20)}}
		}
		nb.cells = append(nb.cells, c)
	}
	tb := testToolbox(t, ToolboxOptions{Notebook: func() Notebook { return nb }})
	res := mustRun(t, tb, ToolNotebookRead, `{"max_tokens": 2000}`)
	if len(res.Text) > 2000*4+500 || !strings.Contains(res.Text, "more cells not shown: read with start=") ||
		!strings.Contains(res.Text, "more characters of this output") {
		t.Fatalf("a 2,000-cell read: %d characters:\n%.600s", len(res.Text), res.Text)
	}
	res = mustRun(t, tb, ToolNotebookRead, `{"start": 1990}`)
	if !strings.Contains(res.Text, "[1999] id=c01999") || strings.Contains(res.Text, "[1989]") {
		t.Fatalf("read from 1990:\n%s", res.Text)
	}
	// One cell by id: its output to the budget, not a page's share.
	res = mustRun(t, tb, ToolNotebookRead, `{"id": "c00003"}`)
	if !strings.Contains(res.Text, "[3] id=c00003 code") || strings.Contains(res.Text, "[4]") || strings.Count(res.Text, "y") < 30000 {
		t.Fatalf("read of one cell: %d characters:\n%.300s", len(res.Text), res.Text)
	}
	if _, err := run(t, tb, ToolNotebookRead, `{"id": "nope"}`); err == nil || !strings.Contains(err.Error(), "no such cell") {
		t.Errorf("read of an unknown cell: %v", err)
	}
}

// rangeNotebook reads ranges itself, as the frontend's comm does: only the
// cells that fit come back.
type rangeNotebook struct {
	*memNotebook
	asked []ReadRange
}

func (r *rangeNotebook) ReadRange(ctx context.Context, rr ReadRange) (NotebookView, error) {
	r.asked = append(r.asked, rr)
	v, err := r.Read(ctx, rr.MaxOutput)
	return PartOf(v, rr), err
}

// TestNotebookReadRange: a Notebook that reads ranges is asked for the
// tool's range and budget, and the part it gives is told with the
// notebook's count, the user's cell's index and how to read on.
func TestNotebookReadRange(t *testing.T) {
	nb := &rangeNotebook{memNotebook: &memNotebook{}}
	for i := range 2000 {
		nb.cells = append(nb.cells, NotebookCell{ID: fmt.Sprintf("c%05d", i), Kind: CodeCell, Source: fmt.Sprintf("x%d = %d", i, i),
			Outputs: []CellOutput{{Type: "stream", Text: strings.Repeat("y", 2000)}}})
	}
	nb.active = "c01500"
	tb := testToolbox(t, ToolboxOptions{Notebook: func() Notebook { return nb }})
	res := mustRun(t, tb, ToolNotebookRead, `{"start": 10, "max_tokens": 1000}`)
	if len(nb.asked) != 1 || nb.asked[0] != (ReadRange{Start: 10, MaxChars: 4000, MaxOutput: 2000}) {
		t.Fatalf("asked %+v", nb.asked)
	}
	for _, want := range []string{"2000 cells (cells 10 to 1999 shown)", "cell c01500 (index 1500)", "[10] id=c00010",
		"more cells not shown: read with start=1"} {
		if !strings.Contains(res.Text, want) {
			t.Fatalf("no %q in:\n%s", want, res.Text)
		}
	}
	if strings.Contains(res.Text, "[9]") || len(res.Text) > 4000+500 {
		t.Fatalf("read from 10, 1000 tokens: %d characters:\n%s", len(res.Text), res.Text)
	}
	res = mustRun(t, tb, ToolNotebookRead, `{"start": 5, "end": 7}`)
	if !strings.Contains(res.Text, "[6] id=c00006") || strings.Contains(res.Text, "[7]") || strings.Contains(res.Text, "not shown") {
		t.Fatalf("read 5 to 7:\n%s", res.Text)
	}
}

// BenchmarkNotebookRead is notebook_read of a 2,000-cell notebook, each
// cell with an output of 2,000 characters (the browser test's big.ipynb),
// with the default budget: the cells bounded and written for the model,
// from a Notebook in memory (the frontend's round trip is bridge's
// BenchmarkNotebookCommRead). The goal is 30 ms.
//
//	go test -run NONE -bench NotebookRead ./agent
func BenchmarkNotebookRead(b *testing.B) {
	nb := &memNotebook{}
	out := strings.Repeat("x", 1999) + "\n"
	for i := range 2000 {
		nb.cells = append(nb.cells, NotebookCell{ID: fmt.Sprintf("big%d", i), Kind: CodeCell, Source: fmt.Sprintf("v%d = %d  # cell %d", i, i, i),
			ExecutionCount: i + 1, Outputs: []CellOutput{{Type: "stream", Text: out}}})
	}
	ws, err := NewWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	tb, err := NewToolbox(ToolboxOptions{Workspace: ws, Notebook: func() Notebook { return nb }})
	if err != nil {
		b.Fatal(err)
	}
	tool, _ := tb.Lookup(ToolNotebookRead)
	for b.Loop() {
		res, err := tool.Execute(context.Background(), json.RawMessage(`{}`))
		if err != nil || !strings.Contains(res.Text, "more cells not shown") {
			b.Fatalf("read: %v\n%.300s", err, res.Text)
		}
	}
}

// TestNotebookPermissions: in the default mode inserting and moving cells
// are allowed; changing or deleting a user's cell asks, with the change
// shown per cell, while the agent's own cell (unchanged since) does not;
// plan mode offers the reading tool only; running a cell is asked as code.
func TestNotebookPermissions(t *testing.T) {
	nb := userNotebook()
	tb := testToolbox(t, ToolboxOptions{Notebook: func() Notebook { return nb }})
	p, err := NewPolicy(tb, PolicyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	call := func(name, input string) provider.ToolCall {
		return provider.ToolCall{ID: "c", Name: name, Input: json.RawMessage(input)}
	}
	for _, tt := range []struct {
		name, input string
		want        Verdict
	}{
		{ToolNotebookRead, `{}`, Allow},
		{ToolNotebookInsert, `{"source": "x"}`, Allow},
		{ToolNotebookMove, `{"id": "aaaa0002", "to": 0}`, Allow},
		{ToolNotebookEdit, `{"id": "aaaa0002", "source": "x"}`, Ask},
		{ToolNotebookDelete, `{"id": "aaaa0002"}`, Ask},
		{ToolNotebookRun, `{"id": "aaaa0002", "code": "df = pd.read_csv('sales.csv')"}`, Ask},
	} {
		if d := p.Decide(call(tt.name, tt.input)); d.Verdict != tt.want {
			t.Errorf("%s: %v (%s), want %v", tt.name, d.Verdict, d.Reason, tt.want)
		}
	}
	// A run whose call was not checked has no code to screen: refused,
	// whatever the mode.
	if err := p.SetPermissionMode(PermissionBypass); err != nil {
		t.Fatal(err)
	}
	if d := p.Decide(call(ToolNotebookRun, `{"id": "aaaa0002"}`)); d.Verdict != Deny || !d.Hard {
		t.Errorf("an unchecked run in bypass mode: %v (%s)", d.Verdict, d.Reason)
	}
	if err := p.SetPermissionMode(PermissionDefault); err != nil {
		t.Fatal(err)
	}
	// The review: a user's cell, with its diff; the agent's own, not asked.
	rv := checkedReview(t, tb, ToolNotebookEdit, `{"index": 1, "search": "sales.csv", "replace": "sales-2026.csv"}`)
	if rv.own || !strings.Contains(rv.diff, "cell aaaa0002") || !strings.Contains(rv.diff, "- df = pd.read_csv('sales.csv')") ||
		!strings.Contains(rv.diff, "+ df = pd.read_csv('sales-2026.csv')") {
		t.Errorf("review of a user's cell: own %v, diff %q", rv.own, rv.diff)
	}
	ins := mustRun(t, tb, ToolNotebookInsert, `{"source": "df.head()"}`)
	id := strings.Fields(strings.TrimPrefix(ins.Text, "Inserted code cell "))[0]
	if rv := checkedReview(t, tb, ToolNotebookEdit, `{"id": "`+id+`", "source": "df.tail()"}`); !rv.own {
		t.Error("the agent's own cell is reviewed as the user's")
	}
	// The user changes it: it is theirs again.
	if _, err := nb.SetSource(context.Background(), id, "df.head(20)"); err != nil {
		t.Fatal(err)
	}
	if rv := checkedReview(t, tb, ToolNotebookEdit, `{"id": "`+id+`", "source": "df.tail()"}`); rv.own {
		t.Error("a cell the user changed after the agent is still the agent's")
	}
	if err := p.SetPermissionMode(PermissionPlan); err != nil {
		t.Fatal(err)
	}
	for name, input := range map[string]string{ToolNotebookInsert: `{"source": "x"}`, ToolNotebookEdit: `{"id": "aaaa0002", "source": "x"}`,
		ToolNotebookRun: `{"id": "aaaa0002"}`} {
		if d := p.Decide(call(name, input)); d.Verdict != Deny {
			t.Errorf("plan mode %s: %v (%s)", name, d.Verdict, d.Reason)
		}
	}
	if d := p.Decide(call(ToolNotebookRead, `{}`)); d.Verdict != Allow {
		t.Errorf("plan mode read: %v", d.Verdict)
	}
	if !errors.Is(fmt.Errorf("x: %w", ErrNoCell), ErrNoCell) {
		t.Fatal("ErrNoCell does not wrap")
	}
}

// checkedReview is the review of a notebook call, checked as a task
// checks it before deciding.
func checkedReview(t *testing.T, tb *Toolbox, name, input string) review {
	t.Helper()
	tool, _ := tb.Lookup(name)
	_, rv, err := tb.checkCall(context.Background(), tool, provider.ToolCall{ID: "c", Name: name, Input: json.RawMessage(input)})
	if err != nil {
		t.Fatalf("check %s %s: %v", name, input, err)
	}
	return rv
}

// TestNotebookPromptMode: in a prompt-mode notebook (a bare code cell is
// a request to the agent) a code cell the agent writes starts with a
// %%code line — inserted, given back by a whole edit, proposed — unless it
// says itself what it is; a run runs the code without the line and refuses
// a request; the tools' descriptions say so, and only in prompt mode. In
// code mode a %%agent cell and an %agent command are not run either.
func TestNotebookPromptMode(t *testing.T) {
	nb := &memNotebook{prompt: true, cells: []NotebookCell{
		{ID: "md000001", Kind: MarkdownCell, Source: "# Sales"},
		{ID: "ask00001", Kind: CodeCell, Source: "Plot the sales by month"},
		{ID: "code0001", Kind: CodeCell, Source: "%%code\nx = 1"},
	}}
	tb := testToolbox(t, ToolboxOptions{Notebook: func() Notebook { return nb }, PromptCells: true})
	ins := mustRun(t, tb, ToolNotebookInsert, `{"source": "df.describe()", "index": 3}`)
	mustRun(t, tb, ToolNotebookInsert, `{"source": "%%code\ny = 2", "index": 4}`)
	mustRun(t, tb, ToolNotebookInsert, `{"source": "## Notes", "type": "markdown", "index": 5}`)
	mustRun(t, tb, ToolNotebookInsert, `{"source": "%%agent\nSummarize the table", "index": 6}`)
	if got := nb.sources()[3:]; !slices.Equal(got, []string{"%%code\ndf.describe()", "%%code\ny = 2", "## Notes", "%%agent\nSummarize the table"}) {
		t.Fatalf("inserted %q", got)
	}
	if !strings.Contains(ins.Text, "Its first line is %%code") {
		t.Errorf("the model is not told of the line it did not write: %s", ins.Text)
	}
	mustRun(t, tb, ToolNotebookEdit, `{"id": "code0001", "source": "x = 2"}`)
	mustRun(t, tb, ToolNotebookEdit, `{"id": "ask00001", "source": "Plot the sales by week"}`)
	mustRun(t, tb, ToolNotebookEdit, `{"id": "code0001", "search": "x = 2", "replace": "x = 3"}`)
	if got := nb.sources()[1:3]; !slices.Equal(got, []string{"Plot the sales by week", "%%code\nx = 3"}) {
		t.Fatalf("edited %q", got)
	}
	mustRun(t, tb, ToolNotebookRun, `{"id": "code0001"}`)
	if !slices.Equal(nb.ran, []string{"x = 3"}) {
		t.Fatalf("ran %q, want the code without its %%%%code line", nb.ran)
	}
	for _, id := range []string{"ask00001", "md000001"} {
		if _, err := run(t, tb, ToolNotebookRun, `{"id": "`+id+`"}`); err == nil || len(nb.ran) != 1 {
			t.Errorf("run of %s: %v, ran %q", id, err, nb.ran)
		}
	}
	if _, err := run(t, tb, ToolNotebookRun, `{"id": "ask00001"}`); err == nil || !strings.Contains(err.Error(), "request to the agent") {
		t.Errorf("a request run: %v", err)
	}
	if res := mustRun(t, tb, ToolProposeCell, `{"code": "df.plot()"}`); res.SetNextInput != "%%code\ndf.plot()" {
		t.Errorf("proposed %q", res.SetNextInput)
	}
	for _, pt := range tb.Tools(context.Background()) {
		if IsNotebookTool(pt.Name) && pt.Name != ToolNotebookMove && pt.Name != ToolNotebookDelete && !strings.Contains(pt.Description, "%%code") {
			t.Errorf("%s does not say what %%%%code means here: %s", pt.Name, pt.Description)
		}
	}

	// Code mode: the descriptions are as ever; requests and commands are
	// not run, %%code is no line of ours.
	nb = &memNotebook{cells: []NotebookCell{
		{ID: "ask00001", Kind: CodeCell, Source: "%%agent\nPlot the sales"},
		{ID: "cmd00001", Kind: CodeCell, Source: "%agent model openai:gpt-5"},
		{ID: "code0001", Kind: CodeCell, Source: "x = 1"},
	}}
	tb = testToolbox(t, ToolboxOptions{Notebook: func() Notebook { return nb }})
	for _, pt := range tb.Tools(context.Background()) {
		if strings.Contains(pt.Description, "%%code") {
			t.Errorf("code mode's %s speaks of %%%%code: %s", pt.Name, pt.Description)
		}
	}
	for id, want := range map[string]string{"ask00001": "request to the agent (a %%agent cell)", "cmd00001": "%agent command"} {
		if _, err := run(t, tb, ToolNotebookRun, `{"id": "`+id+`"}`); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("run of %s: %v, want %q", id, err, want)
		}
	}
	mustRun(t, tb, ToolNotebookInsert, `{"source": "y = 2"}`)
	mustRun(t, tb, ToolNotebookRun, `{"id": "code0001"}`)
	if got := nb.sources()[3]; got != "y = 2" || !slices.Equal(nb.ran, []string{"x = 1"}) {
		t.Errorf("code mode: inserted %q, ran %q", got, nb.ran)
	}
	if res := mustRun(t, tb, ToolProposeCell, `{"code": "df.plot()"}`); res.SetNextInput != "df.plot()" {
		t.Errorf("code mode proposed %q", res.SetNextInput)
	}
}
