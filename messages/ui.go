package messages

import (
	"fmt"
)

// Type says whether a UI message asks the user something or just says it.
type Type string

// The two UI message types.
const (
	TypeAsk Type = "ask"
	TypeSay Type = "say"
)

// Ask is the kind of an ask message: something the agent waits on the user for.
type Ask string

// Ask kinds. See [ClassOf] for how they group.
const (
	AskFollowup                  Ask = "followup"
	AskCommand                   Ask = "command"
	AskCommandOutput             Ask = "command_output"
	AskCompletionResult          Ask = "completion_result"
	AskTool                      Ask = "tool"
	AskAPIReqFailed              Ask = "api_req_failed"
	AskResumeTask                Ask = "resume_task"
	AskResumeCompletedTask       Ask = "resume_completed_task"
	AskMistakeLimitReached       Ask = "mistake_limit_reached"
	AskUseMCPServer              Ask = "use_mcp_server"
	AskAutoApprovalMaxReqReached Ask = "auto_approval_max_req_reached"
)

// Asks lists every known ask kind, in declaration order.
var Asks = []Ask{
	AskFollowup, AskCommand, AskCommandOutput, AskCompletionResult, AskTool,
	AskAPIReqFailed, AskResumeTask, AskResumeCompletedTask, AskMistakeLimitReached,
	AskUseMCPServer, AskAutoApprovalMaxReqReached,
}

// Known reports whether a is one of the ask kinds this package defines.
func (a Ask) Known() bool { return ClassOf(a) != AskClassUnknown }

// Say is the kind of a say message: something the agent reports.
type Say string

// Say kinds. The last two are agentkernel's own, for Jupyter.
const (
	SayAPIReqStarted           Say = "api_req_started"
	SayAPIReqFinished          Say = "api_req_finished"
	SayAPIReqRetried           Say = "api_req_retried"
	SayAPIReqRetryDelayed      Say = "api_req_retry_delayed"
	SayAPIReqDeleted           Say = "api_req_deleted"
	SayError                   Say = "error"
	SayText                    Say = "text"
	SayImage                   Say = "image"
	SayReasoning               Say = "reasoning"
	SayCompletionResult        Say = "completion_result"
	SayUserFeedback            Say = "user_feedback"
	SayUserFeedbackDiff        Say = "user_feedback_diff"
	SayCommandOutput           Say = "command_output"
	SaySubtaskResult           Say = "subtask_result"
	SayMCPServerRequestStarted Say = "mcp_server_request_started"
	SayMCPServerResponse       Say = "mcp_server_response"
	SayCondenseContext         Say = "condense_context"
	SayCondenseContextError    Say = "condense_context_error"
	SaySlidingWindowTruncation Say = "sliding_window_truncation"
	SayCheckpointSaved         Say = "checkpoint_saved"
	SayDiffError               Say = "diff_error"
	SayUserEditTodos           Say = "user_edit_todos"
	// SayCellExecuted records a cell the user ran in the backing kernel,
	// with its outputs.
	SayCellExecuted Say = "cell_executed"
	// SayKernelStatus reports the backing kernel's status; shown, not stored.
	SayKernelStatus Say = "kernel_status"
	// SayToolResult records what a file tool did: a ToolResult as JSON.
	SayToolResult Say = "tool_result"
)

// Says lists every known say kind, in declaration order.
var Says = []Say{
	SayAPIReqStarted, SayAPIReqFinished, SayAPIReqRetried, SayAPIReqRetryDelayed,
	SayAPIReqDeleted, SayError, SayText, SayImage, SayReasoning, SayCompletionResult,
	SayUserFeedback, SayUserFeedbackDiff, SayCommandOutput, SaySubtaskResult,
	SayMCPServerRequestStarted, SayMCPServerResponse, SayCondenseContext,
	SayCondenseContextError, SaySlidingWindowTruncation, SayCheckpointSaved,
	SayDiffError, SayUserEditTodos, SayCellExecuted, SayKernelStatus, SayToolResult,
}

var knownSays = func() map[Say]bool {
	m := make(map[Say]bool, len(Says))
	for _, s := range Says {
		m[s] = true
	}
	return m
}()

// Known reports whether s is one of the say kinds this package defines.
func (s Say) Known() bool { return knownSays[s] }

// Decision is a permission decision on a tool call, carried by the say
// message that records it (text for people, this for programs).
type Decision struct {
	Tool    string `json:"tool"`
	Allowed bool   `json:"allowed"`
	// Routine marks an allow that needed no one: a read-only tool.
	// Frontends keep routine decisions out of view.
	Routine bool `json:"routine,omitempty"`
}

// UIMessage is one entry of the UI history. TS identifies it within its
// session: it is unique and increases along the history (see [Clock]).
// Exactly one of Ask and Say is set, matching Type.
type UIMessage struct {
	TS   int64  `json:"ts"`
	Type Type   `json:"type"`
	Ask  Ask    `json:"ask,omitempty"`
	Say  Say    `json:"say,omitempty"`
	Text string `json:"text,omitempty"`
	// Cell is the notebook cell, by id, whose code an ask "command"
	// runs (the agent's notebook_run_cell); "" for other code.
	Cell                     string             `json:"cell,omitempty"`
	Images                   []string           `json:"images,omitempty"`
	Decision                 *Decision          `json:"decision,omitempty"`
	Partial                  bool               `json:"partial,omitempty"`
	Reasoning                string             `json:"reasoning,omitempty"`
	ConversationHistoryIndex *int               `json:"conversationHistoryIndex,omitempty"`
	Checkpoint               map[string]any     `json:"checkpoint,omitempty"`
	ProgressStatus           *ProgressStatus    `json:"progressStatus,omitempty"`
	ContextCondense          *ContextCondense   `json:"contextCondense,omitempty"`
	ContextTruncation        *ContextTruncation `json:"contextTruncation,omitempty"`
	IsProtected              bool               `json:"isProtected,omitempty"`
	IsAnswered               bool               `json:"isAnswered,omitempty"`
	// Settings marks an error that the settings mend, not the agent (no
	// model is configured): a frontend offers its settings there, and no
	// "Fix with the agent".
	Settings bool `json:"settings,omitempty"`
}

// ProgressStatus is a short status a tool shows while it runs.
type ProgressStatus struct {
	Icon string `json:"icon,omitempty"`
	Text string `json:"text,omitempty"`
}

// ContextCondense is carried by a say condense_context message. CondenseID
// links it to the summary API message with the same condenseId.
type ContextCondense struct {
	CondenseID        string `json:"condenseId"`
	Summary           string `json:"summary"`
	PrevContextTokens int    `json:"prevContextTokens"`
	NewContextTokens  int    `json:"newContextTokens"`
}

// ContextTruncation is carried by a say sliding_window_truncation message.
// TruncationID links it to the truncation marker API message with the same
// truncationId.
type ContextTruncation struct {
	TruncationID      string `json:"truncationId"`
	MessagesRemoved   int    `json:"messagesRemoved"`
	PrevContextTokens int    `json:"prevContextTokens"`
}

// FieldError reports what is wrong with a message: Field is the JSON path of
// the offending field ("ts", "content[2].tool_use_id"). Use errors.As to get it.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Validate reports the first thing wrong with m, naming the field, as a
// *[FieldError] wrapped with "messages: invalid UI message".
func (m UIMessage) Validate() error {
	if err := m.validate(); err != nil {
		return fmt.Errorf("messages: invalid UI message (ts %d): %w", m.TS, err)
	}
	return nil
}

func (m UIMessage) validate() error {
	if m.TS <= 0 {
		return fieldErr("ts", "must be a positive millisecond timestamp, got %d", m.TS)
	}
	switch m.Type {
	case TypeAsk:
		if m.Ask == "" {
			return fieldErr("ask", "missing on an ask message")
		}
		if !m.Ask.Known() {
			return fieldErr("ask", "unknown kind %q", m.Ask)
		}
		if m.Say != "" {
			return fieldErr("say", "set on an ask message")
		}
	case TypeSay:
		if m.Say == "" {
			return fieldErr("say", "missing on a say message")
		}
		if !m.Say.Known() {
			return fieldErr("say", "unknown kind %q", m.Say)
		}
		if m.Ask != "" {
			return fieldErr("ask", "set on a say message")
		}
	case "":
		return fieldErr("type", "missing (want %q or %q)", TypeAsk, TypeSay)
	default:
		return fieldErr("type", "unknown type %q (want %q or %q)", m.Type, TypeAsk, TypeSay)
	}
	for i, img := range m.Images {
		if img == "" {
			return fieldErr(fmt.Sprintf("images[%d]", i), "empty")
		}
	}
	if m.ConversationHistoryIndex != nil && *m.ConversationHistoryIndex < 0 {
		return fieldErr("conversationHistoryIndex", "negative (%d)", *m.ConversationHistoryIndex)
	}
	if c := m.ContextCondense; c != nil {
		if c.CondenseID == "" {
			return fieldErr("contextCondense.condenseId", "empty")
		}
		if c.PrevContextTokens < 0 {
			return fieldErr("contextCondense.prevContextTokens", "negative (%d)", c.PrevContextTokens)
		}
		if c.NewContextTokens < 0 {
			return fieldErr("contextCondense.newContextTokens", "negative (%d)", c.NewContextTokens)
		}
	} else if m.Say == SayCondenseContext && !m.Partial {
		return fieldErr("contextCondense", "missing on a complete condense_context message")
	}
	if t := m.ContextTruncation; t != nil {
		if t.TruncationID == "" {
			return fieldErr("contextTruncation.truncationId", "empty")
		}
		if t.MessagesRemoved < 0 {
			return fieldErr("contextTruncation.messagesRemoved", "negative (%d)", t.MessagesRemoved)
		}
		if t.PrevContextTokens < 0 {
			return fieldErr("contextTruncation.prevContextTokens", "negative (%d)", t.PrevContextTokens)
		}
	} else if m.Say == SaySlidingWindowTruncation && !m.Partial {
		return fieldErr("contextTruncation", "missing on a complete sliding_window_truncation message")
	}
	return nil
}

// ShortID is the first 8 characters of an id (a session's uuid), as
// listings show it and commands take it.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
