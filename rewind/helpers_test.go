package rewind

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/agentkernel/agentkernel/messages"
)

// UI constructors.

func say(ts int64, kind messages.Say) messages.UIMessage {
	return messages.UIMessage{TS: ts, Type: messages.TypeSay, Say: kind, Text: fmt.Sprint(kind, ts)}
}

func ask(ts int64, kind messages.Ask) messages.UIMessage {
	return messages.UIMessage{TS: ts, Type: messages.TypeAsk, Ask: kind, Text: fmt.Sprint(kind, ts)}
}

func condenseUI(ts int64, id string) messages.UIMessage {
	m := say(ts, messages.SayCondenseContext)
	m.ContextCondense = &messages.ContextCondense{CondenseID: id, Summary: "summary " + id, PrevContextTokens: 1000, NewContextTokens: 100}
	return m
}

func truncUI(ts int64, id string, removed int) messages.UIMessage {
	m := say(ts, messages.SaySlidingWindowTruncation)
	m.ContextTruncation = &messages.ContextTruncation{TruncationID: id, MessagesRemoved: removed, PrevContextTokens: 1000}
	return m
}

// API constructors.

func text(role messages.Role, ts int64) messages.APIMessage {
	return messages.APIMessage{Role: role, TS: ts, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: fmt.Sprint(role, ts)}}}
}

func user(ts int64) messages.APIMessage      { return text(messages.RoleUser, ts) }
func assistant(ts int64) messages.APIMessage { return text(messages.RoleAssistant, ts) }

func toolUse(ts int64, ids ...string) messages.APIMessage {
	m := assistant(ts)
	for _, id := range ids {
		m.Content = append(m.Content, messages.ContentBlock{Type: messages.BlockToolUse, ID: id, Name: "execute_code", Input: json.RawMessage(`{"code":"1"}`)})
	}
	return m
}

func toolResult(ts int64, ids ...string) messages.APIMessage {
	m := messages.APIMessage{Role: messages.RoleUser, TS: ts}
	for _, id := range ids {
		m.Content = append(m.Content, messages.ContentBlock{Type: messages.BlockToolResult, ToolUseID: id,
			Content: []messages.ContentBlock{{Type: messages.BlockText, Text: "out " + id}}})
	}
	return m
}

func summary(ts int64, id string) messages.APIMessage {
	m := user(ts)
	m.IsSummary, m.CondenseID = true, id
	return m
}

func marker(ts int64, id string) messages.APIMessage {
	m := user(ts)
	m.IsTruncationMarker, m.TruncationID = true, id
	return m
}

func condensed(id string, m messages.APIMessage) messages.APIMessage {
	m.CondenseParent = id
	return m
}

func truncated(id string, m messages.APIMessage) messages.APIMessage {
	m.TruncationParent = id
	return m
}

// Deep copies, to prove inputs are not modified.

func cloneUI(in []messages.UIMessage) []messages.UIMessage {
	if in == nil {
		return nil
	}
	out := make([]messages.UIMessage, len(in))
	for i, m := range in {
		if m.Images != nil {
			m.Images = append([]string(nil), m.Images...)
		}
		if m.ContextCondense != nil {
			c := *m.ContextCondense
			m.ContextCondense = &c
		}
		if m.ContextTruncation != nil {
			c := *m.ContextTruncation
			m.ContextTruncation = &c
		}
		out[i] = m
	}
	return out
}

func cloneBlocks(in []messages.ContentBlock) []messages.ContentBlock {
	if in == nil {
		return nil
	}
	out := make([]messages.ContentBlock, len(in))
	for i, b := range in {
		if b.Input != nil {
			b.Input = append(json.RawMessage(nil), b.Input...)
		}
		b.Content = cloneBlocks(b.Content)
		out[i] = b
	}
	return out
}

func cloneAPI(in []messages.APIMessage) []messages.APIMessage {
	if in == nil {
		return nil
	}
	out := make([]messages.APIMessage, len(in))
	for i, m := range in {
		m.Content = cloneBlocks(m.Content)
		out[i] = m
	}
	return out
}

// sameUI and sameAPI compare histories deeply, treating nil and empty as
// equal. (Hand-written: reflect.DeepEqual made the property test slow.)
func sameUI(a, b []messages.UIMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !uiEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

func uiEqual(x, y messages.UIMessage) bool {
	ptrEq := func(p, q any) bool { return reflect.DeepEqual(p, q) }
	return x.TS == y.TS && x.Type == y.Type && x.Ask == y.Ask && x.Say == y.Say && x.Text == y.Text &&
		slices.Equal(x.Images, y.Images) && x.Partial == y.Partial && x.Reasoning == y.Reasoning &&
		x.IsProtected == y.IsProtected && x.IsAnswered == y.IsAnswered &&
		(x.ConversationHistoryIndex == nil) == (y.ConversationHistoryIndex == nil) &&
		(x.ConversationHistoryIndex == nil || *x.ConversationHistoryIndex == *y.ConversationHistoryIndex) &&
		(x.ContextCondense == nil) == (y.ContextCondense == nil) &&
		(x.ContextCondense == nil || *x.ContextCondense == *y.ContextCondense) &&
		(x.ContextTruncation == nil) == (y.ContextTruncation == nil) &&
		(x.ContextTruncation == nil || *x.ContextTruncation == *y.ContextTruncation) &&
		(x.ProgressStatus == nil) == (y.ProgressStatus == nil) &&
		(x.ProgressStatus == nil || *x.ProgressStatus == *y.ProgressStatus) &&
		(len(x.Checkpoint) == 0 && len(y.Checkpoint) == 0 || ptrEq(x.Checkpoint, y.Checkpoint))
}

func sameAPI(a, b []messages.APIMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Role != y.Role || x.TS != y.TS || x.IsSummary != y.IsSummary || x.CondenseID != y.CondenseID ||
			x.CondenseParent != y.CondenseParent || x.IsTruncationMarker != y.IsTruncationMarker ||
			x.TruncationID != y.TruncationID || x.TruncationParent != y.TruncationParent ||
			!blocksEqual(x.Content, y.Content) {
			return false
		}
	}
	return true
}

func blocksEqual(a, b []messages.ContentBlock) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Text != y.Text || x.ID != y.ID || x.Name != y.Name ||
			!bytes.Equal(x.Input, y.Input) || x.ToolUseID != y.ToolUseID || x.IsError != y.IsError ||
			x.Thinking != y.Thinking || x.Signature != y.Signature ||
			(x.Source == nil) != (y.Source == nil) || (x.Source != nil && *x.Source != *y.Source) ||
			!blocksEqual(x.Content, y.Content) {
			return false
		}
	}
	return true
}

// sameResult compares two results deeply.
func sameResult(a, b Result) bool {
	return sameUI(a.UI, b.UI) && sameAPI(a.API, b.API) && a.Changed == b.Changed && a.APICutoff == b.APICutoff &&
		slices.Equal(a.RemovedCondenseIDs, b.RemovedCondenseIDs) && slices.Equal(a.RemovedTruncationIDs, b.RemovedTruncationIDs)
}

func uiTS(ui []messages.UIMessage) []int64 {
	out := []int64{}
	for _, m := range ui {
		out = append(out, m.TS)
	}
	return out
}

func apiTS(api []messages.APIMessage) []int64 {
	out := []int64{}
	for _, m := range api {
		out = append(out, m.TS)
	}
	return out
}

// toolPairingErr checks the invariant Effective must hold: every tool_use has
// its tool_result in the next message and every tool_result its tool_use in
// the previous one.
func toolPairingErr(api []messages.APIMessage) error {
	ids := func(m messages.APIMessage, t messages.BlockType) map[string]bool {
		s := map[string]bool{}
		for _, b := range m.Content {
			if b.Type == t {
				if t == messages.BlockToolUse {
					s[b.ID] = true
				} else {
					s[b.ToolUseID] = true
				}
			}
		}
		return s
	}
	for i, m := range api {
		for _, b := range m.Content {
			switch b.Type {
			case messages.BlockToolUse:
				if i+1 >= len(api) || !ids(api[i+1], messages.BlockToolResult)[b.ID] {
					return fmt.Errorf("message %d (ts %d): tool_use %s without its tool_result in the next message", i, m.TS, b.ID)
				}
			case messages.BlockToolResult:
				if i == 0 || !ids(api[i-1], messages.BlockToolUse)[b.ToolUseID] {
					return fmt.Errorf("message %d (ts %d): tool_result %s without its tool_use in the previous message", i, m.TS, b.ToolUseID)
				}
			}
		}
	}
	return nil
}

// must(t)(RewindTo…(…)) fails the test on an error.
func must(t *testing.T) func(Result, error) Result {
	return func(res Result, err error) Result {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
}
