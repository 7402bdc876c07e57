package messages

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

func txt(role Role, ts int64, s string) APIMessage {
	return APIMessage{Role: role, TS: ts, Content: []ContentBlock{{Type: BlockText, Text: s}}}
}

func use(ts int64, ids ...string) APIMessage {
	m := APIMessage{Role: RoleAssistant, TS: ts}
	for _, id := range ids {
		m.Content = append(m.Content, ContentBlock{Type: BlockToolUse, ID: id, Name: "execute_code", Input: json.RawMessage(`{}`)})
	}
	return m
}

func result(ts int64, ids ...string) APIMessage {
	m := APIMessage{Role: RoleUser, TS: ts}
	for _, id := range ids {
		m.Content = append(m.Content, ContentBlock{Type: BlockToolResult, ToolUseID: id, Content: []ContentBlock{{Type: BlockText, Text: "ok"}}})
	}
	return m
}

// conv is u1 a2 u3 a4 u5 a6 u7.
func conv() []APIMessage {
	return []APIMessage{
		txt(RoleUser, 1, "task"), txt(RoleAssistant, 2, "a2"), txt(RoleUser, 3, "u3"),
		txt(RoleAssistant, 4, "a4"), txt(RoleUser, 5, "u5"), txt(RoleAssistant, 6, "a6"), txt(RoleUser, 7, "u7"),
	}
}

func deepCopy(t *testing.T, api []APIMessage) []APIMessage {
	t.Helper()
	data, err := json.Marshal(api)
	if err != nil {
		t.Fatal(err)
	}
	var out []APIMessage
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func tsOf(api []APIMessage) []int64 {
	out := []int64{}
	for _, m := range api {
		out = append(out, m.TS)
	}
	return out
}

func TestCondense(t *testing.T) {
	in := conv()
	orig := deepCopy(t, in)
	out, err := Condense(in, CondenseSpec{ID: "c1", Summary: "so far", TS: 8})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, orig) {
		t.Fatal("Condense modified its input")
	}
	if len(out) != len(in)+1 {
		t.Fatalf("len = %d", len(out))
	}
	for i, m := range out[:len(in)] {
		if m.CondenseParent != "c1" {
			t.Errorf("out[%d].CondenseParent = %q", i, m.CondenseParent)
		}
	}
	s := out[len(in)]
	if !s.IsSummary || s.CondenseID != "c1" || s.Role != RoleUser || s.TS != 8 || s.PlainText() != "so far" {
		t.Fatalf("summary = %+v", s)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := tsOf(Effective(out)); !reflect.DeepEqual(got, []int64{8}) {
		t.Fatalf("Effective = %v, want [8]", got)
	}

	// A second condense nests: the first summary and the messages after it
	// are covered by c2, the messages under c1 stay under c1.
	out = append(out, txt(RoleAssistant, 9, "a9"), txt(RoleUser, 10, "u10"))
	out2, err := Condense(out, CondenseSpec{ID: "c2", Summary: "more", TS: 11})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"c1", "c1", "c1", "c1", "c1", "c1", "c1", "c2", "c2", "c2", ""}
	for i, m := range out2 {
		if m.CondenseParent != want[i] {
			t.Errorf("out2[%d].CondenseParent = %q, want %q", i, m.CondenseParent, want[i])
		}
	}
	if got := tsOf(Effective(out2)); !reflect.DeepEqual(got, []int64{11}) {
		t.Fatalf("Effective = %v, want [11]", got)
	}
	// Without the c2 summary the c1 summary and what followed it come back.
	if got := tsOf(Effective(out2[:len(out2)-1])); !reflect.DeepEqual(got, []int64{8, 9, 10}) {
		t.Fatalf("Effective without c2 = %v, want [8 9 10]", got)
	}

	// Dangling parents (their summary is gone) are re-tagged.
	dangling := conv()
	dangling[2].CondenseParent = "gone"
	out3, err := Condense(dangling, CondenseSpec{ID: "c3", Summary: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if out3[2].CondenseParent != "c3" {
		t.Fatalf("dangling parent kept: %q", out3[2].CondenseParent)
	}
}

func TestCondenseErrors(t *testing.T) {
	withSummary, _ := Condense(conv(), CondenseSpec{ID: "c1", Summary: "s"})
	tests := []struct {
		name string
		api  []APIMessage
		spec CondenseSpec
	}{
		{"empty id", conv(), CondenseSpec{Summary: "s"}},
		{"empty summary", conv(), CondenseSpec{ID: "c"}},
		{"duplicate id", withSummary, CondenseSpec{ID: "c1", Summary: "s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Condense(tt.api, tt.spec); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	in := conv()
	orig := deepCopy(t, in)
	out, n, err := Truncate(in, TruncateSpec{ID: "t1", Fraction: 0.5, TS: 99})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, orig) {
		t.Fatal("Truncate modified its input")
	}
	// 7 visible: floor(6*0.5) = 3, rounded down to even = 2: a2 and u3 hidden.
	if n != 2 {
		t.Fatalf("removed %d, want 2", n)
	}
	if got := tsOf(out); !reflect.DeepEqual(got, []int64{1, 2, 3, 3, 4, 5, 6, 7}) {
		t.Fatalf("ts = %v", got)
	}
	mk := out[3]
	if !mk.IsTruncationMarker || mk.TruncationID != "t1" || mk.Role != RoleUser || mk.PlainText() != "[Sliding window truncation: 2 messages hidden to reduce context]" {
		t.Fatalf("marker = %+v", mk)
	}
	for i, m := range out {
		hiddenWant := i == 1 || i == 2
		if (m.TruncationParent == "t1") != hiddenWant {
			t.Errorf("out[%d].TruncationParent = %q", i, m.TruncationParent)
		}
	}
	if got := tsOf(Effective(out)); !reflect.DeepEqual(got, []int64{1, 3, 4, 5, 6, 7}) {
		t.Fatalf("Effective = %v", got)
	}

	// A second truncation counts only the visible messages: 1 a4 u5 a6 u7.
	out2, n, err := Truncate(out, TruncateSpec{ID: "t2", Fraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Fatalf("second truncation removed %d, want 4", n)
	}
	if got := tsOf(Effective(out2)); !reflect.DeepEqual(got, []int64{1, 3, 0}) {
		// marker t1 (ts 3) stays visible; marker t2 goes at the end with spec.TS (0).
		t.Fatalf("Effective = %v", got)
	}

	// Nothing to hide: a copy, no marker.
	out3, n, err := Truncate(conv()[:2], TruncateSpec{ID: "t3", Fraction: 1})
	if err != nil || n != 0 || len(out3) != 2 {
		t.Fatalf("Truncate of 2 = %v, %d, %v", tsOf(out3), n, err)
	}
}

func TestTruncateAfterSummary(t *testing.T) {
	api, _ := Condense(conv(), CondenseSpec{ID: "c1", Summary: "s", TS: 8})
	api = append(api, txt(RoleAssistant, 9, "a9"), txt(RoleUser, 10, "u10"), txt(RoleAssistant, 11, "a11"))
	out, n, err := Truncate(api, TruncateSpec{ID: "t1", Fraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Visible: summary(8) 9 10 11; the summary is first and kept; 3 -> 2 hidden.
	if n != 2 {
		t.Fatalf("removed %d, want 2", n)
	}
	if got := tsOf(Effective(out)); !reflect.DeepEqual(got, []int64{8, 10, 11}) {
		t.Fatalf("Effective = %v, want [8 10 11]", got)
	}
	for i, m := range out[:7] {
		if m.TruncationParent != "" {
			t.Errorf("condensed message %d tagged too", i)
		}
	}
}

func TestTruncateErrors(t *testing.T) {
	withMarker, _, _ := Truncate(conv(), TruncateSpec{ID: "t1", Fraction: 1})
	for _, tt := range []struct {
		name string
		api  []APIMessage
		spec TruncateSpec
	}{
		{"empty id", conv(), TruncateSpec{Fraction: 0.5}},
		{"zero fraction", conv(), TruncateSpec{ID: "t", Fraction: 0}},
		{"fraction above one", conv(), TruncateSpec{ID: "t", Fraction: 1.5}},
		{"NaN fraction", conv(), TruncateSpec{ID: "t", Fraction: math.NaN()}},
		{"duplicate id", withMarker, TruncateSpec{ID: "t1", Fraction: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := Truncate(tt.api, tt.spec); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestEffectiveToolPairing(t *testing.T) {
	textAndUse := use(4, "t2")
	textAndUse.Content = append([]ContentBlock{{Type: BlockText, Text: "let me"}}, textAndUse.Content...)
	tests := []struct {
		name    string
		api     []APIMessage
		wantTS  []int64
		wantLen map[int]int // index in Effective -> number of blocks
	}{
		{"pairs kept", []APIMessage{txt(RoleUser, 1, "go"), use(2, "t1"), result(3, "t1")}, []int64{1, 2, 3}, nil},
		{"trailing tool_use dropped", []APIMessage{txt(RoleUser, 1, "go"), use(2, "t1")}, []int64{1}, nil},
		{"text survives its tool_use", []APIMessage{txt(RoleUser, 1, "go"), textAndUse}, []int64{1, 4}, map[int]int{1: 1}},
		{"orphan tool_result dropped", []APIMessage{txt(RoleUser, 1, "go"), result(3, "zz")}, []int64{1}, nil},
		{"pair must be adjacent", []APIMessage{use(2, "t1"), txt(RoleUser, 3, "x"), result(4, "t1")}, []int64{3}, nil},
		{"partial pairing", []APIMessage{use(2, "a", "b"), result(3, "a")}, []int64{2, 3}, map[int]int{0: 1, 1: 1}},
		{"result before summary's cover", func() []APIMessage {
			api, _ := Condense([]APIMessage{txt(RoleUser, 1, "go"), use(2, "t1")}, CondenseSpec{ID: "c", Summary: "s", TS: 3})
			return append(api, result(4, "t1"), txt(RoleAssistant, 5, "done"))
		}(), []int64{3, 5}, nil},
		{"dangling parents hide nothing", []APIMessage{
			{Role: RoleUser, TS: 1, CondenseParent: "gone", Content: []ContentBlock{{Type: BlockText, Text: "a"}}},
			{Role: RoleAssistant, TS: 2, TruncationParent: "gone", Content: []ContentBlock{{Type: BlockText, Text: "b"}}},
		}, []int64{1, 2}, nil},
		{"empty", nil, []int64{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := deepCopy(t, tt.api)
			eff := Effective(tt.api)
			if got := tsOf(eff); !reflect.DeepEqual(got, tt.wantTS) {
				t.Fatalf("Effective ts = %v, want %v", got, tt.wantTS)
			}
			for i, n := range tt.wantLen {
				if len(eff[i].Content) != n {
					t.Errorf("Effective[%d] has %d blocks, want %d", i, len(eff[i].Content), n)
				}
			}
			if len(tt.api) > 0 && !reflect.DeepEqual(tt.api, orig) {
				t.Fatal("Effective modified its input")
			}
			if again := Effective(eff); !reflect.DeepEqual(tsOf(again), tsOf(eff)) {
				t.Fatalf("Effective is not idempotent: %v then %v", tsOf(eff), tsOf(again))
			}
		})
	}
}
