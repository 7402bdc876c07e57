package webview

import (
	"context"

	"github.com/agentkernel/agentkernel/messages"
)

// Agent is what a panel composes from the agent session it mirrors: one
// small interface per concern, each implemented by whatever offers it
// (webview/hostagent offers them all over the session host, session.Host).
// Mirror, Driver, Rewinder, Modes and Sessions are required (NewPanel
// panics without them); Settings and Mentions may be nil, and the panel
// then answers their frames with an error. Every method may be called
// concurrently; they are called from connection goroutines, never from
// inside a Subscribe callback.
type Agent struct {
	Mirror   Mirror
	Driver   Driver
	Rewinder Rewinder
	Modes    Modes
	Sessions Sessions
	Settings Settings
	Mentions MentionCompleter
}

// Mirror is the session's state and its changes, which the panel mirrors.
type Mirror interface {
	// Snapshot returns the session's current state. It may block briefly
	// (it is called off the event path).
	Snapshot(ctx context.Context) (State, error)
	// Subscribe registers f for every change until the returned func
	// removes it; ctx bounds what the Mirror reads to report a change (a
	// session's title), and the panel's ends at its Close. f may be
	// called on the agent's goroutines (possibly with the agent's locks
	// held): the server's f never blocks and never calls back into the
	// Agent.
	Subscribe(ctx context.Context, f func(Event)) (remove func())
}

// Driver runs the session's turns.
type Driver interface {
	// NewTask submits text, with the images attached to it (data: URLs,
	// possibly none): it starts a turn, or answers the pending ask.
	NewTask(ctx context.Context, text string, images []string) error
	// Respond answers the ask stamped ts. The first answer wins; a late
	// one returns an error.
	Respond(ctx context.Context, ts int64, r Response) error
	// Cancel stops the running turn.
	Cancel(ctx context.Context) error
}

// Rewinder turns the session back to one of its messages.
type Rewinder interface {
	// Rewind removes the message stamped ts and everything after it, and
	// turns back what choice says (files, kernel).
	Rewind(ctx context.Context, ts int64, choice RewindChoice) (RewindReport, error)
	// Fork makes a new current session with the history before ts; the
	// world is turned back as choice says.
	Fork(ctx context.Context, ts int64, choice RewindChoice) (RewindReport, error)
	// Edit rewinds to ts (as choice says) and submits text in its place.
	Edit(ctx context.Context, ts int64, text string, choice RewindChoice) (RewindReport, error)
}

// Modes switches what the header's pickers show: the permission mode
// (default, acceptEdits, bypassPermissions, plan), the agent mode (code,
// ask, architect, debug, the user's) and the model.
type Modes interface {
	SetPermissionMode(ctx context.Context, mode string) error
	SetAgentMode(ctx context.Context, mode string) error
	SetModel(ctx context.Context, model string) error
}

// Sessions are the stored sessions: listed, searched, loaded.
type Sessions interface {
	// ListSessions lists stored sessions whose title or id contains search.
	ListSessions(ctx context.Context, search string, limit int) ([]SessionInfo, error)
	// SearchMessages runs a full-text search over every session's messages.
	SearchMessages(ctx context.Context, query string, limit int) ([]SearchHit, error)
	// LoadSession makes the stored session id the current one.
	LoadSession(ctx context.Context, id string) error
}

// State is the full state a client gets on connect.
type State struct {
	SessionID       string               `json:"sessionId"`
	Title           string               `json:"title,omitempty"`
	Messages        []messages.UIMessage `json:"messages"`
	PermissionMode  string               `json:"permissionMode"`
	PermissionModes []string             `json:"permissionModes,omitempty"`
	// AgentMode is the agent mode (code, ask, architect, debug, the
	// user's); AgentModes the ones there are.
	AgentMode  string   `json:"agentMode,omitempty"`
	AgentModes []string `json:"agentModes,omitempty"`
	Model      string   `json:"model"`
	Totals     Totals   `json:"totals"`
	// KernelStatus is what the agent is doing: idle, busy, waiting (on an
	// ask), or starting.
	KernelStatus string `json:"kernelStatus"`
	// PendingAsk is the ask waiting for an answer, if any.
	PendingAsk *messages.UIMessage `json:"pendingAsk,omitempty"`
	// MCPServers are the MCP servers the agent may use, with their state.
	MCPServers []MCPServer `json:"mcpServers,omitempty"`
	// Older is how many messages come before Messages: a state frame
	// carries the newest StateWindow; loadOlder pages through the rest.
	Older int `json:"older,omitempty"`
}

// MCPServer is one MCP server as the panel shows it.
type MCPServer struct {
	Name      string   `json:"name"`
	Scope     string   `json:"scope,omitempty"`
	Transport string   `json:"transport,omitempty"`
	Where     string   `json:"where,omitempty"`
	State     string   `json:"state"`
	Error     string   `json:"error,omitempty"`
	Tools     []string `json:"tools,omitempty"`
}

// Totals are the session's token counts and cost.
type Totals struct {
	InputTokens      int     `json:"inputTokens"`
	OutputTokens     int     `json:"outputTokens"`
	CacheReadTokens  int     `json:"cacheReadTokens"`
	CacheWriteTokens int     `json:"cacheWriteTokens"`
	Cost             float64 `json:"cost"`
	Requests         int     `json:"requests"`
	// ContextUsed and ContextWindow are how full the model's context was
	// at the last request (tokens); 0 when not known.
	ContextUsed   int `json:"contextUsed,omitempty"`
	ContextWindow int `json:"contextWindow,omitempty"`
}

// EventKind names a change to mirror.
type EventKind int

// The events an Agent reports.
const (
	// EventMessageCreated: Message is a new UI message.
	EventMessageCreated EventKind = iota + 1
	// EventMessageUpdated: Message is a new version of a message (same ts).
	EventMessageUpdated
	// EventRewound: the histories were cut; the server re-reads Snapshot
	// and sends messagesRewound.
	EventRewound
	// EventReset: the session changed (new, resumed, loaded); the server
	// re-reads Snapshot and sends a full state.
	EventReset
	// EventStatus: Status is the new kernel status.
	EventStatus
	// EventTotals: Totals are the new token and cost totals.
	EventTotals
	// EventSettings: Mode and Model are the current mode and model.
	EventSettings
	// EventMCP: MCP is the MCP servers' new state.
	EventMCP
)

// Event is one change reported by an Agent.
type Event struct {
	Kind           EventKind
	Message        *messages.UIMessage
	Status         string
	Totals         Totals
	PermissionMode string
	Model          string
	MCP            []MCPServer
	// AgentMode, with EventSettings, is the agent mode.
	AgentMode string
	// Title, with EventSettings, is the session's title when it changed
	// (the first prompt names the session); "" leaves it as it is.
	Title string
}

// ResponseKind is how a client answered an ask.
type ResponseKind string

// The answers, as Roo-Code's askResponse spells them on the wire.
const (
	ResponseYes      ResponseKind = "yesButtonClicked"
	ResponseNo       ResponseKind = "noButtonClicked"
	ResponseMessage  ResponseKind = "messageResponse"
	ResponseAllowAll ResponseKind = "allowAll"
)

// Response answers an ask.
type Response struct {
	Kind ResponseKind
	Text string
	// Images are data: URLs attached to a messageResponse.
	Images []string
}

// RewindChoice is what a rewind turns back besides the conversation. The
// zero value turns back everything.
type RewindChoice struct {
	ConversationOnly bool `json:"conversationOnly,omitempty"`
	NoFiles          bool `json:"noFiles,omitempty"`
	NoKernel         bool `json:"noKernel,omitempty"`
	// Force overwrites files changed outside the agent since (conflicts).
	Force bool `json:"force,omitempty"`
}

// RewindReport says what a rewind or fork did, for the panel to show.
type RewindReport struct {
	Summary      string   `json:"summary"`
	Restored     []string `json:"restored,omitempty"`
	Removed      []string `json:"removed,omitempty"`
	Conflicts    []string `json:"conflicts,omitempty"`
	Unrestorable []string `json:"unrestorable,omitempty"`
	// Protected were left as they are: files that may hold secrets, whose
	// content is never kept.
	Protected  []string `json:"protected,omitempty"`
	Kernel     []string `json:"kernel,omitempty"`
	KernelNote string   `json:"kernelNote,omitempty"`
	ForkID     string   `json:"forkId,omitempty"`
}

// SessionInfo is one stored session in a listing.
type SessionInfo struct {
	ID           string  `json:"id"`
	Title        string  `json:"title"`
	UpdatedAt    int64   `json:"updatedAt"` // Unix milliseconds
	MessageCount int     `json:"messageCount"`
	Model        string  `json:"model,omitempty"`
	Preview      string  `json:"preview,omitempty"`
	Cost         float64 `json:"cost"`
	Current      bool    `json:"current,omitempty"`
}

// SearchHit is one message that matched a search.
type SearchHit struct {
	SessionID string `json:"sessionId"`
	TS        int64  `json:"ts"`
	Kind      string `json:"kind"`
	Snippet   string `json:"snippet"`
}
