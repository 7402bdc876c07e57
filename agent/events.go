package agent

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/hooks"
	"github.com/agentkernel/agentkernel/messages"
)

// EventKind names what happened in a Task.
type EventKind string

// The events a Task emits, in the vocabulary of Roo-Code's TaskEvent.
const (
	EventTaskStarted     EventKind = "taskStarted"     // a turn began
	EventTaskCompleted   EventKind = "taskCompleted"   // the model called attempt_completion (Text: the result)
	EventTaskAborted     EventKind = "taskAborted"     // the turn was cancelled
	EventTaskActive      EventKind = "taskActive"      // working: streaming or running a tool
	EventTaskInteractive EventKind = "taskInteractive" // waiting on an interactive ask (Message: the ask)
	EventTaskResumable   EventKind = "taskResumable"   // waiting on a resumable ask
	EventTaskIdle        EventKind = "taskIdle"        // the turn ended (Message: the idle ask, if any)
	EventMessageCreated  EventKind = "messageCreated"  // Message: a new UI message
	EventMessageUpdated  EventKind = "messageUpdated"  // Message: a new version of a UI message (same ts)
	EventTokenUsage      EventKind = "tokenUsageUpdated"
	EventToolFailed      EventKind = "toolFailed"   // Tool, Text: the error
	EventSetNextInput    EventKind = "setNextInput" // Text: code for a new cell (propose_cell)
	EventRewound         EventKind = "messagesRewound"
	EventToolStarted     EventKind = "toolStarted"        // Tool, ToolID: an allowed call starts running
	EventToolFinished    EventKind = "toolFinished"       // Tool, ToolID, Failed: the call ran
	EventHookBlocked     EventKind = "hookBlocked"        // Tool (if any), Hook, Text: "Event: reason"
	EventHookFailed      EventKind = "hookFailed"         // Tool (if any), Text: what failed
	EventAPIMessage      EventKind = "apiMessageAppended" // API: a message added to the API history; Reply for the model's
)

// Event is one notification from a Task. Message points at a copy that the
// listener may keep.
type Event struct {
	Kind    EventKind
	Message *messages.UIMessage
	Usage   Totals
	Tool    string
	Text    string
	// ToolID is the call's id (toolStarted, toolFinished, and the
	// messageCreated of a permission decision on the call).
	ToolID string
	// Failed is set on toolFinished when the call failed or its result is
	// an error (code that raised).
	Failed bool
	// ToolUsage is set on taskCompleted: calls and failures per tool in
	// this task so far.
	ToolUsage map[string]ToolCount
	// API is set on apiMessageAppended: a copy of the message, stored
	// before the event.
	API *messages.APIMessage
	// Reply is set on apiMessageAppended when the message is the model's
	// answer to a request.
	Reply *Reply
	// Checkpoint is set on the session host's checkpoint event: what a
	// step did to the workspace's files.
	Checkpoint *Checkpoint
	// Hook is set on hookBlocked: the hook event that blocked, and why.
	Hook *HookBlock
	// Context is set on tokenUsageUpdated: how full the model's context
	// window was at the request.
	Context *ContextUse
}

// ContextUse is how full a model's context window is.
type ContextUse struct {
	// Used is the tokens of the last request and its answer.
	Used int
	// Window is the model's context window; 0 when it is not known.
	Window int
	// Guessed: nobody said the window; it is a conservative default
	// (provider.ModelInfo.WindowGuessed).
	Guessed bool
}

// HookBlock is a hook's block: the event it ran at and its reason.
type HookBlock struct {
	Event  hooks.Event
	Reason string
}

// Checkpoint is what a step that may change the workspace did to its
// files, as the World recorded it.
type Checkpoint struct {
	Anchor int64        `json:"anchor"`
	Tool   string       `json:"tool"`
	Files  []FileChange `json:"files"`
	// Took is the time the scans around the step took: what
	// checkpointing added to it.
	Took time.Duration `json:"-"`
}

// FileChange is one file a step changed: created, changed or removed.
type FileChange struct {
	Path   string `json:"path"`
	Change string `json:"change"`
}

// Reply describes the model request an assistant API message answers.
type Reply struct {
	Model string // the model's id, as its API names it
	Usage provider.Usage
	Cost  float64 // USD
	Stop  provider.StopReason
}

// ToolCount counts one tool's calls.
type ToolCount struct {
	Attempts int `json:"attempts"`
	Failures int `json:"failures"`
}

// Totals are a session's accumulated token counts and cost.
type Totals struct {
	InputTokens      int     `json:"inputTokens"`
	OutputTokens     int     `json:"outputTokens"`
	CacheReadTokens  int     `json:"cacheReadTokens"`
	CacheWriteTokens int     `json:"cacheWriteTokens"`
	Cost             float64 `json:"cost"`
	Requests         int     `json:"requests"`
}

// Since is what was spent from before to t: a turn's part of the totals.
func (t Totals) Since(before Totals) Totals {
	return Totals{InputTokens: t.InputTokens - before.InputTokens, OutputTokens: t.OutputTokens - before.OutputTokens,
		CacheReadTokens: t.CacheReadTokens - before.CacheReadTokens, CacheWriteTokens: t.CacheWriteTokens - before.CacheWriteTokens,
		Cost: t.Cost - before.Cost, Requests: t.Requests - before.Requests}
}

// Listeners is a set of event callbacks, called synchronously in
// registration order on the goroutine that emits. Its zero value is ready;
// its methods are safe for concurrent use. A Task's listeners must be quick
// and must not call back into the Task except Respond, Cancel and the
// read-only getters.
//
// Emit is on the streaming path (an event per chunk of the model's answer):
// it reads the current list through one atomic load, with no lock and no
// copy. Add and remove, rare, replace the list with a new one.
type Listeners struct {
	mu   sync.Mutex // serialises Add and remove
	next int
	list atomic.Pointer[[]listener] // never changed once stored
}

type listener struct {
	id int
	f  func(Event)
}

// Add registers f; the returned func removes it.
func (l *Listeners) Add(f func(Event)) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := l.next
	l.next++
	old := l.current()
	list := append(old[:len(old):len(old)], listener{id, f})
	l.list.Store(&list)
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		old := l.current()
		list := make([]listener, 0, len(old))
		for _, x := range old {
			if x.id != id {
				list = append(list, x)
			}
		}
		l.list.Store(&list)
	}
}

func (l *Listeners) current() []listener {
	if p := l.list.Load(); p != nil {
		return *p
	}
	return nil
}

// Emit calls every registered f with e, with no lock held. A listener
// removed while Emit runs may still get e.
func (l *Listeners) Emit(e Event) {
	for _, x := range l.current() {
		x.f(e)
	}
}
