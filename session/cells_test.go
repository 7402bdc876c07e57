package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// memCells is a notebook as a frontend holds it, in memory.
type memCells struct {
	path string

	mu    sync.Mutex
	cells []Cell
	n     int
	saved func() // called after each change (a frontend that saves)
}

func (m *memCells) Path() string { return m.path }

func (m *memCells) find(id string) int {
	return slices.IndexFunc(m.cells, func(c Cell) bool { return c.ID == id })
}

func (m *memCells) Read(context.Context, int) (agent.NotebookView, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := agent.NotebookView{Path: m.path}
	for _, c := range m.cells {
		v.Cells = append(v.Cells, agent.NotebookCell{ID: c.ID, Kind: c.Kind, Source: c.Source, ExecutionCount: c.ExecutionCount})
	}
	return v, nil
}

func (m *memCells) Insert(_ context.Context, index int, c Cell) (agent.NotebookCell, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if index < 0 || index > len(m.cells) {
		return agent.NotebookCell{}, fmt.Errorf("index %d", index)
	}
	m.n++
	if c.ID == "" || m.find(c.ID) >= 0 {
		c.ID = fmt.Sprintf("new%05d", m.n)
	}
	m.cells = slices.Insert(m.cells, index, c)
	if m.saved != nil {
		m.saved()
	}
	return agent.NotebookCell{ID: c.ID, Kind: c.Kind, Source: c.Source}, nil
}

func (m *memCells) SetSource(_ context.Context, id, source string) (agent.NotebookCell, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.find(id)
	if i < 0 {
		return agent.NotebookCell{}, agent.ErrNoCell
	}
	before := m.cells[i]
	m.cells[i].Source = source
	return agent.NotebookCell{ID: id, Kind: before.Kind, Source: before.Source}, nil
}

func (m *memCells) Move(_ context.Context, id string, index int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.find(id)
	if i < 0 {
		return -1, agent.ErrNoCell
	}
	c := m.cells[i]
	m.cells = slices.Insert(slices.Delete(m.cells, i, i+1), index, c)
	return i, nil
}

func (m *memCells) Delete(_ context.Context, id string) (Cell, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.find(id)
	if i < 0 {
		return Cell{}, -1, agent.ErrNoCell
	}
	c := m.cells[i]
	m.cells = slices.Delete(m.cells, i, i+1)
	return c, i, nil
}

func (m *memCells) SetOutputs(_ context.Context, id string, outputs []json.RawMessage, count int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.find(id)
	if i < 0 {
		return agent.ErrNoCell
	}
	m.cells[i].Outputs, m.cells[i].ExecutionCount = outputs, count
	return nil
}

// state is the notebook as "id:source" lines.
func (m *memCells) state() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, c := range m.cells {
		out = append(out, c.ID+":"+c.Source)
	}
	return out
}

// memFile is a memCells that stands for a file on disk.
type memFile struct {
	*memCells
	file string
}

func (f memFile) File() string { return f.file }

// fakeFrontends shows one notebook while open.
type fakeFrontends struct {
	mu   sync.Mutex
	nb   *memCells
	open bool
}

func (f *fakeFrontends) Current() Cells {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.open {
		return nil
	}
	return f.nb
}

func (f *fakeFrontends) Find(path string) Cells {
	if c := f.Current(); c != nil && c.Path() == path {
		return c
	}
	return nil
}

// promptTS is the stamp of the user's prompt text.
func promptTS(t *testing.T, h *Host, text string) int64 {
	t.Helper()
	for _, m := range h.Conversation().UI() {
		if m.Say == messages.SayUserFeedback && m.Text == text {
			return m.TS
		}
	}
	t.Fatalf("no prompt %q in the history", text)
	return 0
}

// TestRewindPutsCellsBack: a rewind turns back what the agent did to the
// cells of the notebook a frontend shows — an insert, an edit, a move and a
// delete — through the frontend, latest first, the deleted cell back with
// its id; a cell the user changed since the agent's edit is a conflict,
// kept and reported; a fork carries the cells' changes; with no frontend
// showing the notebook any more the cells are put back in its file, which
// the files' restore then leaves alone.
func TestRewindPutsCellsBack(t *testing.T) {
	srv, open := scriptedModels(t)
	ws := t.TempDir()
	nb := &memCells{path: "work.ipynb", cells: []Cell{
		{ID: "md1", Kind: agent.MarkdownCell, Source: "# Plan"},
		{ID: "code2", Kind: agent.CodeCell, Source: "old = 1"},
		{ID: "code3", Kind: agent.CodeCell, Source: "keep = 2"},
	}}
	fe := &fakeFrontends{nb: nb, open: true}
	var opened []string
	h := newHost(t, Config{Store: openStore(t), Model: "openai:m", OpenModel: open, Workspace: ws,
		OpenNotebook: func(path string) (FileCells, error) {
			opened = append(opened, path)
			return memFile{nb, path}, nil
		}})
	h.Tools().SetFrontends(fe)
	ctx := context.Background()
	yes := Follow{Approve: agent.ApproveAll.Approver()}
	original := nb.state()

	warmUp(t, h, srv)
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("i1", agent.ToolNotebookInsert, `{"source": "answer = 21", "index": 1}`)),
		scripted.Reply(scripted.ToolCall("e1", agent.ToolNotebookEdit, `{"id": "code2", "search": "1", "replace": "2"}`)),
		scripted.Reply(scripted.ToolCall("m1", agent.ToolNotebookMove, `{"id": "code3", "to": 0}`)),
		scripted.Reply(scripted.ToolCall("d1", agent.ToolNotebookDelete, `{"id": "md1"}`)),
		scripted.Reply(scripted.Text("Done.")),
	)
	if _, err := h.Submit(ctx, "reshape it", yes); err != nil {
		t.Fatal(err)
	}
	changed := nb.state()
	if slices.Equal(changed, original) || len(changed) != 3 {
		t.Fatalf("the agent's changes did not happen: %q", changed)
	}
	orig, err := h.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.World().Fork(ctx, promptTS(t, h, "reshape it"), RewindOptions{NoKernel: true}); err != nil {
		t.Fatal(err)
	}
	if got := nb.state(); !slices.Equal(got, original) {
		t.Fatalf("after the fork the cells are %q, want %q", got, original)
	}
	if _, err := h.Resume(ctx, orig.ID); err != nil {
		t.Fatal(err)
	}
	// Back to the agent's notebook, by hand, to rewind the original.
	nb.mu.Lock()
	nb.cells = nil
	for _, l := range changed {
		id, src, _ := strings.Cut(l, ":")
		nb.cells = append(nb.cells, Cell{ID: id, Kind: agent.CodeCell, Source: src})
	}
	nb.mu.Unlock()
	rw, err := h.World().Rewind(ctx, promptTS(t, h, "reshape it"), RewindOptions{NoKernel: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := nb.state(); !slices.Equal(got, original) {
		t.Fatalf("after the rewind the cells are %q, want %q", got, original)
	}
	if len(rw.Cells) != 1 || rw.Cells[0].Restored != 4 || rw.Cells[0].Where != "the frontend" || len(rw.Cells[0].Conflicts) != 0 {
		t.Fatalf("report %+v", rw.Cells)
	}
	if !strings.Contains(rw.Summary(), "Notebook work.ipynb (through the frontend): 4 cell changes turned back.") {
		t.Errorf("summary:\n%s", rw.Summary())
	}

	// A conflict: the user changes the agent's new cell after it wrote it.
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("i2", agent.ToolNotebookInsert, `{"source": "x = 1", "index": 3}`)),
		scripted.Reply(scripted.ToolCall("e2", agent.ToolNotebookEdit, `{"id": "code2", "source": "old = 3"}`)),
		scripted.Reply(scripted.Text("Done.")),
	)
	if _, err := h.Submit(ctx, "again", yes); err != nil {
		t.Fatal(err)
	}
	nb.mu.Lock()
	nb.cells[3].Source = "x = 99" // the user's
	nb.mu.Unlock()
	rw, err = h.World().Rewind(ctx, promptTS(t, h, "again"), RewindOptions{NoKernel: true})
	if err != nil {
		t.Fatal(err)
	}
	got := nb.state()
	if len(got) != 4 || got[1] != "code2:old = 1" || !strings.HasSuffix(got[3], ":x = 99") {
		t.Fatalf("after the rewind with a conflict: %q", got)
	}
	if len(rw.Cells) != 1 || rw.Cells[0].Restored != 1 || len(rw.Cells[0].Conflicts) != 1 ||
		!strings.Contains(rw.Summary(), "changed since the agent's insert") {
		t.Fatalf("report %+v\n%s", rw.Cells, rw.Summary())
	}

	// No frontend any more: the cells are put back in the file, and the
	// file's own changes are left to them.
	nb.mu.Lock()
	nb.cells = slices.Delete(nb.cells, 3, 4)
	nb.mu.Unlock()
	file := filepath.Join(ws, "work.ipynb")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	nb.saved = func() { // the frontend saves the notebook as the agent changes it
		if err := os.WriteFile(file, []byte(`{"saved": true}`), 0o644); err != nil {
			t.Error(err)
		}
	}
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("i3", agent.ToolNotebookInsert, `{"source": "y = 1", "index": 0}`)),
		scripted.Reply(scripted.Text("Done.")),
	)
	if _, err := h.Submit(ctx, "once more", yes); err != nil {
		t.Fatal(err)
	}
	nb.saved = nil
	fe.mu.Lock()
	fe.open = false
	fe.mu.Unlock()
	rw, err = h.World().Rewind(ctx, promptTS(t, h, "once more"), RewindOptions{NoKernel: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := nb.state(); !slices.Equal(got, original) {
		t.Fatalf("after the rewind through the file the cells are %q, want %q", got, original)
	}
	if want := filepath.Join(ws, "work.ipynb"); len(opened) != 1 || opened[0] != want || len(rw.Cells) != 1 || rw.Cells[0].Where != want {
		t.Fatalf("opened %q, report %+v", opened, rw.Cells)
	}
	if b, _ := os.ReadFile(file); string(b) != `{"saved": true}` || rw.Files != nil {
		t.Errorf("the files' restore turned the notebook's file back to %q (%+v)", b, rw.Files)
	}
}

// TestEditChangesACellsType: notebook_edit_cell with a type makes a code
// cell markdown with its id and place kept, and a rewind makes it code
// again, as it was.
func TestEditChangesACellsType(t *testing.T) {
	srv, open := scriptedModels(t)
	nb := &memCells{path: "work.ipynb", cells: []Cell{
		{ID: "a", Kind: agent.CodeCell, Source: "x = 1"},
		{ID: "note", Kind: agent.CodeCell, Source: "Explain the data"},
		{ID: "c", Kind: agent.CodeCell, Source: "y = 2"},
	}}
	h := newHost(t, Config{Store: openStore(t), Model: "openai:m", OpenModel: open, Workspace: t.TempDir()})
	h.Tools().SetFrontends(&fakeFrontends{nb: nb, open: true})
	ctx := context.Background()
	warmUp(t, h, srv)
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("e1", agent.ToolNotebookEdit, `{"id": "note", "type": "markdown", "source": "## About the data"}`)),
		scripted.Reply(scripted.Text("Done.")),
	)
	if _, err := h.Submit(ctx, "make it a heading", Follow{Approve: agent.ApproveAll.Approver()}); err != nil {
		t.Fatal(err)
	}
	nb.mu.Lock()
	got := nb.cells[1]
	nb.mu.Unlock()
	if got.ID != "note" || got.Kind != agent.MarkdownCell || got.Source != "## About the data" {
		t.Fatalf("the cell is %+v", got)
	}
	if _, err := h.World().Rewind(ctx, promptTS(t, h, "make it a heading"), RewindOptions{NoKernel: true}); err != nil {
		t.Fatal(err)
	}
	nb.mu.Lock()
	got = nb.cells[1]
	n := len(nb.cells)
	nb.mu.Unlock()
	if n != 3 || got.ID != "note" || got.Kind != agent.CodeCell || got.Source != "Explain the data" {
		t.Fatalf("after the rewind the cell is %+v (%d cells)", got, n)
	}
}

// TestRewindTurnsBackANotebookFile: the cells of a notebook that is only
// a file (FileCells: no frontend shows it) are the file checkpoints': a
// notebook tool's change of the file is recorded as the step's (the file
// alone is read around the call), and a rewind puts the file back.
func TestRewindTurnsBackANotebookFile(t *testing.T) {
	srv, open := scriptedModels(t)
	ws := t.TempDir()
	file := filepath.Join(ws, "work.ipynb")
	nb := &memCells{path: "work.ipynb", cells: []Cell{{ID: "code1", Kind: agent.CodeCell, Source: "x = 1"}}}
	write := func() { // under nb.mu, as saved is called
		var lines []string
		for _, c := range nb.cells {
			lines = append(lines, c.ID+":"+c.Source)
		}
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Error(err)
		}
	}
	nb.mu.Lock()
	write()
	nb.mu.Unlock()
	original, _ := os.ReadFile(file)
	nb.saved = write // the file is written at each change
	h := newHost(t, Config{Store: openStore(t), Model: "openai:m", OpenModel: open, Workspace: ws,
		Cells: func() Cells { return memFile{nb, file} }})
	ctx := context.Background()
	warmUp(t, h, srv)
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("i1", agent.ToolNotebookInsert, `{"source": "y = 2", "index": 1}`)),
		scripted.Reply(scripted.ToolCall("e1", agent.ToolNotebookEdit, `{"id": "code1", "source": "x = 3"}`)),
		scripted.Reply(scripted.Text("Done.")),
	)
	if _, err := h.Submit(ctx, "change it", Follow{Approve: agent.ApproveAll.Approver()}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) == string(original) {
		t.Fatalf("the agent's changes did not reach the file: %q", b)
	}
	nb.saved = nil
	rw, err := h.World().Rewind(ctx, promptTS(t, h, "change it"), RewindOptions{NoKernel: true})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != string(original) {
		t.Fatalf("after the rewind the file is %q, want %q (%s)", b, original, rw.Summary())
	}
}
