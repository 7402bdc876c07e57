package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentkernel/agentkernel/tests/scripted"
)

// genRunner is a fakeRunner that counts its kernels (backing.Generations).
type genRunner struct {
	fakeRunner
	gen atomic.Int64
}

func (g *genRunner) Generation() int { return int(g.gen.Load()) }

// TestContextTellsOfARestart: a kernel that restarted (or was replaced)
// between two prompts is told at the second, once, in the context block; a
// session resumed in a new process is told its kernel is new.
func TestContextTellsOfARestart(t *testing.T) {
	srv, open := scriptedModels(t)
	r := &genRunner{}
	r.gen.Store(1)
	st := openStore(t)
	ws := t.TempDir()
	h := newHost(t, Config{Store: st, Workspace: ws, Model: "openai:m", OpenModel: open, Runner: r, Kind: "code"})
	ctx := context.Background()
	for range 3 {
		srv.Enqueue(scripted.Reply(scripted.Text("ok")))
	}
	if _, err := h.Submit(ctx, "first", Follow{}); err != nil {
		t.Fatal(err)
	}
	if got := srv.LastUserText(); strings.Contains(got, "restarted") {
		t.Errorf("the first prompt tells of a restart:\n%s", got)
	}
	r.gen.Store(2)
	h.Submit(ctx, "second", Follow{})
	if got := srv.LastUserText(); !strings.Contains(got, "<notebook_context>\nThe kernel restarted since the last message") {
		t.Errorf("the restart is not told:\n%s", got)
	}
	h.Submit(ctx, "third", Follow{})
	if got := srv.LastUserText(); strings.Contains(got, "restarted") {
		t.Errorf("the restart is told twice:\n%s", got)
	}

	// A new process continues the session: its kernel is new.
	h.Close()
	srv.Enqueue(scripted.Reply(scripted.Text("ok")))
	h2 := newHost(t, Config{Store: st, Workspace: ws, Model: "openai:m", OpenModel: open, Runner: &genRunner{}, Kind: "code"})
	if _, err := h2.Continue(ctx); err != nil {
		t.Fatal(err)
	}
	h2.Submit(ctx, "fourth", Follow{})
	if got := srv.LastUserText(); !strings.Contains(got, "The kernel is new since this session's last message") {
		t.Errorf("a resumed session is not told its kernel is new:\n%s", got)
	}
}

// TestDescribeNamespace: the namespace is told whole the first time, then
// as what changed and what is gone, within its cap.
func TestDescribeNamespace(t *testing.T) {
	now := map[string]string{"a": "a: int = 1", "b": "b: int = 2"}
	if got := describeNamespace(nil, false, now, []string{"a", "b"}, []string{"np (numpy)"}); got !=
		"Variables in the kernel (name: type, shape, columns, value):\na: int = 1\nb: int = 2\nModules: np (numpy)" {
		t.Errorf("whole: %q", got)
	}
	prev := map[string]string{"a": "a: int = 1", "b": "b: int = 3", "c": "c: str = 'x'"}
	if got := describeNamespace(prev, true, now, []string{"a", "b"}, nil); got !=
		"Variables in the kernel that are new or changed since the last message:\nb: int = 2\nGone: c" {
		t.Errorf("changed: %q", got)
	}
	if got := describeNamespace(now, true, now, []string{"a", "b"}, nil); got != "" {
		t.Errorf("unchanged: %q", got)
	}
	many := map[string]string{}
	var order []string
	for i := range 1000 {
		name := strings.Repeat("v", 5) + string(rune('a'+i%26)) + strings.Repeat("x", i%7) + string(rune('0'+i%10)) + string(rune('A'+i/26%26))
		many[name] = name + ": int = 12345678"
		order = append(order, name)
	}
	got := describeNamespace(nil, false, many, order, nil)
	if len(got) > maxNamespaceChars+100 || !strings.Contains(got, "more: inspect_variable or list_variables give them]") {
		t.Errorf("not bounded: %d characters", len(got))
	}
}

// TestMentions: @path gives the model the file's head, a protected file
// (.env) is not read, an address is no mention, and the user's words keep
// the mention as typed.
func TestMentions(t *testing.T) {
	if got := Mentions("see @df and @data/sales.csv, mail ada@example.org (@cell:3) @df."); strings.Join(got, " ") != "df data/sales.csv cell:3" {
		t.Errorf("Mentions: %q", got)
	}
	srv, open := scriptedModels(t)
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "data", "sales.csv"), []byte("city,sales\nOslo,3\nLima,4\n"), 0o644)
	os.WriteFile(filepath.Join(ws, ".env"), []byte("API_KEY=sk-secret-123\n"), 0o644)
	h := newHost(t, Config{Store: openStore(t), Workspace: ws, Model: "openai:m", OpenModel: open, Kind: "prompt"})
	srv.Enqueue(scripted.Reply(scripted.Text("ok")))
	if _, err := h.Submit(context.Background(), "Summarise @data/sales.csv, and what is in @.env?", Follow{}); err != nil {
		t.Fatal(err)
	}
	got := srv.LastUserText()
	if !strings.Contains(got, "@data/sales.csv (a file; the first lines at most):\n1 | city,sales\n2 | Oslo,3") {
		t.Errorf("the file's head is not given:\n%s", got)
	}
	if strings.Contains(got, "sk-secret-123") {
		t.Errorf("a protected file was read:\n%s", got)
	}
	if !strings.HasSuffix(got, "Summarise @data/sales.csv, and what is in @.env?") {
		t.Errorf("the user's words changed:\n%s", got)
	}
	for _, m := range h.Conversation().UI() {
		if m.Say == "text" && m.Text != "Summarise @data/sales.csv, and what is in @.env?" && strings.Contains(m.Text, "Summarise") {
			t.Errorf("the UI history does not show the prompt as typed: %q", m.Text)
		}
	}
}

// TestMentionedCell: @cell:ID gives the model that cell's source.
func TestMentionedCell(t *testing.T) {
	srv, open := scriptedModels(t)
	nb := &memCells{path: "work.ipynb", cells: []Cell{{ID: "c1", Kind: "markdown", Source: "# Work"}, {ID: "c2", Kind: "code", Source: "total = sum(rows)"}}}
	h := newHost(t, Config{Store: openStore(t), Model: "openai:m", OpenModel: open, Kind: "prompt", Cells: func() Cells { return nb }})
	srv.Enqueue(scripted.Reply(scripted.Text("ok")))
	if _, err := h.Submit(context.Background(), "Why does @cell:c2 fail? And @cell:zz?", Follow{}); err != nil {
		t.Fatal(err)
	}
	got := srv.LastUserText()
	if !strings.Contains(got, "@cell:c2 (cell c2, index 1, code):\ntotal = sum(rows)") || !strings.Contains(got, "@cell:zz: the notebook has no such cell") {
		t.Errorf("the cells are not given:\n%s", got)
	}
}
