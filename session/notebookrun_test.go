package session

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestNotebookRunPromptMode: in a prompt-mode notebook, with a real
// ipykernel behind the host, the cell the agent inserts starts with
// %%code, a whole edit of a code cell keeps the line, and a run sends the
// kernel the code alone (its code log, which a rewind replays, holds no
// %%code), its outputs landing in the cell; a request (a bare cell) is
// not run. A rewind puts the cells back as they were, lines and all. A
// cell the user changes while the run's ask waits is not run, neither the
// code approved nor the new one.
func TestNotebookRunPromptMode(t *testing.T) {
	r := liveKernel(t)
	srv, open := scriptedModels(t)
	st := openStore(t)
	h := newHost(t, Config{Store: st, Runner: r, Model: "openai:m", OpenModel: open, PromptCells: true})
	nb := &memCells{path: "work.ipynb", cells: []Cell{
		{ID: "ask1", Kind: agent.CodeCell, Source: "Double x"},
		{ID: "code1", Kind: agent.CodeCell, Source: "%%code\nx = 21"},
	}}
	h.Tools().SetFrontends(&fakeFrontends{nb: nb, open: true})
	ctx := context.Background()
	yes := Follow{Approve: agent.ApproveAll.Approver()}
	original := nb.state()

	warmUp(t, h, srv)
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("i1", agent.ToolNotebookInsert, `{"source": "print(x * 2)", "index": 2}`)),
		scripted.Reply(scripted.ToolCall("e1", agent.ToolNotebookEdit, `{"id": "code1", "source": "x = 20 + 1"}`)),
		scripted.Reply(scripted.ToolCall("x1", agent.ToolNotebookRun, `{"id": "code1"}`)),
		scripted.Reply(scripted.ToolCall("x2", agent.ToolNotebookRun, `{"index": 2}`)),
		scripted.Reply(scripted.ToolCall("x3", agent.ToolNotebookRun, `{"id": "ask1"}`)),
		scripted.Reply(scripted.Text("Doubled.")),
	)
	if _, err := h.Submit(ctx, "double x in my notebook", yes); err != nil {
		t.Fatal(err)
	}
	if got := nb.state(); !slices.Equal(got[:2], []string{"ask1:Double x", "code1:%%code\nx = 20 + 1"}) ||
		!strings.HasSuffix(got[2], ":%%code\nprint(x * 2)") {
		t.Fatalf("cells %q", got)
	}
	nb.mu.Lock()
	outs := nb.cells[2].Outputs
	nb.mu.Unlock()
	if b, _ := json.Marshal(outs); len(outs) != 1 || !strings.Contains(string(b), `42\n`) {
		t.Fatalf("the run cell's outputs: %s", b)
	}
	last, _ := srv.Last()
	if !strings.Contains(string(last.Raw), "request to the agent, not code") {
		t.Errorf("the run of a request was not refused: %s", last.Raw)
	}
	info, err := h.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := st.CodeRuns(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, cr := range runs {
		ran = append(ran, cr.Code)
	}
	if !slices.Equal(ran, []string{"x = 20 + 1", "print(x * 2)"}) {
		t.Fatalf("the code log %q", ran)
	}

	rw, err := h.World().Rewind(ctx, promptTS(t, h, "double x in my notebook"), RewindOptions{NoKernel: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := nb.state(); !slices.Equal(got, original) || len(rw.Cells) != 1 || len(rw.Cells[0].Conflicts) != 0 {
		t.Fatalf("after the rewind the cells are %q, want %q\n%s", got, original, rw.Summary())
	}

	// The user changes the cell while the ask waits: nothing runs, neither
	// the code approved (x = 100) nor the new one.
	if res, err := r.Execute(ctx, backing.Exec{Code: "x = 21"}); err != nil || res.Error != nil {
		t.Fatalf("x = 21: %v %+v", err, res.Error)
	}
	if _, err := nb.SetSource(ctx, "code1", "%%code\nx = 100"); err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("x4", agent.ToolNotebookRun, `{"id": "code1"}`)),
		scripted.Reply(scripted.Text("Not run.")),
	)
	var asked []messages.UIMessage
	changing := Follow{Approve: func(_ context.Context, ask messages.UIMessage) (agent.Response, bool) {
		asked = append(asked, ask)
		if _, err := nb.SetSource(ctx, "code1", "%%code\nx = 'changed'"); err != nil {
			t.Error(err)
		}
		return agent.Response{Kind: agent.ResponseYes, By: "test"}, true
	}}
	if _, err := h.Submit(ctx, "run it", changing); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0].Ask != messages.AskCommand || asked[0].Text != "x = 100" || asked[0].Cell != "code1" {
		t.Fatalf("asks %+v", asked)
	}
	last, _ = srv.Last()
	if !strings.Contains(string(last.Raw), "changed since its code was read and approved") {
		t.Errorf("the model was not told the cell changed: %s", last.Raw)
	}
	if res, err := r.Execute(ctx, backing.Exec{Code: "print(x)"}); err != nil || res.Stdout != "21\n" {
		t.Fatalf("x is %q (%v): a changed cell ran", res.Stdout, err)
	}
}
