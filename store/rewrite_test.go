package store

import (
	"context"
	"errors"
	"testing"

	"github.com/agentkernel/agentkernel/messages"
)

func TestRewriteAPI(t *testing.T) {
	s := newStore(t)
	id := newSession(t, s)
	ctx := context.Background()
	ui := []messages.UIMessage{say(1, messages.SayText, "task"), say(3, messages.SayText, "answer")}
	api := []messages.APIMessage{userText(1, "task"), assistantText(2, "answer")}
	must(t, s.AppendUI(ctx, id, ui...))
	must(t, s.AppendAPI(ctx, id, api...))

	condensed, err := messages.Condense(api, messages.CondenseSpec{ID: "c1", Summary: "the gist", TS: 4})
	must(t, err)
	announce := messages.UIMessage{TS: 5, Type: messages.TypeSay, Say: messages.SayCondenseContext,
		ContextCondense: &messages.ContextCondense{CondenseID: "c1", Summary: "the gist"}}
	must(t, s.RewriteAPI(ctx, id, Histories{UI: ui, API: api}, condensed, announce))

	got, err := s.Load(ctx, id)
	must(t, err)
	equalJSON(t, "api", got.API, condensed)
	equalJSON(t, "ui", got.UI, append(append([]messages.UIMessage(nil), ui...), announce))
	if eff := messages.Effective(got.API); len(eff) != 1 || !eff[0].IsSummary {
		t.Fatalf("effective after reload: %+v", eff)
	}
	c, err := s.Count(ctx, id)
	must(t, err)
	if c.UI != 3 || c.API != 3 {
		t.Fatalf("counts %+v", c)
	}

	// A stale view writes nothing.
	err = s.RewriteAPI(ctx, id, Histories{UI: ui, API: api}, api)
	if !errors.Is(err, ErrStale) {
		t.Fatalf("stale rewrite: err = %v", err)
	}
	got2, err := s.Load(ctx, id)
	must(t, err)
	equalJSON(t, "api after stale rewrite", got2.API, condensed)
}
