package rewind

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/messages"
)

func TestRewindToTimestamp(t *testing.T) {
	const (
		text     = messages.SayText
		feedback = messages.SayUserFeedback
		started  = messages.SayAPIReqStarted
		output   = messages.SayCommandOutput
	)
	type apiWant struct {
		ts               int64
		condenseParent   string
		truncationParent string
		blocks           int // 0 = don't check
	}
	tests := []struct {
		name      string
		ui        []messages.UIMessage
		api       []messages.APIMessage
		ts        int64
		opts      Options
		wantUI    []int64
		wantAPI   []apiWant
		effective []int64 // ts of Effective(result API); nil = don't check
		unchanged bool
	}{
		{
			name:    "basic",
			ui:      []messages.UIMessage{say(1, text), say(3, text), say(5, feedback), say(7, text)},
			api:     []messages.APIMessage{user(1), assistant(3), user(5), assistant(7)},
			ts:      5,
			wantUI:  []int64{1, 3},
			wantAPI: []apiWant{{ts: 1}, {ts: 3}},
		},
		{
			// Roo-Code semantics: the API cutoff is still the target's ts.
			name:    "include target",
			ui:      []messages.UIMessage{say(1, text), say(3, text), say(5, feedback), say(7, text)},
			api:     []messages.APIMessage{user(2), assistant(4), user(6), assistant(8)},
			ts:      3,
			opts:    Options{IncludeTargetMessage: true},
			wantUI:  []int64{1, 3},
			wantAPI: []apiWant{{ts: 2}, {ts: 4}}, // no API message at 3; first user message at or after 3 is 6
		},
		{
			name:    "first message removes everything",
			ui:      []messages.UIMessage{say(1, text), say(3, text)},
			api:     []messages.APIMessage{user(1), assistant(3)},
			ts:      1,
			wantUI:  []int64{},
			wantAPI: []apiWant{},
		},
		{
			name: "condense removed: summary dropped by id, covered messages active again",
			ui: []messages.UIMessage{say(1, text), say(3, text), say(5, feedback),
				say(6, started), condenseUI(8, "c1"), say(10, text)},
			api: []messages.APIMessage{condensed("c1", user(1)), condensed("c1", assistant(3)),
				condensed("c1", user(5)), summary(7, "c1"), assistant(9)},
			ts:        8,
			wantUI:    []int64{1, 3, 5, 6},
			wantAPI:   []apiWant{{ts: 1}, {ts: 3}, {ts: 5}},
			effective: []int64{1, 3, 5},
		},
		{
			name: "condense kept",
			ui: []messages.UIMessage{say(1, text), say(3, text), say(5, feedback),
				say(6, started), condenseUI(8, "c1"), say(10, text), say(12, feedback)},
			api: []messages.APIMessage{condensed("c1", user(1)), condensed("c1", assistant(3)),
				condensed("c1", user(5)), summary(7, "c1"), assistant(9), user(12)},
			ts:     12,
			wantUI: []int64{1, 3, 5, 6, 8, 10},
			wantAPI: []apiWant{{ts: 1, condenseParent: "c1"}, {ts: 3, condenseParent: "c1"},
				{ts: 5, condenseParent: "c1"}, {ts: 7}, {ts: 9}},
			effective: []int64{7, 9},
		},
		{
			name: "truncation removed: marker dropped by id although older than the cutoff",
			ui: []messages.UIMessage{say(1, text), say(3, text), say(5, feedback), say(7, text),
				say(9, feedback), truncUI(11, "t1", 2), say(13, text)},
			api: []messages.APIMessage{user(1), truncated("t1", assistant(3)), truncated("t1", user(5)),
				marker(6, "t1"), assistant(7), user(9), assistant(12)},
			ts:        11,
			wantUI:    []int64{1, 3, 5, 7, 9},
			wantAPI:   []apiWant{{ts: 1}, {ts: 3}, {ts: 5}, {ts: 7}, {ts: 9}},
			effective: []int64{1, 3, 5, 7, 9},
		},
		{
			name: "truncation kept",
			ui: []messages.UIMessage{say(1, text), say(3, text), say(5, feedback), say(7, text),
				say(9, feedback), truncUI(11, "t1", 2), say(13, text), say(15, feedback)},
			api: []messages.APIMessage{user(1), truncated("t1", assistant(3)), truncated("t1", user(5)),
				marker(6, "t1"), assistant(7), user(9), assistant(13), user(15)},
			ts:     15,
			wantUI: []int64{1, 3, 5, 7, 9, 11, 13},
			wantAPI: []apiWant{{ts: 1}, {ts: 3, truncationParent: "t1"}, {ts: 5, truncationParent: "t1"},
				{ts: 6}, {ts: 7}, {ts: 9}, {ts: 13}},
			effective: []int64{1, 6, 7, 9, 13},
		},
		{
			name: "condense kept, later truncation removed",
			ui: []messages.UIMessage{say(1, text), say(3, text), condenseUI(6, "c1"), say(8, feedback),
				say(10, text), say(12, feedback), say(14, text), truncUI(16, "t1", 2), say(18, text)},
			api: []messages.APIMessage{condensed("c1", user(1)), condensed("c1", assistant(3)), summary(5, "c1"),
				truncated("t1", user(8)), truncated("t1", assistant(10)), marker(11, "t1"), user(12), assistant(14), assistant(17)},
			ts:     16,
			wantUI: []int64{1, 3, 6, 8, 10, 12, 14},
			wantAPI: []apiWant{{ts: 1, condenseParent: "c1"}, {ts: 3, condenseParent: "c1"}, {ts: 5},
				{ts: 8}, {ts: 10}, {ts: 12}, {ts: 14}},
			effective: []int64{5, 8, 10, 12, 14},
		},
		{
			name: "condense and truncation both removed",
			ui: []messages.UIMessage{say(1, text), say(3, text), condenseUI(6, "c1"), say(8, feedback),
				say(10, text), say(12, feedback), say(14, text), truncUI(16, "t1", 2), say(18, text)},
			api: []messages.APIMessage{condensed("c1", user(1)), condensed("c1", assistant(3)), summary(5, "c1"),
				truncated("t1", user(8)), truncated("t1", assistant(10)), marker(11, "t1"), user(12), assistant(14), assistant(17)},
			ts:        6,
			wantUI:    []int64{1, 3},
			wantAPI:   []apiWant{{ts: 1}, {ts: 3}}, // summary 5 is older than the cutoff but c1 was removed
			effective: []int64{1, 3},
		},
		{
			name: "several condenses: removing the newer uncovers the older",
			ui: []messages.UIMessage{say(1, text), say(3, text), condenseUI(6, "c1"), say(8, feedback),
				say(10, text), condenseUI(13, "c2"), say(15, feedback), say(17, text)},
			api: []messages.APIMessage{condensed("c1", user(1)), condensed("c1", assistant(3)),
				condensed("c2", summary(5, "c1")), condensed("c2", user(8)), condensed("c2", assistant(10)),
				summary(12, "c2"), user(15), assistant(17)},
			ts:     13,
			wantUI: []int64{1, 3, 6, 8, 10},
			wantAPI: []apiWant{{ts: 1, condenseParent: "c1"}, {ts: 3, condenseParent: "c1"},
				{ts: 5}, {ts: 8}, {ts: 10}},
			effective: []int64{5, 8, 10},
		},
		{
			name: "several condenses: removing both",
			ui: []messages.UIMessage{say(1, text), say(3, text), condenseUI(6, "c1"), say(8, feedback),
				say(10, text), condenseUI(13, "c2"), say(15, feedback), say(17, text)},
			api: []messages.APIMessage{condensed("c1", user(1)), condensed("c1", assistant(3)),
				condensed("c2", summary(5, "c1")), condensed("c2", user(8)), condensed("c2", assistant(10)),
				summary(12, "c2"), user(15), assistant(17)},
			ts:        6,
			wantUI:    []int64{1, 3},
			wantAPI:   []apiWant{{ts: 1}, {ts: 3}},
			effective: []int64{1, 3},
		},
		{
			name: "SkipCleanup keeps dangling tags and orphaned tools but still drops the summary",
			ui: []messages.UIMessage{say(1, text), say(2, text), ask(3, messages.AskTool), say(4, output),
				say(6, started), condenseUI(8, "c1")},
			api: []messages.APIMessage{condensed("c1", user(1)), condensed("c1", toolUse(2, "tu1")),
				condensed("c1", toolResult(5, "tu1")), summary(7, "c1")},
			ts:        4,
			opts:      Options{SkipCleanup: true},
			wantUI:    []int64{1, 2, 3},
			wantAPI:   []apiWant{{ts: 1, condenseParent: "c1"}, {ts: 2, condenseParent: "c1", blocks: 2}},
			effective: []int64{1, 2}, // dangling tags hide nothing; Effective drops the orphan tool_use
		},
		{
			name: "cleanup drops a tool_use left without its tool_result",
			ui: []messages.UIMessage{say(1, text), say(2, text), ask(3, messages.AskTool), say(4, output),
				say(6, started), condenseUI(8, "c1")},
			api: []messages.APIMessage{condensed("c1", user(1)), condensed("c1", toolUse(2, "tu1")),
				condensed("c1", toolResult(5, "tu1")), summary(7, "c1")},
			ts:        4,
			wantUI:    []int64{1, 2, 3},
			wantAPI:   []apiWant{{ts: 1}, {ts: 2, blocks: 1}},
			effective: []int64{1, 2},
		},
		{
			name: "cleanup drops a tool_result whose tool_use is gone and a message left empty",
			ui:   []messages.UIMessage{say(1, text), say(3, text)},
			api: []messages.APIMessage{user(1), toolResult(2, "ghost"),
				{Role: messages.RoleUser, TS: 3, Content: []messages.ContentBlock{
					{Type: messages.BlockToolResult, ToolUseID: "ghost2"}, {Type: messages.BlockText, Text: "and"}}},
				assistant(4)},
			ts:      3,
			wantUI:  []int64{1},
			wantAPI: []apiWant{{ts: 1}},
		},
		{
			name:    "API messages without ts are kept",
			ui:      []messages.UIMessage{say(1, text), say(3, feedback)},
			api:     []messages.APIMessage{user(1), assistant(0), user(3)},
			ts:      3,
			wantUI:  []int64{1},
			wantAPI: []apiWant{{ts: 1}, {ts: 0}},
		},
		{
			// The user typed feedback (UI 5) while the answer was still
			// streaming; the assistant message was stamped (6) after it and
			// the feedback's API message (7) after that. Rewinding to the
			// feedback must keep the answer.
			name: "assistant after user_feedback survives",
			ui: []messages.UIMessage{say(1, text), say(3, started), say(4, text), say(5, feedback),
				say(8, started)},
			api:     []messages.APIMessage{user(2), assistant(6), user(7)},
			ts:      5,
			wantUI:  []int64{1, 3, 4},
			wantAPI: []apiWant{{ts: 2}, {ts: 6}},
		},
		{
			// Same race, but the feedback never reached the API history (a
			// crash): no user message at or after the cutoff, so the cutoff
			// falls back to the ts itself and the assistant message goes.
			name:    "assistant after user_feedback: fallback when no later user message",
			ui:      []messages.UIMessage{say(1, text), say(3, started), say(4, text), say(5, feedback)},
			api:     []messages.APIMessage{user(2), assistant(6)},
			ts:      5,
			wantUI:  []int64{1, 3, 4},
			wantAPI: []apiWant{{ts: 2}},
		},
		{
			name:    "an API message with exactly the ts wins over the race rule",
			ui:      []messages.UIMessage{say(1, text), say(5, feedback), say(8, text)},
			api:     []messages.APIMessage{user(1), assistant(5), assistant(6), user(7)},
			ts:      5,
			wantUI:  []int64{1},
			wantAPI: []apiWant{{ts: 1}},
		},
		{
			name:    "summaries and markers are not user messages for the race rule",
			ui:      []messages.UIMessage{say(1, text), say(5, feedback), condenseUI(9, "c1")},
			api:     []messages.APIMessage{user(2), assistant(6), summary(8, "c9"), user(10)},
			ts:      5,
			wantUI:  []int64{1},
			wantAPI: []apiWant{{ts: 2}, {ts: 6}, {ts: 8}},
		},
		{
			name:      "include target at the end: nothing to do",
			ui:        []messages.UIMessage{say(1, text), say(3, text)},
			api:       []messages.APIMessage{user(1), assistant(2)},
			ts:        3,
			opts:      Options{IncludeTargetMessage: true},
			wantUI:    []int64{1, 3},
			wantAPI:   []apiWant{{ts: 1}, {ts: 2}},
			unchanged: true,
		},
		{
			name:    "empty API history",
			ui:      []messages.UIMessage{say(1, text), say(3, text)},
			ts:      3,
			wantUI:  []int64{1},
			wantAPI: []apiWant{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uiIn, apiIn := cloneUI(tt.ui), cloneAPI(tt.api)
			res := must(t)(RewindToTimestamp(tt.ui, tt.api, tt.ts, tt.opts))
			if !sameUI(tt.ui, uiIn) || !sameAPI(tt.api, apiIn) {
				t.Fatal("inputs were modified")
			}
			if got := uiTS(res.UI); !reflect.DeepEqual(got, tt.wantUI) {
				t.Errorf("UI = %v, want %v", got, tt.wantUI)
			}
			var got []apiWant
			for _, m := range res.API {
				w := apiWant{ts: m.TS, condenseParent: m.CondenseParent, truncationParent: m.TruncationParent}
				got = append(got, w)
			}
			want := make([]apiWant, len(tt.wantAPI))
			for i, w := range tt.wantAPI {
				want[i] = w
				if w.blocks != 0 && i < len(res.API) && len(res.API[i].Content) != w.blocks {
					t.Errorf("API[%d] has %d blocks, want %d", i, len(res.API[i].Content), w.blocks)
				}
				want[i].blocks = 0
			}
			if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
				t.Errorf("API =\n %+v\nwant\n %+v", got, want)
			}
			if tt.effective != nil {
				if got := apiTS(messages.Effective(res.API)); !reflect.DeepEqual(got, tt.effective) {
					t.Errorf("Effective = %v, want %v", got, tt.effective)
				}
			}
			if res.Changed == tt.unchanged {
				t.Errorf("Changed = %v", res.Changed)
			}
			if err := toolPairingErr(messages.Effective(res.API)); err != nil {
				t.Error(err)
			}
			// RewindToIndex at the same place agrees.
			idx := -1
			for i, m := range tt.ui {
				if m.TS == tt.ts {
					idx = i
				}
			}
			byIdx := must(t)(RewindToIndex(tt.ui, tt.api, idx, tt.opts))
			if !sameResult(byIdx, res) {
				t.Errorf("RewindToIndex(%d) = %+v, RewindToTimestamp = %+v", idx, byIdx, res)
			}
		})
	}
}

func TestRewindRemovedIDs(t *testing.T) {
	ui := []messages.UIMessage{say(1, messages.SayText), condenseUI(3, "c1"), truncUI(5, "t1", 2), condenseUI(7, "c2")}
	api := []messages.APIMessage{condensed("c1", user(1)), summary(2, "c1"), marker(4, "t1"), summary(6, "c2")}
	res := must(t)(RewindToTimestamp(ui, api, 3, Options{}))
	if !reflect.DeepEqual(res.RemovedCondenseIDs, []string{"c1", "c2"}) || !reflect.DeepEqual(res.RemovedTruncationIDs, []string{"t1"}) {
		t.Fatalf("removed ids = %v %v", res.RemovedCondenseIDs, res.RemovedTruncationIDs)
	}
	if res.APICutoff != 3 {
		t.Fatalf("APICutoff = %d", res.APICutoff)
	}
	if got := apiTS(res.API); !reflect.DeepEqual(got, []int64{1}) || res.API[0].CondenseParent != "" {
		t.Fatalf("API = %v %+v", got, res.API)
	}
}

func TestRewindErrors(t *testing.T) {
	ui := []messages.UIMessage{say(10, messages.SayText), say(20, messages.SayText)}
	api := []messages.APIMessage{user(10)}

	_, err := RewindToTimestamp(ui, api, 15, Options{})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "15") {
		t.Fatalf("missing ts: err = %v", err)
	}
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.TS != 15 {
		t.Fatalf("errors.As: %v", err)
	}
	if _, err := RewindToTimestamp(nil, nil, 1, Options{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("empty histories: err = %v", err)
	}
	for _, i := range []int{-1, 3} {
		if _, err := RewindToIndex(ui, api, i, Options{}); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("index %d: err = %v", i, err)
		}
	}
}

func TestRewindEmptyAndEnd(t *testing.T) {
	res := must(t)(RewindToIndex(nil, nil, 0, Options{}))
	if res.Changed || len(res.UI) != 0 || len(res.API) != 0 {
		t.Fatalf("empty: %+v", res)
	}
	// Rewinding to the end is a no-op even on a history cleanup would change.
	ui := []messages.UIMessage{say(1, messages.SayText), say(3, messages.SayText)}
	api := []messages.APIMessage{user(1), condensed("gone", toolUse(2, "pending"))}
	res = must(t)(RewindToIndex(ui, api, len(ui), Options{}))
	if res.Changed || !sameUI(res.UI, ui) || !sameAPI(res.API, api) {
		t.Fatalf("end: %+v", res)
	}
	// The result does not alias the input.
	res.UI[0].Text = "edited"
	res.API[0] = assistant(99)
	if ui[0].Text == "edited" || api[0].TS == 99 {
		t.Fatal("result aliases the input")
	}
}
