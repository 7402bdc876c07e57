package session

import (
	"context"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestCompleteKnowsTheKernel: an inline completion is asked of the model
// with the live kernel's namespace (a table's columns, a function's
// signature), asked quietly; the answer comes back without the fence the
// model added; nothing reaches the history, and the cost is counted.
func TestCompleteKnowsTheKernel(t *testing.T) {
	r := liveKernel(t)
	srv, open := scriptedModels(t)
	h := newHost(t, Config{Store: openStore(t), Runner: r, Model: "openai:m", OpenModel: open})
	ctx := context.Background()
	setup := "class Frame:\n    columns = ['revenue', 'region']\n    dtypes = ['float64', 'object']\n    shape = (12, 2)\n" +
		"df = Frame()\ndef monthly(frame, year=2026):\n    return frame\n"
	if res, err := r.Execute(ctx, backing.Exec{Code: setup}); err != nil || res.Error != nil {
		t.Fatalf("setup: %v %+v", err, res.Error)
	}
	// A session exists (the cost is counted in it).
	srv.Enqueue(scripted.Reply(scripted.Text("hi")))
	if _, err := h.Submit(ctx, "hello", Follow{}); err != nil {
		t.Fatal(err)
	}
	before := len(h.Conversation().UI())
	srv.Enqueue(scripted.Reply(scripted.Text("```python\n", "df.groupby('region')", "\n```"), usage(300, 8)))
	totals := snapshotTotals(t, h)
	text, err := h.Models().Complete(ctx, agent.CompletionRequest{Prefix: "summary = ", Before: []string{"import math"}})
	if err != nil {
		t.Fatal(err)
	}
	if text != "df.groupby('region')" {
		t.Errorf("completion %q", text)
	}
	reqs := srv.Requests()
	sent := string(reqs[len(reqs)-1].Raw)
	for _, want := range []string{"df: Frame (12, 2) [revenue: float64, region: object]", "monthly: function monthly(frame, year=2026)",
		"summary = <CURSOR>", "import math"} {
		if !strings.Contains(sent, want) {
			t.Errorf("the completion request lacks %q:\n%s", want, sent)
		}
	}
	if len(h.Conversation().UI()) != before {
		t.Error("the completion reached the history")
	}
	if after := snapshotTotals(t, h); after.InputTokens != totals.InputTokens+300 || after.Cost <= totals.Cost {
		t.Errorf("totals %+v → %+v: the completion's cost is not counted", totals, after)
	}
	// No model: completions are off.
	off := newHost(t, Config{Store: openStore(t), Runner: r})
	if _, err := off.Models().Complete(ctx, agent.CompletionRequest{Prefix: "x"}); err != ErrNoCompletions {
		t.Errorf("no model: %v", err)
	}
}

func snapshotTotals(t *testing.T, h *Host) agent.Totals {
	t.Helper()
	s, err := h.Conversation().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s.Totals
}
