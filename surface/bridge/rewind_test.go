package bridge

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// code is a scripted execute_code call.
func code(id, src string) scripted.Step {
	args, _ := json.Marshal(map[string]string{"code": src})
	return scripted.ToolCall(id, "execute_code", string(args))
}

// historyRef returns the #N of the first message whose text contains s.
func historyRef(t *testing.T, h *harness, s string) string {
	t.Helper()
	hist, err := h.b.runMagic(context.Background(), "history", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(hist, "\n") {
		if strings.Contains(line, s) {
			return strings.Fields(line)[0]
		}
	}
	t.Fatalf("%q not in the history:\n%s", s, hist)
	return ""
}

func stdout(o *outputs) string { return strings.Join(texts(o, "stream", ""), "") }

// TestRewindTheWorld: a rewind takes back the conversation, the files the
// agent wrote (by its code and by its file tool) and the kernel's state
// (restarted, the earlier code replayed); the model is told.
func TestRewindTheWorld(t *testing.T) {
	h, srv := promptKernel(t, "openai", "", agent.ApproveAll)
	ws := h.b.host.Workspace()

	srv.Enqueue(
		scripted.Reply(code("c1", "x = 1")),
		scripted.Reply(scripted.Text("x is 1.")),
	)
	if rep, o := h.cell("Set x to 1"); rep["status"] != "ok" {
		t.Fatalf("first prompt: %v %s", rep, o.types())
	}
	srv.Enqueue(
		scripted.Reply(code("c2", "x = 2\nopen('by_code.txt', 'w').write('from code')")),
		scripted.Reply(scripted.ToolCall("c3", "write_file", `{"path": "by_tool.txt", "content": "from the tool"}`)),
		scripted.Reply(scripted.Text("x is 2, and two files.")),
	)
	if rep, o := h.cell("Set x to 2 and write two files"); rep["status"] != "ok" {
		t.Fatalf("second prompt: %v %s", rep, o.types())
	}
	for _, f := range []string{"by_code.txt", "by_tool.txt"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err != nil {
			t.Fatalf("the agent did not write %s: %v", f, err)
		}
	}
	_, o := h.cell("%%code\nprint(x)")
	if got := stdout(o); got != "2\n" {
		t.Fatalf("x before the rewind: %q", got)
	}

	ref := historyRef(t, h, "Set x to 2")
	rep, o := h.cell("%agent rewind " + ref)
	out := stdout(o)
	if rep["status"] != "ok" || !strings.Contains(out, "Rewound") || !strings.Contains(out, "replayed") {
		t.Fatalf("rewind %v:\n%s", rep, out)
	}
	t.Logf("%%agent rewind %s:\n%s", ref, out)
	for _, f := range []string{"by_code.txt", "by_tool.txt"} {
		if _, err := os.Stat(filepath.Join(ws, f)); !os.IsNotExist(err) {
			t.Errorf("%s survived the rewind (%v)", f, err)
		}
	}
	_, o = h.cell("%%code\nprint(x)")
	if got := stdout(o); got != "1\n" {
		t.Fatalf("x after the rewind: %q, want 1 (the kernel restored to before the second prompt)", got)
	}
	srv.Enqueue(scripted.Reply(scripted.Text("Understood.")))
	h.cell("What is x now?")
	last, _ := srv.Last()
	body := string(last.Raw)
	if !strings.Contains(body, "The conversation was rewound") || strings.Contains(body, "Set x to 2") {
		t.Fatalf("the model was not told, or still sees the rewound prompt: %s", body)
	}
}

// TestRewindConflict: a file the user edited after the agent wrote it is
// a conflict: reported, and it keeps the user's content.
func TestRewindConflict(t *testing.T) {
	h, srv := promptKernel(t, "anthropic", "", agent.ApproveAll)
	ws := h.b.host.Workspace()
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("c1", "write_file", `{"path": "notes.md", "content": "by the agent"}`)),
		scripted.Reply(scripted.Text("Written.")),
	)
	h.cell("Write notes.md")
	if err := os.WriteFile(filepath.Join(ws, "notes.md"), []byte("edited by the user"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := historyRef(t, h, "Write notes.md")
	rep, o := h.cell("%agent rewind " + ref)
	if out := stdout(o); rep["status"] != "ok" || !strings.Contains(out, "Conflicts") || !strings.Contains(out, "notes.md") {
		t.Fatalf("rewind %v:\n%s", rep, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.md")); string(b) != "edited by the user" {
		t.Fatalf("notes.md = %q: the user's edit was overwritten", b)
	}
}

// TestForkKeepsTheOriginal: a fork is a new current session with the
// history before the message; the original is intact.
func TestForkKeepsTheOriginal(t *testing.T) {
	h, srv := promptKernel(t, "openai", "", agent.ApproveAll)
	srv.Enqueue(scripted.Reply(scripted.Text("One.")), scripted.Reply(scripted.Text("Two.")))
	h.cell("first question")
	h.cell("second question")
	orig, err := h.b.host.Current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ref := historyRef(t, h, "second question")
	rep, o := h.cell("%agent fork " + ref)
	if rep["status"] != "ok" || !strings.Contains(stdout(o), "Forked") {
		t.Fatalf("fork %v: %s", rep, stdout(o))
	}
	fork, _ := h.b.host.Current(context.Background())
	if fork.ID == orig.ID || fork.Messages >= orig.Messages {
		t.Fatalf("fork %+v, original %+v", fork, orig)
	}
	st, err := h.b.host.Store(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hist, err := st.Load(context.Background(), orig.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist.UI) != orig.Messages {
		t.Fatalf("the original has %d messages, had %d", len(hist.UI), orig.Messages)
	}
	s, err := st.GetSession(context.Background(), fork.ID)
	if err != nil || s.ParentID != orig.ID {
		t.Fatalf("fork's parent %q, %v", s.ParentID, err)
	}
}
