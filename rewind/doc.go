// Package rewind is agentkernel's MessageManager: the single place where the
// two histories of a session (see package messages) are cut back together.
//
// Use [RewindToTimestamp] to rewind to a UI message by its ts (deleting a
// message, or edit-and-resubmit: rewind to the edited user message, which
// removes it, then submit the new text), and [RewindToIndex] to rewind to a
// position. Both are pure: histories in, new histories and whether anything
// changed out. The inputs are never modified. The result's slices are fresh
// (appending to them or replacing their elements is safe), but the messages
// in them share their own slices, maps and pointers (Content, Images,
// Checkpoint, …) with the inputs: treat those as read-only.
// Applying the result durably (one transaction over both histories) is the
// store's job.
//
// The algorithm follows Roo-Code's MessageManager, with its known data-loss
// paths closed: see [RewindToTimestamp].
package rewind
