package store

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/rewind"
)

// rewindFixture is a session with a condense whose condense_context UI
// message sits after the rewind target, and a tool call around it.
func rewindFixture(t *testing.T, s *Store) (string, Histories) {
	t.Helper()
	ctx := context.Background()
	id := newSession(t, s)
	cc := say(60, messages.SayCondenseContext, "")
	cc.ContextCondense = &messages.ContextCondense{CondenseID: "c1", Summary: "summary"}
	h := Histories{
		UI: []messages.UIMessage{
			say(10, messages.SayText, "task"),
			say(20, messages.SayText, "working"),
			ask(30, messages.AskCommand, "ls"),
			say(40, messages.SayCommandOutput, "a b"),
			say(50, messages.SayUserFeedback, "now plot it"),
			cc,
			say(70, messages.SayText, "plotted"),
		},
		API: []messages.APIMessage{
			userText(10, "task"),
			toolUse(20, "t1"),
			toolResult(40, "t1", "a b"),
			userText(50, "now plot it"),
			{Role: messages.RoleUser, TS: 60, IsSummary: true, CondenseID: "c1", Content: []messages.ContentBlock{{Type: messages.BlockText, Text: "summary"}}},
			assistantText(70, "plotted"),
		},
	}
	for i := 0; i < 4; i++ { // condensed messages
		h.API[i].CondenseParent = "c1"
	}
	must(t, s.AppendUI(ctx, id, h.UI...))
	must(t, s.AppendAPI(ctx, id, h.API...))
	return id, h
}

func TestRewind(t *testing.T) {
	tests := []struct {
		name string
		ts   int64
		opts rewind.Options
	}{
		{"remove condense", 50, rewind.Options{}},
		{"keep target", 50, rewind.Options{IncludeTargetMessage: true}},
		{"orphan tool_use", 30, rewind.Options{}},
		{"skip cleanup", 30, rewind.Options{SkipCleanup: true}},
		{"to the start", 10, rewind.Options{}},
		{"to the end", 70, rewind.Options{IncludeTargetMessage: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t)
			id, h := rewindFixture(t, s)
			want, err := rewind.RewindToTimestamp(h.UI, h.API, tc.ts, tc.opts)
			must(t, err)
			got, err := s.Rewind(ctx, id, tc.ts, tc.opts)
			must(t, err)
			equalJSON(t, "result", got, want)
			stored, err := s.Load(ctx, id)
			must(t, err)
			if len(stored.UI)+len(want.UI) > 0 {
				equalJSON(t, "stored ui", stored.UI, want.UI)
			}
			if len(stored.API)+len(want.API) > 0 {
				equalJSON(t, "stored api", stored.API, want.API)
			}
			ss, err := s.GetSession(ctx, id)
			must(t, err)
			if ss.MessageCount != len(want.UI) || ss.APICount != len(want.API) {
				t.Fatalf("counts %d/%d, want %d/%d", ss.MessageCount, ss.APICount, len(want.UI), len(want.API))
			}
			if len(want.UI) == 0 && (ss.FirstUserMessage != "" || ss.LastMessage != "") {
				t.Fatalf("denormalised fields survive an empty history: %+v", ss)
			}
			must(t, s.IntegrityCheck(ctx))
			hits, err := s.Search(ctx, "plotted", SearchOptions{SessionID: id})
			must(t, err)
			if wantHits := len(want.UI) == 7; (len(hits) == 1) != wantHits {
				t.Fatalf("FTS after rewind: %+v", hits)
			}
		})
	}
}

func TestRewindErrors(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	id, h := rewindFixture(t, s)
	if _, err := s.Rewind(ctx, id, 12345, rewind.Options{}); !errors.Is(err, rewind.ErrNotFound) {
		t.Fatalf("missing ts: %v", err)
	}
	res, err := rewind.RewindToTimestamp(h.UI, h.API, 50, rewind.Options{})
	must(t, err)
	// Someone appended after the histories were loaded.
	must(t, s.AppendUI(ctx, id, say(80, messages.SayText, "late")))
	if err := s.ApplyRewind(ctx, id, h, res); !errors.Is(err, ErrStale) {
		t.Fatalf("stale apply: %v", err)
	}
	cur, err := s.Load(ctx, id)
	must(t, err)
	if len(cur.UI) != 8 {
		t.Fatal("a refused rewind changed the store")
	}
	// A result that is not derived from the histories.
	bogus := rewind.Result{UI: cur.UI[:2], API: []messages.APIMessage{userText(999, "x")}, Changed: true}
	if err := s.ApplyRewind(ctx, id, cur, bogus); !errors.Is(err, ErrStale) {
		t.Fatalf("bogus apply: %v", err)
	}
}

func TestDiffAPIWithDuplicateIdentity(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	id := newSession(t, s)
	old := []messages.APIMessage{userText(0, "a"), userText(0, "b"), userText(0, "c"), assistantText(5, "d")}
	must(t, s.AppendAPI(ctx, id, old...))
	newAPI := []messages.APIMessage{old[0], old[2]} // b and d removed
	res := rewind.Result{API: newAPI, Changed: true}
	must(t, s.ApplyRewind(ctx, id, Histories{API: old}, res))
	got, err := s.LoadAPI(ctx, id, Page{})
	must(t, err)
	equalJSON(t, "api", got, newAPI)
}

// TestAPIMessageFieldsCovered fails when messages.APIMessage or
// ContentBlock gain a field, so that apiSame (which must compare every
// field) is updated with it.
func TestAPIMessageFieldsCovered(t *testing.T) {
	for typ, want := range map[reflect.Type]int{
		reflect.TypeFor[messages.APIMessage]():   9,
		reflect.TypeFor[messages.ContentBlock](): 11,
		reflect.TypeFor[messages.ImageSource]():  4,
	} {
		if typ.NumField() != want {
			t.Errorf("%s has %d fields, apiSame knows %d: update apiSame/blocksSame", typ, typ.NumField(), want)
		}
	}
}
