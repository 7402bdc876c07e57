package messages

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func intPtr(i int) *int { return &i }

func fullUI() UIMessage {
	return UIMessage{
		TS: 1700000000123, Type: TypeSay, Say: SayCondenseContext,
		Text: "condensed", Images: []string{"data:image/png;base64,AAAA"},
		Partial: false, Reasoning: "because", ConversationHistoryIndex: intPtr(4),
		Checkpoint:        map[string]any{"hash": "abc", "n": 2.0},
		ProgressStatus:    &ProgressStatus{Icon: "sync", Text: "working"},
		ContextCondense:   &ContextCondense{CondenseID: "c1", Summary: "sum", PrevContextTokens: 100, NewContextTokens: 10},
		ContextTruncation: &ContextTruncation{TruncationID: "t1", MessagesRemoved: 2, PrevContextTokens: 90},
		IsProtected:       true, IsAnswered: true,
	}
}

func TestUIJSONRoundTrip(t *testing.T) {
	msgs := []UIMessage{
		fullUI(),
		{TS: 1, Type: TypeAsk, Ask: AskFollowup, Text: "which?"},
		{TS: 2, Type: TypeSay, Say: SayCellExecuted, Text: "print(1)"},
		{TS: 3, Type: TypeSay, Say: SayCondenseContext, Partial: true},
	}
	for _, m := range msgs {
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeUI(data)
		if err != nil {
			t.Fatalf("DecodeUI(%s): %v", data, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", data, got, m)
		}
	}
}

func TestUIJSONFieldNames(t *testing.T) {
	data, err := json.Marshal(fullUI())
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ts", "type", "say", "text", "images", "reasoning", "conversationHistoryIndex",
		"checkpoint", "progressStatus", "contextCondense", "contextTruncation", "isProtected", "isAnswered"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("key %q missing from %s", k, data)
		}
	}
	for _, k := range []string{`"condenseId"`, `"prevContextTokens"`, `"newContextTokens"`, `"truncationId"`, `"messagesRemoved"`} {
		if !strings.Contains(string(data), k) {
			t.Errorf("%s missing from %s", k, data)
		}
	}
	// Empty optional fields are omitted.
	data, _ = json.Marshal(UIMessage{TS: 5, Type: TypeSay, Say: SayText})
	if got, want := string(data), `{"ts":5,"type":"say","say":"text"}`; got != want {
		t.Errorf("minimal message = %s, want %s", got, want)
	}
}

func TestUIValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*UIMessage)
		field string // "" = valid
	}{
		{"valid say", func(m *UIMessage) {}, ""},
		{"valid ask", func(m *UIMessage) { m.Type, m.Say, m.Ask = TypeAsk, "", AskTool }, ""},
		{"zero ts", func(m *UIMessage) { m.TS = 0 }, "ts"},
		{"negative ts", func(m *UIMessage) { m.TS = -3 }, "ts"},
		{"missing type", func(m *UIMessage) { m.Type = "" }, "type"},
		{"unknown type", func(m *UIMessage) { m.Type = "shout" }, "type"},
		{"ask without kind", func(m *UIMessage) { m.Type, m.Say = TypeAsk, "" }, "ask"},
		{"ask with say", func(m *UIMessage) { m.Type, m.Ask = TypeAsk, AskTool }, "say"},
		{"unknown ask", func(m *UIMessage) { m.Type, m.Say, m.Ask = TypeAsk, "", "browser_action_launch" }, "ask"},
		{"say without kind", func(m *UIMessage) { m.Say = "" }, "say"},
		{"unknown say", func(m *UIMessage) { m.Say = "shell_integration_warning" }, "say"},
		{"say with ask", func(m *UIMessage) { m.Ask = AskTool }, "ask"},
		{"empty image", func(m *UIMessage) { m.Images = []string{"x", ""} }, "images[1]"},
		{"negative history index", func(m *UIMessage) { m.ConversationHistoryIndex = intPtr(-1) }, "conversationHistoryIndex"},
		{"condense without id", func(m *UIMessage) { m.ContextCondense.CondenseID = "" }, "contextCondense.condenseId"},
		{"condense negative tokens", func(m *UIMessage) { m.ContextCondense.NewContextTokens = -1 }, "contextCondense.newContextTokens"},
		{"condense_context without payload", func(m *UIMessage) { m.ContextCondense = nil }, "contextCondense"},
		{"truncation without id", func(m *UIMessage) { m.ContextTruncation.TruncationID = "" }, "contextTruncation.truncationId"},
		{"truncation negative removed", func(m *UIMessage) { m.ContextTruncation.MessagesRemoved = -2 }, "contextTruncation.messagesRemoved"},
		{"sliding_window_truncation without payload", func(m *UIMessage) {
			m.Say, m.ContextTruncation = SaySlidingWindowTruncation, nil
		}, "contextTruncation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := fullUI()
			cc, ct := *m.ContextCondense, *m.ContextTruncation
			m.ContextCondense, m.ContextTruncation = &cc, &ct
			tt.edit(&m)
			assertFieldError(t, m.Validate(), tt.field)
		})
	}
}

func assertFieldError(t *testing.T, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want one naming %q", field)
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v carries no *FieldError", err)
	}
	if fe.Field != field {
		t.Fatalf("error names field %q, want %q (%v)", fe.Field, field, err)
	}
	if !strings.Contains(err.Error(), field) {
		t.Fatalf("error text %q does not name %q", err, field)
	}
}

func TestDecodeUIStrict(t *testing.T) {
	tests := []struct {
		name, json string
		field      string // FieldError expected, or "" for a decode error
		contains   string
	}{
		{"unknown field", `{"ts":1,"type":"say","say":"text","apiProtocol":"openai"}`, "", "apiProtocol"},
		{"trailing data", `{"ts":1,"type":"say","say":"text"} {}`, "", "trailing"},
		{"wrong type", `{"ts":"1","type":"say","say":"text"}`, "", "ts"},
		{"fractional ts", `{"ts":1.5,"type":"say","say":"text"}`, "", "ts"},
		{"empty", `  `, "", "empty"},
		{"not an object", `[1]`, "", "array"},
		{"invalid after decode", `{"ts":1,"type":"say"}`, "say", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeUI([]byte(tt.json))
			if err == nil {
				t.Fatal("no error")
			}
			if tt.field != "" {
				assertFieldError(t, err, tt.field)
				return
			}
			if fe := (*FieldError)(nil); errors.As(err, &fe) {
				t.Fatalf("got a field error %v, want a decode error", err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("error %q does not mention %q", err, tt.contains)
			}
		})
	}
}

func TestAskClasses(t *testing.T) {
	want := map[Ask]AskClass{
		AskFollowup: AskClassInteractive, AskCommand: AskClassInteractive, AskTool: AskClassInteractive,
		AskUseMCPServer: AskClassInteractive, AskCommandOutput: AskClassNonBlocking,
		AskCompletionResult: AskClassIdle, AskAPIReqFailed: AskClassIdle, AskResumeCompletedTask: AskClassIdle,
		AskMistakeLimitReached: AskClassIdle, AskAutoApprovalMaxReqReached: AskClassIdle,
		AskResumeTask: AskClassResumable,
	}
	if len(want) != len(Asks) {
		t.Fatalf("table covers %d asks, package defines %d", len(want), len(Asks))
	}
	for _, a := range Asks {
		t.Run(string(a), func(t *testing.T) {
			c := ClassOf(a)
			if c != want[a] {
				t.Fatalf("ClassOf = %v, want %v", c, want[a])
			}
			checks := []struct {
				got  bool
				want AskClass
			}{{a.IsIdle(), AskClassIdle}, {a.IsResumable(), AskClassResumable},
				{a.IsInteractive(), AskClassInteractive}, {a.IsNonBlocking(), AskClassNonBlocking}}
			for _, ch := range checks {
				if ch.got != (c == ch.want) {
					t.Errorf("helper for %v = %v", ch.want, ch.got)
				}
			}
			if a.Blocks() == (c == AskClassNonBlocking) {
				t.Errorf("Blocks = %v for class %v", a.Blocks(), c)
			}
			if !a.Known() {
				t.Error("not Known")
			}
			m := UIMessage{TS: 1, Type: TypeAsk, Ask: a}
			if m.AskClass() != c {
				t.Errorf("UIMessage.AskClass = %v", m.AskClass())
			}
		})
	}
	if ClassOf("nope") != AskClassUnknown || Ask("nope").Blocks() || Ask("nope").Known() {
		t.Error("unknown ask classified")
	}
	if (UIMessage{Type: TypeSay, Say: SayText}).AskClass() != AskClassUnknown {
		t.Error("say message has an ask class")
	}
	if AskClassNonBlocking.String() != "non-blocking" || AskClassUnknown.String() != "unknown" {
		t.Error("String")
	}
}

func TestFieldErrorUnwraps(t *testing.T) {
	err := UIMessage{}.Validate()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "ts" {
		t.Fatalf("errors.As: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "messages: invalid UI message") {
		t.Fatalf("error %q lacks its prefix", err)
	}
}
