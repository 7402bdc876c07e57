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
// partner is in the neighbouring message, so that is checked first (by
// survey); only the ids not settled that way are looked up in one more pass
// (by orphans.locate).
func cleanup(api []messages.APIMessage) ([]messages.APIMessage, bool) {
	summaries, markers, orph := survey(api)
	orph.locate(api)

	changed := false
	out := api[:0]
	for i := range api {
		m := api[i]
		if summaries.dangling(m.CondenseParent) {
			m.CondenseParent = ""
			changed = true
		}
		if markers.dangling(m.TruncationParent) {
			m.TruncationParent = ""
			changed = true
		}
		if orph.heldBy(i) {
			if kept, dropped := orph.drop(m.Content, i); dropped {
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

// survey reads api once: the condense ids of its summaries, the truncation
// ids of its markers, and the tool blocks whose partner is not in the
// neighbouring message.
func survey(api []messages.APIMessage) (summaries, markers *parents, orph *orphans) {
	summaries, markers = newParents(), newParents()
	orph = &orphans{}
	for i := range api {
		m := &api[i]
		if m.IsSummary && m.CondenseID != "" {
			summaries.present[m.CondenseID] = true
		}
		if m.IsTruncationMarker && m.TruncationID != "" {
			markers.present[m.TruncationID] = true
		}
		for j := range m.Content {
			b := &m.Content[j]
			switch {
			case b.Type == messages.BlockToolUse && !(i+1 < len(api) && hasBlock(&api[i+1], messages.BlockToolResult, b.ID)),
				b.Type == messages.BlockToolResult && !(i > 0 && hasBlock(&api[i-1], messages.BlockToolUse, b.ToolUseID)):
				orph.add(toolID(b), i)
			}
		}
	}
	return summaries, markers, orph
}

// parents are the summaries (or truncation markers) present in the API
// history, asked whether a message's parent tag still points at one. Most
// messages share a parent with the message before them, so the last answer
// is kept.
type parents struct {
	present map[string]bool
	last    string
	lastOK  bool
}

func newParents() *parents { return &parents{present: map[string]bool{}} }

// dangling reports whether the parent tag p is set and names no summary (or
// marker) present.
func (ps *parents) dangling(p string) bool {
	if p == "" {
		return false
	}
	if p != ps.last {
		ps.last, ps.lastOK = p, ps.present[p]
	}
	return !ps.lastOK
}

// orphans are the tool ids not settled by the neighbouring message, the
// messages holding them, and (after locate) where each id's first tool_use
// and last tool_result are.
type orphans struct {
	unsettled map[string]bool
	holders   []int // indexes of the messages holding unsettled blocks, ascending

	firstUse, lastResult map[string]int
}

// add records that message i holds a block with the unsettled tool id.
func (o *orphans) add(id string, i int) {
	if o.unsettled == nil {
		o.unsettled = map[string]bool{}
	}
	o.unsettled[id] = true
	if n := len(o.holders); n == 0 || o.holders[n-1] != i {
		o.holders = append(o.holders, i)
	}
}

// locate finds, for the unsettled ids, the index of the first tool_use and
// of the last tool_result in api.
func (o *orphans) locate(api []messages.APIMessage) {
	if len(o.unsettled) == 0 {
		return
	}
	o.firstUse, o.lastResult = map[string]int{}, map[string]int{}
	for i := range api {
		for j := range api[i].Content {
			b := &api[i].Content[j]
			if b.Type != messages.BlockToolUse && b.Type != messages.BlockToolResult {
				continue
			}
			id := toolID(b)
			if !o.unsettled[id] {
				continue
			}
			if b.Type == messages.BlockToolResult {
				o.lastResult[id] = i
			} else if _, ok := o.firstUse[id]; !ok {
				o.firstUse[id] = i
			}
		}
	}
}

// heldBy reports whether message i holds unsettled blocks. It is asked of
// the messages in order, each once.
func (o *orphans) heldBy(i int) bool {
	if len(o.holders) > 0 && o.holders[0] == i {
		o.holders = o.holders[1:]
		return true
	}
	return false
}

// drop returns the content of message i without its orphaned blocks: a
// tool_use with no tool_result after it, a tool_result with no tool_use
// before it. content is not edited; when nothing is dropped, dropped is
// false and kept is nil.
func (o *orphans) drop(content []messages.ContentBlock, i int) (kept []messages.ContentBlock, dropped bool) {
	for j := range content {
		b := &content[j]
		orphan := o.orphaned(b, i)
		if orphan && !dropped {
			dropped = true
			kept = append(make([]messages.ContentBlock, 0, len(content)), content[:j]...)
		}
		if dropped && !orphan {
			kept = append(kept, *b)
		}
	}
	return kept, dropped
}

// orphaned reports whether block b of message i has lost its partner.
func (o *orphans) orphaned(b *messages.ContentBlock, i int) bool {
	switch {
	case b.Type == messages.BlockToolUse && o.unsettled[b.ID]:
		r, ok := o.lastResult[b.ID]
		return !ok || r <= i
	case b.Type == messages.BlockToolResult && o.unsettled[b.ToolUseID]:
		u, ok := o.firstUse[b.ToolUseID]
		return !ok || u >= i
	}
	return false
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
