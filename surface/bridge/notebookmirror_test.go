package bridge

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/internal/nbcomm"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// caughtUp waits until the kernel's mirror of fe's notebook is current at
// fe's last version (its snapshot and changes have come).
func caughtUp(t testing.TB, br *Bridge, fe *fakeFrontend) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		fe.mu.Lock()
		want := fe.version
		fe.mu.Unlock()
		if c := br.notebooks.comm(fe.id); c != nil {
			c.mirror.mu.Lock()
			ok := c.mirror.current && c.mirror.version == want
			c.mirror.mu.Unlock()
			if ok {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the kernel's mirror did not catch up with the page")
		}
	}
}

// mirrorPage is a frontend with the mirror capability and two cells.
func mirrorPage() *fakeFrontend {
	return &fakeFrontend{id: uuid.NewString(), mirror: true, cells: []nbcomm.Cell{
		{ID: "user0001", CellType: "markdown", Source: "# Plan"},
		{ID: "user0002", CellType: "code", Source: "total = price * qty"},
	}}
}

// lastMessage is the content of the last message of the model's request r
// (a tool's result).
func lastMessage(r scripted.Request) string {
	ms := r.Messages()
	if len(ms) == 0 {
		return ""
	}
	s, _ := ms[len(ms)-1]["content"].(string)
	return s
}

func sourcesOf(v agent.NotebookView) []string {
	var out []string
	for _, c := range v.Cells {
		out = append(out, c.Source)
	}
	return out
}

// TestNotebookMirrorStaleness: a page that sends its changes is read from
// the kernel's mirror: a user's edit in the page is what the next read
// sees, without asking the page. Until the snapshot comes, and after a
// change is missed (a version gap), reads go to the page, and the kernel
// asks for a new snapshot, from which it reads again.
func TestNotebookMirrorStaleness(t *testing.T) {
	h := surfacetest.NewHost(t)
	br, conn, stop := serveBridgeOf(t, h.Host, h.Runner, PromptCells)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fe := mirrorPage()
	c := fe.connect(ctx, t, conn, "work.ipynb")
	defer c.Close()
	nb := openedNotebook(t, br)
	read := func(want ...string) {
		t.Helper()
		v, err := nb.Read(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if got := sourcesOf(v); !slices.Equal(got, want) || v.Path != "work.ipynb" {
			t.Fatalf("read %q of %q, want %q", got, v.Path, want)
		}
	}

	caughtUp(t, br, fe)
	read("# Plan", "total = price * qty")
	fe.userEdit(t, "user0002", "total = price * qty * 2", false)
	caughtUp(t, br, fe)
	read("# Plan", "total = price * qty * 2")
	if n := fe.reads(); n != 0 {
		t.Fatalf("the page was asked for %d reads; the mirror was current", n)
	}

	fe.userEdit(t, "user0002", "total = 0", true) // a change is lost on the way
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if c := br.notebooks.comm(fe.id); c != nil {
			c.mirror.mu.Lock()
			stale := !c.mirror.current
			c.mirror.mu.Unlock()
			if stale {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("a version gap left the mirror current")
		}
	}
	read("# Plan", "total = 0")
	if n := fe.reads(); n != 1 {
		t.Fatalf("after a gap the page was asked for %d reads, want 1", n)
	}
	caughtUp(t, br, fe) // the snapshot the kernel asked for
	read("# Plan", "total = 0")
	if n := fe.reads(); n != 1 {
		t.Fatalf("after the new snapshot the page was asked for %d reads, want still 1", n)
	}
	fe.mu.Lock()
	ops := slices.Clone(fe.ops)
	fe.mu.Unlock()
	if !slices.Equal(ops, []string{"resync", "read"}) {
		t.Errorf("the page was sent %q, want a resync and a read", ops)
	}

	// A page that says it mirrors but sent no snapshot yet is asked.
	late := mirrorPage()
	late.cells[1].Source = "late = 1"
	c2, err := client.Dial(ctx, conn, client.Options{Logger: logger(), OnIOPub: late.iopub})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	late.c = c2
	if err := c2.Send(ctx, client.Request{MsgType: "comm_open", Content: map[string]any{
		"comm_id": late.id, "target_name": NotebookTarget, "data": map[string]any{"protocol": 1, "path": "late.ipynb", "mirror": nbcomm.Mirror}}}); err != nil {
		t.Fatal(err)
	}
	var lnb session.Cells
	for deadline := time.Now().Add(time.Minute); lnb == nil; time.Sleep(5 * time.Millisecond) {
		lnb = br.notebooks.Find("late.ipynb")
		if time.Now().After(deadline) {
			t.Fatal("the second page's comm did not open")
		}
	}
	v, err := lnb.Read(ctx, 0)
	if err != nil || !slices.Equal(sourcesOf(v), []string{"# Plan", "late = 1"}) {
		t.Fatalf("read %q, %v", sourcesOf(v), err)
	}
	if n := late.reads(); n != 1 {
		t.Errorf("a page without a snapshot was asked for %d reads, want 1", n)
	}
}

// TestNotebookMirrorWrites: with the mirror, each notebook tool call is
// one message to the page (the insert's and the edit's reads come from the
// mirror), and a write's change is in the next read, which the page is not
// asked for. A write to a cell the user types in is refused by the page:
// the model is told, and the mirror keeps the cell as the page has it.
func TestNotebookMirrorWrites(t *testing.T) {
	h := surfacetest.NewHost(t)
	br, conn, stop := serveBridgeOf(t, h.Host, h.Runner, PromptCells)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fe := mirrorPage()
	fe.typing = map[string]bool{"fe000001": true} // the user types in the agent's new cell at once
	c := fe.connect(ctx, t, conn, "work.ipynb")
	defer c.Close()
	openedNotebook(t, br)
	caughtUp(t, br, fe)

	h.Script.Enqueue(
		scripted.Reply(scripted.ToolCall("i1", agent.ToolNotebookInsert, `{"source": "answer = 42", "index": 1}`)),
		scripted.Reply(scripted.ToolCall("e1", agent.ToolNotebookEdit, `{"id": "fe000001", "source": "answer = 0"}`)),
		scripted.Reply(scripted.ToolCall("r1", agent.ToolNotebookRead, `{}`)),
		scripted.Reply(scripted.Text("Done.")),
	)
	if _, err := c.Execute(ctx, "Add the answer, and change the total", client.ExecuteOptions{}, client.Handlers{}); err != nil {
		t.Fatal(err)
	}
	reqs := h.Script.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	if edit := lastMessage(reqs[2]); !strings.Contains(edit, "typing in cell fe000001") {
		t.Errorf("the model was not told the user is typing: %s", edit)
	}
	if read := lastMessage(reqs[3]); !strings.Contains(read, "%%code\nanswer = 42") || strings.Contains(read, "answer = 0") {
		t.Errorf("the read after the writes: %s", read)
	}
	fe.mu.Lock()
	ops := slices.Clone(fe.ops)
	fe.mu.Unlock()
	if !slices.Equal(ops, []string{"insert", "set_source"}) {
		t.Errorf("the page was sent %q, want one insert and one set_source", ops)
	}
	if got := fe.sources(); !slices.Equal(got, []string{"# Plan", "%%code\nanswer = 42", "total = price * qty"}) {
		t.Errorf("the page's cells: %q", got)
	}
}

// TestNotebookNoChangeEvents: a page that sends no changes (an older
// extension, the headless runner) is asked for every read, as before the
// mirror: an insert reads, then inserts.
func TestNotebookNoChangeEvents(t *testing.T) {
	h := surfacetest.NewHost(t)
	br, conn, stop := serveBridgeOf(t, h.Host, h.Runner, PromptCells)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fe := mirrorPage()
	fe.mirror = false
	c := fe.connect(ctx, t, conn, "work.ipynb")
	defer c.Close()
	openedNotebook(t, br)
	h.Script.Enqueue(
		scripted.Reply(scripted.ToolCall("r1", agent.ToolNotebookRead, `{}`)),
		scripted.Reply(scripted.ToolCall("i1", agent.ToolNotebookInsert, `{"source": "answer = 42", "index": 1}`)),
		scripted.Reply(scripted.ToolCall("r2", agent.ToolNotebookRead, `{}`)),
		scripted.Reply(scripted.Text("Done.")),
	)
	if _, err := c.Execute(ctx, "Add the answer", client.ExecuteOptions{}, client.Handlers{}); err != nil {
		t.Fatal(err)
	}
	fe.mu.Lock()
	ops := slices.Clone(fe.ops)
	fe.mu.Unlock()
	if !slices.Equal(ops, []string{"read", "read", "insert", "read"}) {
		t.Errorf("the page was sent %q, want every read", ops)
	}
	last, _ := h.Script.Last()
	if read := lastMessage(last); !strings.Contains(read, "%%code\nanswer = 42") {
		t.Errorf("the read after the insert: %s", read)
	}
}
