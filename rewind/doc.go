// Package rewind is agentkernel's MessageManager: the single place where the
// two histories of a session (see package messages) are cut back together.
//
// Use [RewindToTimestamp] to rewind to a UI message by its ts (deleting a
// message, or edit-and-resubmit: rewind to the edited user message, which
// removes it, then submit the new text), and [RewindToIndex] to rewind to a
// position. Both are pure: histories in, new histories and whether anything
// changed out. The inputs are never modified, and the result never shares a
// backing array with them, so the caller may append to or edit it freely.
// Applying the result durably (one transaction over both histories) is the
// store's job.
//
// The algorithm follows Roo-Code's MessageManager, with its known data-loss
// paths closed: see [RewindToTimestamp].
package rewind
