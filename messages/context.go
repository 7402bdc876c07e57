package messages

import (
	"errors"
	"fmt"
	"math"
)

// This file is the context bookkeeping: condensing and sliding-window
// truncation tag API messages as hidden instead of deleting them, so a rewind
// can bring them back. When to condense or truncate is the agent's decision.

// CondenseSpec describes one condense operation.
type CondenseSpec struct {
	// ID is the condense id, shared with the UI condense_context message.
	// Required and unique within the history.
	ID string
	// Summary is the text of the summary message the model will see instead
	// of the covered messages.
	Summary string
	// TS is the summary message's timestamp (0 = none). Make it with the
	// session's Clock before the UI condense_context message, so that a
	// rewind that keeps the condense_context message keeps the summary too.
	TS int64
}

// Condense hides every currently visible API message behind a new summary:
// each message whose CondenseParent is empty or points at a summary that is
// not in api gets CondenseParent = spec.ID, and a user message
// {IsSummary, CondenseID: spec.ID} holding spec.Summary is appended. Messages
// already hidden by an existing summary keep their parent, so condenses nest:
// removing the newer summary (by a rewind) uncovers the older one.
// It returns a new slice; api is not modified.
func Condense(api []APIMessage, spec CondenseSpec) ([]APIMessage, error) {
	if spec.ID == "" {
		return nil, errors.New("messages: condense: empty id")
	}
	if spec.Summary == "" {
		return nil, fmt.Errorf("messages: condense %s: empty summary", spec.ID)
	}
	summaries, _ := contextIDs(api)
	if summaries[spec.ID] {
		return nil, fmt.Errorf("messages: condense %s: a summary with this id already exists", spec.ID)
	}
	out := make([]APIMessage, len(api), len(api)+1)
	copy(out, api)
	for i := range out {
		if p := out[i].CondenseParent; p == "" || !summaries[p] {
			out[i].CondenseParent = spec.ID
		}
	}
	out = append(out, APIMessage{
		Role:       RoleUser,
		Content:    []ContentBlock{{Type: BlockText, Text: spec.Summary}},
		TS:         spec.TS,
		IsSummary:  true,
		CondenseID: spec.ID,
	})
	return out, nil
}

// TruncateSpec describes one sliding-window truncation.
type TruncateSpec struct {
	// ID is the truncation id, shared with the UI sliding_window_truncation
	// message. Required and unique within the history.
	ID string
	// Fraction of the visible messages after the first to hide, in (0, 1].
	// The count is rounded down to an even number so user/assistant turns
	// stay paired.
	Fraction float64
	// TS is the marker's timestamp when no visible message follows the
	// hidden ones; otherwise the marker is stamped one millisecond before
	// the first message kept, as Roo-Code does.
	TS int64
}

// TruncationMarkerText is the text of the marker Truncate inserts; %d is
// the number of messages hidden.
const TruncationMarkerText = "[Sliding window truncation: %d messages hidden to reduce context]"

// Truncate hides the oldest visible API messages. The visible messages are
// those [Effective] would consider: from the last summary on, not hidden by
// a summary or marker, and not markers themselves. The first visible message
// (the task, or the summary) is always kept; of the rest,
// floor((visible-1)*Fraction) rounded down to even are tagged with
// TruncationParent = spec.ID, and a user marker {IsTruncationMarker,
// TruncationID: spec.ID} is inserted before the first visible message kept.
//
// It returns the new slice and how many messages were hidden. When that
// count is 0 the history is returned unchanged (a copy) and no marker is
// inserted. api is not modified.
func Truncate(api []APIMessage, spec TruncateSpec) ([]APIMessage, int, error) {
	if spec.ID == "" {
		return nil, 0, errors.New("messages: truncate: empty id")
	}
	if !(spec.Fraction > 0 && spec.Fraction <= 1) || math.IsNaN(spec.Fraction) {
		return nil, 0, fmt.Errorf("messages: truncate %s: fraction %v not in (0, 1]", spec.ID, spec.Fraction)
	}
	summaries, markers := contextIDs(api)
	if markers[spec.ID] {
		return nil, 0, fmt.Errorf("messages: truncate %s: a marker with this id already exists", spec.ID)
	}
	start := max(lastSummary(api, summaries, markers), 0)
	var visible []int
	for i := start; i < len(api); i++ {
		m := &api[i]
		if m.IsTruncationMarker || hidden(m, summaries, markers) {
			continue
		}
		visible = append(visible, i)
	}
	out := make([]APIMessage, len(api), len(api)+1)
	copy(out, api)
	n := 0
	if len(visible) > 1 {
		n = int(float64(len(visible)-1) * spec.Fraction)
		n -= n % 2
	}
	if n <= 0 {
		return out, 0, nil
	}
	for _, i := range visible[1 : n+1] {
		out[i].TruncationParent = spec.ID
	}
	at, ts := len(out), spec.TS
	if n+1 < len(visible) {
		at = visible[n+1]
		if t := api[at].TS; t > 1 {
			ts = t - 1
		}
	}
	marker := APIMessage{
		Role:               RoleUser,
		Content:            []ContentBlock{{Type: BlockText, Text: fmt.Sprintf(TruncationMarkerText, n)}},
		TS:                 ts,
		IsTruncationMarker: true,
		TruncationID:       spec.ID,
	}
	out = append(out, APIMessage{})
	copy(out[at+1:], out[at:])
	out[at] = marker
	return out, n, nil
}

// Effective returns the messages actually sent to the model:
//
//   - from the last summary on (the summary stands for everything before it);
//   - without messages hidden by a summary or a marker present in api (a
//     CondenseParent or TruncationParent naming an id that is not in api
//     hides nothing);
//   - with tool_use and tool_result blocks kept only in pairs: a tool_use
//     needs a tool_result with its id in the next message, a tool_result
//     needs the tool_use in the previous one; a message left without blocks
//     is dropped.
//
// Messages that need no change are shared by value with api; api itself is
// not modified.
func Effective(api []APIMessage) []APIMessage {
	summaries, markers := contextIDs(api)
	start := max(lastSummary(api, summaries, markers), 0)
	vis := make([]APIMessage, 0, len(api)-start)
	for i := start; i < len(api); i++ {
		if !hidden(&api[i], summaries, markers) {
			vis = append(vis, api[i])
		}
	}
	return PairTools(vis)
}

// PairTools returns msgs without the tool_use blocks whose tool_result is not
// in the next message and the tool_result blocks whose tool_use is not in the
// previous message, dropping messages left empty. It is the last step of
// [Effective]; msgs is not modified.
func PairTools(msgs []APIMessage) []APIMessage {
	out := make([]APIMessage, 0, len(msgs))
	for i := range msgs {
		m := msgs[i]
		var kept []ContentBlock
		changed := false
		for j := range m.Content {
			b := &m.Content[j]
			drop := (b.Type == BlockToolUse && !(i+1 < len(msgs) && hasToolBlock(&msgs[i+1], BlockToolResult, b.ID))) ||
				(b.Type == BlockToolResult && !(i > 0 && hasToolBlock(&msgs[i-1], BlockToolUse, b.ToolUseID)))
			if drop && !changed {
				changed = true
				kept = append(make([]ContentBlock, 0, len(m.Content)), m.Content[:j]...)
			}
			if changed && !drop {
				kept = append(kept, *b)
			}
		}
		if changed {
			if len(kept) == 0 {
				continue
			}
			m.Content = kept
		}
		out = append(out, m)
	}
	return out
}

// hasToolBlock reports whether m has a tool_use (t = BlockToolUse) with the
// given id or a tool_result (t = BlockToolResult) for it.
func hasToolBlock(m *APIMessage, t BlockType, id string) bool {
	for j := range m.Content {
		b := &m.Content[j]
		if b.Type != t {
			continue
		}
		if (t == BlockToolUse && b.ID == id) || (t == BlockToolResult && b.ToolUseID == id) {
			return true
		}
	}
	return false
}

// contextIDs returns the condense ids of the summaries and the truncation ids
// of the markers in api.
func contextIDs(api []APIMessage) (summaries, markers map[string]bool) {
	summaries, markers = map[string]bool{}, map[string]bool{}
	for _, m := range api {
		if m.IsSummary && m.CondenseID != "" {
			summaries[m.CondenseID] = true
		}
		if m.IsTruncationMarker && m.TruncationID != "" {
			markers[m.TruncationID] = true
		}
	}
	return summaries, markers
}

func hidden(m *APIMessage, summaries, markers map[string]bool) bool {
	return (m.CondenseParent != "" && summaries[m.CondenseParent]) ||
		(m.TruncationParent != "" && markers[m.TruncationParent])
}

// lastSummary returns the index of the last summary in api that is not
// itself hidden, or -1.
func lastSummary(api []APIMessage, summaries, markers map[string]bool) int {
	for i := len(api) - 1; i >= 0; i-- {
		if api[i].IsSummary && !hidden(&api[i], summaries, markers) {
			return i
		}
	}
	return -1
}
