package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/internal/nbcomm"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/surface/webview/paneltest"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// fakeFrontend is a frontend's notebook behind the notebook comm: it
// answers the kernel's requests on its model, as the JupyterLab extension
// does; hang makes it stop answering.
type fakeFrontend struct {
	c  *client.Client
	id string

	mu    sync.Mutex
	cells []nbcomm.Cell
	ops   []string
	hang  bool
	n     int
	// ranges: reads with max_chars are answered as the extension does
	// (the cells that fit, and the count); else every cell, as an older
	// extension does.
	ranges bool
	// mirror: the frontend speaks the mirror capability, as the extension
	// does: a snapshot after comm_open, then a change (with the next
	// version) for each change of its cells, a write's before its reply,
	// which carries the version. typing are the cells the user types in:
	// a write to one is refused as a conflict.
	mirror  bool
	version int64
	typing  map[string]bool
}

// reads is the number of reads the frontend was asked for.
func (f *fakeFrontend) reads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, op := range f.ops {
		if op == "read" {
			n++
		}
	}
	return n
}

// send sends data on the comm, as a comm_msg of the frontend's.
func (f *fakeFrontend) send(data any) error {
	return f.c.Send(context.Background(), client.Request{MsgType: wire.MsgCommMsg, Content: map[string]any{"comm_id": f.id, "data": data}})
}

// userEdit is the user changing cell id's source in the page: with the
// mirror, its change goes to the kernel (gap: the version skips one, as
// a lost change would).
func (f *fakeFrontend) userEdit(t testing.TB, id, source string, gap bool) {
	t.Helper()
	f.mu.Lock()
	var cell nbcomm.Cell
	for i := range f.cells {
		if f.cells[i].ID == id {
			f.cells[i].Source = source
			cell = f.cells[i]
		}
	}
	f.version++
	if gap {
		f.version++
	}
	ch := nbcomm.Changes{Version: f.version, Cells: []nbcomm.MirrorCell{{Cell: cell}}}
	f.mu.Unlock()
	if err := f.send(map[string]any{"changes": ch}); err != nil {
		t.Fatal(err)
	}
}

// changeOf is the change a write (op, with the cell it touched) made, as
// the extension sends it; f.mu is held.
func (f *fakeFrontend) changeOf(op, touched string) nbcomm.Changes {
	f.version++
	ch := nbcomm.Changes{Version: f.version}
	if op == "insert" || op == "move" || op == "delete" {
		ch.Order = []string{}
		for _, c := range f.cells {
			ch.Order = append(ch.Order, c.ID)
		}
	}
	for _, c := range f.cells {
		if c.ID == touched && op != "move" {
			ch.Cells = append(ch.Cells, nbcomm.MirrorCell{Cell: c})
		}
	}
	return ch
}

func (f *fakeFrontend) iopub(m *wire.Message) {
	if m.Header.MsgType != wire.MsgCommMsg {
		return
	}
	var c struct {
		CommID string `json:"comm_id"`
		Data   struct {
			Request *struct {
				ID   string          `json:"id"`
				Op   string          `json:"op"`
				Args json.RawMessage `json:"args"`
			} `json:"request"`
			Resync bool `json:"resync"`
		} `json:"data"`
	}
	if json.Unmarshal(m.Content, &c) != nil || c.CommID != f.id {
		return
	}
	if c.Data.Resync && f.mirror {
		f.mu.Lock()
		f.ops = append(f.ops, "resync")
		f.mu.Unlock()
		go func() { _ = f.sendSnapshot() }()
		return
	}
	if c.Data.Request == nil {
		return
	}
	req := c.Data.Request
	f.mu.Lock()
	f.ops = append(f.ops, req.Op)
	hang := f.hang
	f.mu.Unlock()
	if hang {
		return
	}
	result, code, err := f.apply(req.Op, req.Args)
	reply := map[string]any{"id": req.ID, "ok": err == nil, "result": result}
	if err != nil {
		reply["error"], reply["code"] = err.Error(), code
	}
	var change *nbcomm.Changes
	if f.mirror {
		f.mu.Lock()
		if err == nil && req.Op != "read" {
			var a nbcomm.Args
			_ = json.Unmarshal(req.Args, &a)
			touched := a.ID
			if r, ok := result.(map[string]any); ok && req.Op == "insert" {
				touched = r["cell"].(nbcomm.Cell).ID
			}
			ch := f.changeOf(req.Op, touched)
			change = &ch
		}
		reply["version"] = f.version
		f.mu.Unlock()
	}
	data := map[string]any{"reply": reply}
	if change != nil {
		data["changes"] = change // with the reply, as the page sends it
	}
	go func() { _ = f.send(data) }()
}

// connect makes f a frontend of the kernel at conn, showing the notebook
// path: it dials and opens the notebook comm.
func (f *fakeFrontend) connect(ctx context.Context, t testing.TB, conn *wire.ConnectionInfo, path string) *client.Client {
	t.Helper()
	c, err := client.Dial(ctx, conn, client.Options{Logger: logger(), OnIOPub: f.iopub})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	open := map[string]any{"protocol": 1, "path": path}
	if f.mirror {
		open["mirror"] = nbcomm.Mirror
	}
	if err := c.Send(ctx, client.Request{MsgType: wire.MsgCommOpen, Content: map[string]any{
		"comm_id": f.id, "target_name": NotebookTarget, "data": open}}); err != nil {
		c.Close()
		t.Fatal(err)
	}
	if f.mirror {
		if err := f.sendSnapshot(); err != nil {
			c.Close()
			t.Fatal(err)
		}
	}
	return c
}

// sendSnapshot sends the kernel the frontend's notebook whole.
func (f *fakeFrontend) sendSnapshot() error {
	f.mu.Lock()
	s := nbcomm.Snapshot{Version: f.version, Cells: []nbcomm.MirrorCell{}}
	for _, c := range f.cells {
		s.Cells = append(s.Cells, nbcomm.MirrorCell{Cell: c})
	}
	f.mu.Unlock()
	return f.send(map[string]any{"snapshot": s})
}

func (f *fakeFrontend) apply(op string, raw json.RawMessage) (any, string, error) {
	var a struct {
		ID       string            `json:"id"`
		Index    int               `json:"index"`
		CellType string            `json:"cell_type"`
		Source   string            `json:"source"`
		Outputs  []json.RawMessage `json:"outputs"`
		Count    *int              `json:"execution_count"`
		Start    int               `json:"start"`
		End      int               `json:"end"`
		MaxChars int               `json:"max_chars"`
	}
	_ = json.Unmarshal(raw, &a)
	f.mu.Lock()
	defer f.mu.Unlock()
	find := func() int {
		for i, c := range f.cells {
			if c.ID == a.ID {
				return i
			}
		}
		return -1
	}
	switch op {
	case "read":
		if !f.ranges || a.MaxChars <= 0 {
			return map[string]any{"path": "work.ipynb", "active": f.cells[0].ID, "cells": f.cells}, "", nil
		}
		start, end := min(a.Start, len(f.cells)), len(f.cells)
		if a.End > 0 {
			end = max(start, min(a.End, end))
		}
		cells, used := []nbcomm.Cell{}, 0
		for i := start; i < end; i++ {
			used += len(f.cells[i].Source)
			for _, o := range f.cells[i].Outputs {
				used += len(o)
			}
			if i > start && used > a.MaxChars {
				break
			}
			cells = append(cells, f.cells[i])
		}
		return map[string]any{"path": "work.ipynb", "active": f.cells[0].ID, "cells": cells,
			"start": start, "count": len(f.cells), "active_index": 0}, "", nil
	case "insert":
		f.n++
		c := nbcomm.Cell{ID: a.ID, CellType: a.CellType, Source: a.Source, Outputs: a.Outputs, ExecutionCount: a.Count}
		if c.ID == "" || find() >= 0 {
			c.ID = fmt.Sprintf("fe%06d", f.n)
		}
		f.cells = slices.Insert(f.cells, a.Index, c)
		return map[string]any{"cell": c}, "", nil
	}
	i := find()
	if i < 0 {
		return nil, "no_cell", fmt.Errorf("no cell %s", a.ID)
	}
	if f.typing[a.ID] && op != "set_outputs" {
		return nil, "conflict", fmt.Errorf("the user is typing in cell %s: not changed; try again when they stop", a.ID)
	}
	switch op {
	case "set_source":
		before := f.cells[i]
		f.cells[i].Source = a.Source
		return map[string]any{"before": before}, "", nil
	case "move":
		c := f.cells[i]
		f.cells = slices.Insert(slices.Delete(f.cells, i, i+1), a.Index, c)
		return map[string]any{"from": i}, "", nil
	case "delete":
		c := f.cells[i]
		f.cells = slices.Delete(f.cells, i, i+1)
		return map[string]any{"cell": c, "index": i}, "", nil
	case "set_outputs":
		f.cells[i].Outputs, f.cells[i].ExecutionCount = a.Outputs, a.Count
		return map[string]any{}, "", nil
	}
	return nil, "", fmt.Errorf("unknown op %q", op)
}

func (f *fakeFrontend) sources() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.cells {
		out = append(out, c.Source)
	}
	return out
}

// TestNotebookComm: a frontend that opens the notebook comm is where the
// agent's notebook tools work: the prompt cell's agent reads the
// frontend's cells, inserts (a code cell of this prompt-mode kernel under
// a %%code line), edits its own cell without asking, runs it after the
// user's yes to its code on stdin (the code alone runs; the outputs land
// in the frontend's cell) and deletes one after the user's yes, all while
// the prompt cell runs; a frontend that stops answering fails the call
// with a clear error, and the cell still ends.
func TestNotebookComm(t *testing.T) {
	h := surfacetest.NewHost(t)
	conn, stop := serveBridge(t, h, PromptCells)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fe := &fakeFrontend{id: uuid.NewString(), cells: []nbcomm.Cell{
		{ID: "user0001", CellType: "markdown", Source: "# Plan\nDouble the answer."},
		{ID: "user0002", CellType: "code", Source: "old = 1"},
	}}
	c := fe.connect(ctx, t, conn, "work.ipynb")
	defer c.Close()
	h.Script.Enqueue(
		scripted.Reply(scripted.ToolCall("r1", agent.ToolNotebookRead, `{}`)),
		scripted.Reply(scripted.ToolCall("i1", agent.ToolNotebookInsert, `{"source": "answer = 21"}`)),
		scripted.Reply(scripted.ToolCall("e1", agent.ToolNotebookEdit, `{"index": 1, "search": "21", "replace": "42"}`)),
		scripted.Reply(scripted.ToolCall("x1", agent.ToolNotebookRun, `{"index": 1}`)),
		scripted.Reply(scripted.ToolCall("d1", agent.ToolNotebookDelete, `{"id": "user0002"}`)),
		scripted.Reply(scripted.Text("Done.")),
	)
	var asked []string
	rep, err := c.Execute(ctx, "Double the answer in my notebook", client.ExecuteOptions{AllowStdin: true}, client.Handlers{
		Input: func(p string, _ bool) (string, error) { asked = append(asked, p); return "y", nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(rep.Content, &st)
	if st.Status != "ok" {
		t.Fatalf("the prompt cell: %s", rep.Content)
	}
	if got := fe.sources(); !slices.Equal(got, []string{"# Plan\nDouble the answer.", "%%code\nanswer = 42"}) {
		t.Fatalf("the frontend's cells %q", got)
	}
	if !strings.Contains(string(h.Script.Requests()[1].Raw), "Double the answer.") {
		t.Error("the markdown the agent read did not reach the model")
	}
	fe.mu.Lock()
	ran := fe.cells[1]
	fe.mu.Unlock()
	if len(ran.Outputs) != 1 || ran.ExecutionCount == nil {
		t.Errorf("the run cell in the frontend: outputs %s, count %v", ran.Outputs, ran.ExecutionCount)
	}
	if ranCode := h.Runner.Ran(); !slices.Equal(ranCode, []string{"answer = 42"}) {
		t.Errorf("the kernel ran %q", ranCode)
	}
	// Two asks: the run, with the cell's code and its id, and the delete
	// of the user's cell, with its diff; the edit of the agent's own cell
	// was not asked.
	if len(asked) != 2 || !strings.Contains(asked[0], "The agent wants to run cell fe000001 of the notebook:\n\nanswer = 42\n") ||
		!strings.Contains(asked[1], "notebook_delete_cell") || !strings.Contains(asked[1], "- old = 1") {
		t.Errorf("asks %q", asked)
	}

	// A frontend that stops answering: the call fails clearly, the turn
	// goes on, the cell ends.
	fe.mu.Lock()
	fe.hang = true
	sent := len(fe.ops)
	fe.mu.Unlock()
	h.Script.Enqueue(
		scripted.Reply(scripted.ToolCall("r2", agent.ToolNotebookRead, `{}`)),
		scripted.Reply(scripted.Text("The notebook did not answer.")),
	)
	go func() { // the frontend's tab closes while the kernel waits for its read
		for {
			fe.mu.Lock()
			n := len(fe.ops)
			fe.mu.Unlock()
			if n > sent || ctx.Err() != nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		c.Send(context.Background(), client.Request{MsgType: wire.MsgCommClose, Content: map[string]any{"comm_id": fe.id, "data": map[string]any{}}})
	}()
	if _, err := c.Execute(ctx, "Read it again", client.ExecuteOptions{}, client.Handlers{}); err != nil {
		t.Fatal(err)
	}
	last, _ := h.Script.Last()
	if !strings.Contains(string(last.Raw), "frontend has gone away") {
		t.Errorf("the model was not told the frontend went away: %s", last.Raw)
	}
}

// TestNotebookRunAskedInThePanel: with the Agent sidebar open, a run of a
// cell is asked in the panel as code is: the ask's frame carries the
// cell's code (and the stored ask names the cell), and what was approved
// is what the kernel runs.
func TestNotebookRunAskedInThePanel(t *testing.T) {
	h := surfacetest.NewHost(t)
	br, conn, stop := serveBridgeOf(t, h.Host, h.Runner, CodeCells)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fe := &fakeFrontend{id: uuid.NewString(), cells: []nbcomm.Cell{{ID: "user0001", CellType: "code", Source: "total = 6 * 7\nprint(total)"}}}
	c := fe.connect(ctx, t, conn, "work.ipynb")
	defer c.Close()
	openedNotebook(t, br)
	panel, err := paneltest.Surface(ctx, func(ctx context.Context) (paneltest.Conn, error) { return dialComm(ctx, conn) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer panel.Close()
	h.Script.Enqueue(
		scripted.Reply(scripted.ToolCall("x1", agent.ToolNotebookRun, `{"id": "user0001"}`)),
		scripted.Reply(scripted.Text("It printed 42.")),
	)
	turn, err := panel.Prompt(ctx, "Run my cell")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(turn.Asked, []string{"total = 6 * 7\nprint(total)"}) {
		t.Fatalf("the panel was asked %q", turn.Asked)
	}
	if ran := h.Runner.Ran(); !slices.Equal(ran, []string{"total = 6 * 7\nprint(total)"}) {
		t.Fatalf("the kernel ran %q", ran)
	}
	var cells []string
	for _, m := range h.Conversation().UI() {
		if m.Type == messages.TypeAsk && m.Ask == messages.AskCommand {
			cells = append(cells, m.Cell)
		}
	}
	if !slices.Equal(cells, []string{"user0001"}) {
		t.Errorf("the stored asks name the cells %q", cells)
	}
}

// TestNotebookCommRewind: a rewind puts the frontend's cells back through
// the comm — the deleted cell at its place with its id and outputs, the
// moved one where it was, the edit undone, the inserted one gone.
func TestNotebookCommRewind(t *testing.T) {
	h := surfacetest.NewHost(t)
	conn, stop := serveBridge(t, h, PromptCells)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	count := 3
	fe := &fakeFrontend{id: uuid.NewString(), cells: []nbcomm.Cell{
		{ID: "user0001", CellType: "markdown", Source: "# Plan"},
		{ID: "user0002", CellType: "code", Source: "old = 1", ExecutionCount: &count, Outputs: []json.RawMessage{
			json.RawMessage(`{"output_type":"stream","name":"stdout","text":"hi\n"}`)}},
		{ID: "user0003", CellType: "code", Source: "keep = 2"},
	}}
	c := fe.connect(ctx, t, conn, "work.ipynb")
	defer c.Close()
	h.Script.Enqueue(
		scripted.Reply(scripted.ToolCall("i1", agent.ToolNotebookInsert, `{"source": "answer = 21", "index": 0}`)),
		scripted.Reply(scripted.ToolCall("e1", agent.ToolNotebookEdit, `{"id": "user0003", "source": "keep = 3"}`)),
		scripted.Reply(scripted.ToolCall("m1", agent.ToolNotebookMove, `{"id": "user0003", "to": 0}`)),
		scripted.Reply(scripted.ToolCall("d1", agent.ToolNotebookDelete, `{"id": "user0002"}`)),
		scripted.Reply(scripted.Text("Done.")),
	)
	before := fe.sources()
	if _, err := c.Execute(ctx, "Reshape my notebook", client.ExecuteOptions{AllowStdin: true}, client.Handlers{
		Input: func(string, bool) (string, error) { return "y", nil },
	}); err != nil {
		t.Fatal(err)
	}
	if got := fe.sources(); slices.Equal(got, before) {
		t.Fatal("the agent changed nothing")
	}
	var ts int64
	for _, m := range h.Conversation().UI() {
		if m.Text == "Reshape my notebook" {
			ts = m.TS
		}
	}
	rw, err := h.World().Rewind(ctx, ts, session.RewindOptions{NoKernel: true})
	if err != nil {
		t.Fatal(err)
	}
	fe.mu.Lock()
	cells := slices.Clone(fe.cells)
	fe.mu.Unlock()
	var got []string
	for _, c := range cells {
		got = append(got, c.ID+":"+c.Source)
	}
	if want := []string{"user0001:# Plan", "user0002:old = 1", "user0003:keep = 2"}; !slices.Equal(got, want) {
		t.Fatalf("after the rewind: %q, want %q\n%s", got, want, rw.Summary())
	}
	if back := cells[1]; len(back.Outputs) != 1 || back.ExecutionCount == nil || *back.ExecutionCount != 3 {
		t.Errorf("the deleted cell came back without its outputs: %+v", back)
	}
	if len(rw.Cells) != 1 || rw.Cells[0].Restored != 4 {
		t.Errorf("report: %s", rw.Summary())
	}
}

// TestNotebookCommRewindFromPanel: a rewind asked in the panel (the
// sidebar's "rewind to here", a frame on the panel comm) puts the cells
// back through the notebook comm at once: the notebook's replies are not
// queued behind the panel's frame that waits for them.
func TestNotebookCommRewindFromPanel(t *testing.T) {
	h := surfacetest.NewHost(t)
	conn, stop := serveBridge(t, h, PromptCells)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fe := &fakeFrontend{id: uuid.NewString(), cells: []nbcomm.Cell{
		{ID: "user0001", CellType: "markdown", Source: "# Plan"},
		{ID: "user0002", CellType: "code", Source: "old = 1"},
	}}
	c := fe.connect(ctx, t, conn, "work.ipynb")
	defer c.Close()
	side, err := dialComm(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer side.Close()
	h.Script.Enqueue(
		scripted.Reply(scripted.ToolCall("i1", agent.ToolNotebookInsert, `{"source": "answer = 21", "index": 0}`)),
		scripted.Reply(scripted.Text("Done.")),
	)
	if _, err := c.Execute(ctx, "Add a cell", client.ExecuteOptions{}, client.Handlers{}); err != nil {
		t.Fatal(err)
	}
	if got := fe.sources(); len(got) != 3 {
		t.Fatalf("the agent inserted nothing: %q", got)
	}
	var ts int64
	for _, m := range h.Conversation().UI() {
		if m.Text == "Add a cell" {
			ts = m.TS
		}
	}
	frame, _ := json.Marshal(map[string]any{"type": "deleteMessage", "id": "rw1", "ts": ts, "rewind": map[string]any{"noKernel": true}})
	if err := side.Send(ctx, frame); err != nil {
		t.Fatal(err)
	}
	// Well within the notebook request's 30 s timeout.
	rctx, rcancel := context.WithTimeout(ctx, 15*time.Second)
	defer rcancel()
	for {
		f, err := side.Recv(rctx)
		if err != nil {
			t.Fatalf("no rewind report: %v (cells %q)", err, fe.sources())
		}
		var r struct {
			Type   string `json:"type"`
			Report struct {
				Summary string `json:"summary"`
			} `json:"report"`
		}
		if json.Unmarshal(f, &r) != nil || r.Type != "rewindReport" {
			continue
		}
		if got, want := fe.sources(), []string{"# Plan", "old = 1"}; !slices.Equal(got, want) {
			t.Fatalf("after the rewind: %q, want %q\n%s", got, want, r.Report.Summary)
		}
		if !strings.Contains(r.Report.Summary, "1 cell changes turned back") {
			t.Errorf("report: %s", r.Report.Summary)
		}
		return
	}
}

// TestNotebookCommReadRange: a range read gives the cells that fit from
// its start, the notebook's count and the user's cell's index, whether the
// frontend sends only those cells (the extension) or every cell (an older
// one: the kernel bounds them).
func TestNotebookCommReadRange(t *testing.T) {
	for _, ranges := range []bool{true, false} {
		t.Run(fmt.Sprint("ranges=", ranges), func(t *testing.T) {
			h := surfacetest.NewHost(t)
			br, conn, stop := serveBridgeOf(t, h.Host, h.Runner, PromptCells)
			defer stop()
			ctx := context.Background()
			fe := &fakeFrontend{id: uuid.NewString(), ranges: ranges}
			for i := range 50 {
				fe.cells = append(fe.cells, nbcomm.Cell{ID: fmt.Sprintf("c%d", i), CellType: "code", Source: strings.Repeat("x", 100),
					Outputs: []json.RawMessage{}})
			}
			c := fe.connect(ctx, t, conn, "work.ipynb")
			defer c.Close()
			nb := openedNotebook(t, br)
			v, err := nb.(agent.RangeReader).ReadRange(ctx, agent.ReadRange{Start: 10, MaxChars: 350, MaxOutput: 100})
			if err != nil {
				t.Fatal(err)
			}
			if !v.Part || v.Start != 10 || v.Count != 50 || v.ActiveIndex != 0 || len(v.Cells) != 3 || v.Cells[0].ID != "c10" {
				t.Fatalf("read from 10: part %v start %d count %d active %d, %d cells", v.Part, v.Start, v.Count, v.ActiveIndex, len(v.Cells))
			}
		})
	}
}

// openedNotebook waits for the notebook comm a frontend opened on br.
func openedNotebook(t testing.TB, br *Bridge) session.Cells {
	t.Helper()
	var nb session.Cells
	for deadline := time.Now().Add(time.Minute); nb == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		nb = br.notebooks.Current()
	}
	if nb == nil {
		t.Fatal("the frontend's notebook comm did not open")
	}
	return nb
}

// TestFocusReachesTheModel: the page's focus messages (the cell the user
// is in, the text selected there) reach the model in the context block of
// the next prompt, the last one said; the prompt asks the page nothing.
func TestFocusReachesTheModel(t *testing.T) {
	h := surfacetest.NewHost(t)
	conn, stop := serveBridge(t, h, PromptCells)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fe := &fakeFrontend{id: uuid.NewString(), cells: []nbcomm.Cell{
		{ID: "user0001", CellType: "markdown", Source: "# Plan"},
		{ID: "user0002", CellType: "code", Source: "total = price * qty"},
	}}
	c := fe.connect(ctx, t, conn, "work.ipynb")
	defer c.Close()
	focus := func(active, selection string) {
		t.Helper()
		if err := c.Send(ctx, client.Request{MsgType: wire.MsgCommMsg, Content: map[string]any{
			"comm_id": fe.id, "data": map[string]any{"focus": map[string]string{"active": active, "selection": selection}}}}); err != nil {
			t.Fatal(err)
		}
	}
	prompt := func(text string) string {
		t.Helper()
		h.Script.Enqueue(scripted.Reply(scripted.Text("Seen.")))
		if _, err := c.Execute(ctx, text, client.ExecuteOptions{}, client.Handlers{}); err != nil {
			t.Fatal(err)
		}
		last, _ := h.Script.Last()
		raw := string(last.Raw)
		return raw[strings.LastIndex(raw, "<notebook_context>")+1:] // this prompt's block
	}
	focus("user0001", "")
	focus("user0002", "price * qty")
	got := prompt("What does this do?")
	if !strings.Contains(got, "The user is in cell user0002.") || !strings.Contains(got, `Selected there: \"price * qty\"`) {
		t.Errorf("the context block does not carry the focus last said:\n%s", got)
	}
	focus("user0001", "")
	if got := prompt("And this?"); !strings.Contains(got, "The user is in cell user0001.") || strings.Contains(got, "Selected there: \\\"price") {
		t.Errorf("the second prompt's context:\n%s", got)
	}
	fe.mu.Lock()
	ops := slices.Clone(fe.ops)
	fe.mu.Unlock()
	if len(ops) != 0 {
		t.Errorf("the prompts asked the page %q", ops)
	}
}

// TestNotebookCommFailsOverToALivePage: two pages show one notebook and
// the one opened last goes without a comm_close (its browser closed): the
// next notebook call is answered by the other page, and the silent one is
// dropped, so the calls after it go to the live page at once (issue 41,
// item 13).
func TestNotebookCommFailsOverToALivePage(t *testing.T) {
	h := surfacetest.NewHost(t)
	br, conn, stop := serveBridgeOf(t, h.Host, h.Runner, CodeCells)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	live := &fakeFrontend{id: uuid.NewString(), cells: []nbcomm.Cell{{ID: "live0001", CellType: "code", Source: "from_the_live_page = 1"}}}
	defer live.connect(ctx, t, conn, "work.ipynb").Close()
	openedNotebook(t, br)
	gone := &fakeFrontend{id: uuid.NewString(), hang: true, cells: []nbcomm.Cell{{ID: "gone0001", CellType: "code", Source: "from_the_gone_page = 1"}}}
	defer gone.connect(ctx, t, conn, "work.ipynb").Close()
	for deadline := time.Now().Add(time.Minute); br.notebooks.sibling(live.comm(br)) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second page's notebook comm did not open")
		}
	}
	for i := range 2 {
		v, err := br.notebooks.Current().Read(ctx, 1000)
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if len(v.Cells) != 1 || v.Cells[0].ID != "live0001" {
			t.Fatalf("read %d: cells %+v, want the live page's", i, v.Cells)
		}
	}
	gone.mu.Lock()
	asked := len(gone.ops)
	gone.mu.Unlock()
	if asked != 1 {
		t.Errorf("the silent page was asked %d times, want once (then dropped)", asked)
	}
	if c := br.notebooks.comm(gone.id); c != nil {
		t.Error("the silent page's comm was kept")
	}
}

// comm is f's notebook comm in br (nil until it opened).
func (f *fakeFrontend) comm(br *Bridge) *notebookComm { return br.notebooks.comm(f.id) }

// comm is the notebook comm id (nil when none is open).
func (n *notebookComms) comm(id string) *notebookComm {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.comms[id]
}
