package rewind

import (
	"errors"
	"fmt"
	"math"

	"github.com/agentkernel/agentkernel/messages"
)

// Options tune a rewind. The zero value removes the target message and cleans up.
type Options struct {
	// IncludeTargetMessage keeps the target message: only the messages after
	// it are removed from the UI history. (The API cutoff is still computed
	// from the target's ts, as in Roo-Code.)
	IncludeTargetMessage bool
	// SkipCleanup leaves dangling condenseParent/truncationParent tags and
	// orphaned tool_use/tool_result blocks in the API history. Orphaned
	// summaries and truncation markers are dropped either way.
	SkipCleanup bool
}

// Result is the outcome of a rewind.
type Result struct {
	// UI and API are the new histories: fresh slices, never the inputs
	// (see the package doc for what their messages share with the inputs).
	UI  []messages.UIMessage
	API []messages.APIMessage
	// Changed is false when UI and API equal the inputs.
	Changed bool
	// APICutoff is the ts from which API messages were removed (API
	// messages without ts are never removed by it); 0 when no cut was made.
	APICutoff int64
	// RemovedCondenseIDs and RemovedTruncationIDs are the ids carried by the
	// removed condense_context and sliding_window_truncation messages.
	RemovedCondenseIDs   []string
	RemovedTruncationIDs []string
}

// ErrNotFound is matched (errors.Is) by the error of a rewind to a ts that is
// not in the UI history.
var ErrNotFound = errors.New("rewind: message not found")

// NotFoundError reports a rewind target that is not in the UI history.
type NotFoundError struct{ TS int64 }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("rewind: no UI message with ts %d", e.TS)
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// RewindToTimestamp removes the UI message with the given ts and every UI
// message after it (with IncludeTargetMessage, only those after it), and the
// API messages that belong to them:
//
//  1. The UI cutoff is the index of ts (+1 with IncludeTargetMessage).
//  2. The condenseIds of removed condense_context messages and the
//     truncationIds of removed sliding_window_truncation messages are
//     collected, and the UI history is cut.
//  3. The API cutoff is ts itself if an API message has exactly that ts;
//     otherwise the ts of the first (earliest) API user message with ts >= ts
//     — an assistant message stamped after the user_feedback it answers must
//     survive — summaries and markers not counting as user messages;
//     otherwise ts. API messages without ts or with ts < the cutoff are kept.
//  4. Summaries and truncation markers whose ids were collected are dropped.
//  5. Unless SkipCleanup: condenseParent/truncationParent tags that point at
//     summaries/markers no longer present are cleared (those messages become
//     active again), and tool_use blocks without a later tool_result and
//     tool_result blocks without an earlier tool_use are dropped, as are
//     messages left without content.
//
// A ts that is not in the UI history is an error naming it (matching
// [ErrNotFound]) and an empty Result.
func RewindToTimestamp(ui []messages.UIMessage, api []messages.APIMessage, ts int64, opts Options) (Result, error) {
	idx := -1
	for i := range ui {
		if ui[i].TS == ts {
			idx = i
			break
		}
	}
	if idx < 0 {
		return Result{}, &NotFoundError{TS: ts}
	}
	cut := idx
	if opts.IncludeTargetMessage {
		cut++
	}
	return perform(ui, api, cut, ts, opts), nil
}

// RewindToIndex keeps ui[:i] and removes ui[i:], cutting the API history at
// ui[i].TS exactly as [RewindToTimestamp] does (IncludeTargetMessage keeps
// ui[i] too). i == len(ui) removes nothing and is a no-op: Changed is false
// and no cleanup runs. An i outside [0, len(ui)] is an error.
func RewindToIndex(ui []messages.UIMessage, api []messages.APIMessage, i int, opts Options) (Result, error) {
	if i < 0 || i > len(ui) {
		return Result{}, fmt.Errorf("rewind: index %d out of range [0, %d]", i, len(ui))
	}
	if i == len(ui) {
		return Result{UI: clone(ui), API: clone(api)}, nil
	}
	cut := i
	if opts.IncludeTargetMessage {
		cut++
	}
	return perform(ui, api, cut, ui[i].TS, opts), nil
}

func perform(ui []messages.UIMessage, api []messages.APIMessage, cut int, ts int64, opts Options) Result {
	res := Result{}
	// Step 2: ids carried by the removed UI messages.
	condenseIDs, truncationIDs := map[string]bool{}, map[string]bool{}
	for _, m := range ui[cut:] {
		if m.Say == messages.SayCondenseContext && m.ContextCondense != nil && m.ContextCondense.CondenseID != "" {
			if !condenseIDs[m.ContextCondense.CondenseID] {
				res.RemovedCondenseIDs = append(res.RemovedCondenseIDs, m.ContextCondense.CondenseID)
			}
			condenseIDs[m.ContextCondense.CondenseID] = true
		}
		if m.Say == messages.SaySlidingWindowTruncation && m.ContextTruncation != nil && m.ContextTruncation.TruncationID != "" {
			if !truncationIDs[m.ContextTruncation.TruncationID] {
				res.RemovedTruncationIDs = append(res.RemovedTruncationIDs, m.ContextTruncation.TruncationID)
			}
			truncationIDs[m.ContextTruncation.TruncationID] = true
		}
	}
	res.UI = clone(ui[:cut])

	// Step 3: the API cutoff.
	cutoff := apiCutoff(api, ts)
	res.APICutoff = cutoff

	// Steps 3 and 4: filter by ts, drop orphaned summaries and markers.
	out := make([]messages.APIMessage, 0, len(api))
	for _, m := range api {
		if m.TS != 0 && m.TS >= cutoff {
			continue
		}
		if m.IsSummary && condenseIDs[m.CondenseID] {
			continue
		}
		if m.IsTruncationMarker && truncationIDs[m.TruncationID] {
			continue
		}
		out = append(out, m)
	}
	apiChanged := len(out) != len(api)

	// Step 5: cleanup.
	if !opts.SkipCleanup {
		var changed bool
		out, changed = cleanup(out)
		apiChanged = apiChanged || changed
	}
	res.API = out
	res.Changed = cut < len(ui) || apiChanged
	return res
}

// apiCutoff implements step 3 of RewindToTimestamp.
func apiCutoff(api []messages.APIMessage, ts int64) int64 {
	firstUser := int64(math.MaxInt64)
	for _, m := range api {
		if m.TS == ts {
			return ts
		}
		if m.Role == messages.RoleUser && !m.IsSummary && !m.IsTruncationMarker && m.TS >= ts && m.TS < firstUser {
			firstUser = m.TS
		}
	}
	if firstUser != math.MaxInt64 {
		return firstUser
	}
	return ts
}

// cleanup clears dangling condenseParent/truncationParent tags and drops
// orphaned tool_use/tool_result blocks (and messages left empty). api is
// owned by the caller of cleanup and is reused; the messages' Content slices
// are shared with the original input, so they are replaced, never edited.
//
// A tool_use is kept when a later message has a tool_result with its id, a
// tool_result when an earlier message has the tool_use. Nearly always the
// partner is in the neighbouring message, so that is checked first; only the
// ids not settled that way are looked up in one more pass.
func cleanup(api []messages.APIMessage) ([]messages.APIMessage, bool) {
	summaries, markers := map[string]bool{}, map[string]bool{}
	var unsettled map[string]bool
	var withUnsettled []int // indexes of the messages holding unsettled blocks
	for i := range api {
		m := &api[i]
		if m.IsSummary && m.CondenseID != "" {
			summaries[m.CondenseID] = true
		}
		if m.IsTruncationMarker && m.TruncationID != "" {
			markers[m.TruncationID] = true
		}
		for j := range m.Content {
			b := &m.Content[j]
			switch {
			case b.Type == messages.BlockToolUse && !(i+1 < len(api) && hasBlock(&api[i+1], messages.BlockToolResult, b.ID)),
				b.Type == messages.BlockToolResult && !(i > 0 && hasBlock(&api[i-1], messages.BlockToolUse, b.ToolUseID)):
				if unsettled == nil {
					unsettled = map[string]bool{}
				}
				unsettled[toolID(b)] = true
				if n := len(withUnsettled); n == 0 || withUnsettled[n-1] != i {
					withUnsettled = append(withUnsettled, i)
				}
			}
		}
	}
	// For the unsettled ids: index of the first tool_use, of the last tool_result.
	var firstUse, lastResult map[string]int
	if len(unsettled) > 0 {
		firstUse, lastResult = map[string]int{}, map[string]int{}
		for i := range api {
			for j := range api[i].Content {
				b := &api[i].Content[j]
				if b.Type != messages.BlockToolUse && b.Type != messages.BlockToolResult {
					continue
				}
				id := toolID(b)
				if !unsettled[id] {
					continue
				}
				if b.Type == messages.BlockToolResult {
					lastResult[id] = i
				} else if _, ok := firstUse[id]; !ok {
					firstUse[id] = i
				}
			}
		}
	}

	changed := false
	out := api[:0]
	// Most messages share a parent with the message before them.
	var lastCP, lastTP string
	var lastCPOK, lastTPOK bool
	for i := range api {
		m := api[i]
		if p := m.CondenseParent; p != "" {
			if p != lastCP {
				lastCP, lastCPOK = p, summaries[p]
			}
			if !lastCPOK {
				m.CondenseParent = ""
				changed = true
			}
		}
		if p := m.TruncationParent; p != "" {
			if p != lastTP {
				lastTP, lastTPOK = p, markers[p]
			}
			if !lastTPOK {
				m.TruncationParent = ""
				changed = true
			}
		}
		if len(withUnsettled) > 0 && withUnsettled[0] == i {
			withUnsettled = withUnsettled[1:]
			var kept []messages.ContentBlock
			dropped := false
			for j := range m.Content {
				b := &m.Content[j]
				drop := false
				if (b.Type == messages.BlockToolUse || b.Type == messages.BlockToolResult) && unsettled[toolID(b)] {
					if b.Type == messages.BlockToolUse {
						r, ok := lastResult[b.ID]
						drop = !ok || r <= i
					} else {
						u, ok := firstUse[b.ToolUseID]
						drop = !ok || u >= i
					}
				}
				if drop && !dropped {
					dropped = true
					kept = append(make([]messages.ContentBlock, 0, len(m.Content)), m.Content[:j]...)
				}
				if dropped && !drop {
					kept = append(kept, *b)
				}
			}
			if dropped {
				changed = true
				if len(kept) == 0 {
					continue
				}
				m.Content = kept
			}
		}
		out = append(out, m)
	}
	return out, changed
}

// toolID is the tool call id of a tool_use or tool_result block.
func toolID(b *messages.ContentBlock) string {
	if b.Type == messages.BlockToolUse {
		return b.ID
	}
	return b.ToolUseID
}

// hasBlock reports whether m has a block of type t for tool call id.
func hasBlock(m *messages.APIMessage, t messages.BlockType, id string) bool {
	for j := range m.Content {
		if b := &m.Content[j]; b.Type == t && toolID(b) == id {
			return true
		}
	}
	return false
}

// clone returns a copy of s with its own backing array (nil for an empty s).
func clone[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}
