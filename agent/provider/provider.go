// Package provider is the contract between the agent's task loop and a model
// API. One package per API implements it under agent/provider/: openai
// (OpenAI-compatible chat completions, also Ollama, vLLM, llama.cpp and LM
// Studio through a base URL), anthropic (Messages API), and replay
// (cassettes recorded from a real run).
//
// A Provider turns a Request — the effective API history in agentkernel's
// own message model, the tools and the system prompt — into a Stream of
// normalised Events: text and reasoning deltas, complete tool calls, usage,
// and the end of the turn. Providers translate; they never retry (the task
// loop does, using the APIError they return) and never keep history.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentkernel/agentkernel/messages"
)

// Tool is a tool the model may call.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"` // a JSON Schema object
}

// Request is one model call.
type Request struct {
	// Model is the provider's model id (e.g. "gpt-4.1",
	// "claude-sonnet-4-5"); empty means the provider's configured model.
	Model     string
	System    string
	Messages  []messages.APIMessage // what is sent: messages.Effective of the history
	Tools     []Tool
	MaxTokens int // 0: the provider's default
	// Effort is how hard the model thinks: "" (the provider's default),
	// low, medium or high — Anthropic's extended thinking budget
	// (EffortBudget), OpenAI's reasoning_effort.
	Effort Effort
}

// Effort is a reasoning effort.
type Effort string

// The efforts.
const (
	EffortLow    Effort = "low"
	EffortMedium Effort = "medium"
	EffortHigh   Effort = "high"
)

// ParseEffort parses an effort; "off", "none" and "" are no effort (the
// provider's default).
func ParseEffort(s string) (Effort, error) {
	switch e := Effort(strings.ToLower(strings.TrimSpace(s))); e {
	case EffortLow, EffortMedium, EffortHigh:
		return e, nil
	case "", "off", "none", "default":
		return "", nil
	}
	return "", fmt.Errorf("unknown effort %q (want low, medium, high or off)", s)
}

// EffortBudget is the thinking budget, in tokens, of an effort on APIs
// that take one (Anthropic's extended thinking); 0 for none.
func EffortBudget(e Effort) int {
	switch e {
	case EffortLow:
		return 2048
	case EffortMedium:
		return 8192
	case EffortHigh:
		return 24576
	}
	return 0
}

// EventType says what an Event carries.
type EventType string

// The event types, in the order a turn produces them: any number of
// deltas and tool calls, then Usage (at most once per turn, possibly
// before the last deltas), then Done.
const (
	// EventText: Text is the next piece of assistant text.
	EventText EventType = "text"
	// EventReasoning: Text is the next piece of reasoning ("thinking");
	// Signature, when the API gives one, arrives on the last piece.
	EventReasoning EventType = "reasoning"
	// EventToolCall: ToolCall is a complete call (its arguments are
	// assembled from the API's deltas before it is emitted).
	EventToolCall EventType = "tool_call"
	// EventUsage: Usage holds the token counts of the request.
	EventUsage EventType = "usage"
	// EventDone: the turn ended; StopReason says why.
	EventDone EventType = "done"
	// EventActivity: Activity is a step of an agent that runs its own
	// tools (an external ACP agent): a tool call it started, or that
	// call's progress or result. The task records it; it runs nothing.
	EventActivity EventType = "activity"
	// EventAsk: Ask is a permission such an agent wants. The task asks
	// whoever answers asks (the notebook's stdin, the panel, a policy)
	// and gives the answer to Ask.Reply before it reads on.
	EventAsk EventType = "ask"
)

// Event is one normalised piece of a model's streamed answer.
type Event struct {
	Type       EventType  `json:"type"`
	Text       string     `json:"text,omitempty"`
	Signature  string     `json:"signature,omitempty"`
	ToolCall   *ToolCall  `json:"toolCall,omitempty"`
	Usage      *Usage     `json:"usage,omitempty"`
	StopReason StopReason `json:"stopReason,omitempty"`
	Activity   *Activity  `json:"activity,omitempty"`
	Ask        *Ask       `json:"-"`
}

// Activity is a tool call of an agent that runs its own tools, as far as
// it has gone.
type Activity struct {
	ID    string          `json:"id"`
	Title string          `json:"title"`          // what it does, for people
	Kind  string          `json:"kind,omitempty"` // read, edit, execute, fetch, … (ACP's tool kinds)
	Input json.RawMessage `json:"input,omitempty"`
	// Status is pending, in_progress, completed or failed.
	Status string `json:"status,omitempty"`
	// Output is what the call gave, as text, once it is known.
	Output string `json:"output,omitempty"`
}

// Done reports whether the call has ended.
func (a Activity) Done() bool { return a.Status == "completed" || a.Status == "failed" }

// Ask is a permission an agent that runs its own tools asks for.
type Ask struct {
	// Tool is the call it wants to make, for people; Input its arguments.
	Tool  string
	Input json.RawMessage
	// Reply takes the answer: allow, and always (the agent need not ask
	// again in this session). It is called once.
	Reply func(allow, always bool)
}

// ToolCall is a call of a tool by the model.
type ToolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"` // a JSON object; "{}" when the model sent nothing
}

// Usage counts the tokens of one request.
type Usage struct {
	InputTokens      int `json:"inputTokens"`
	OutputTokens     int `json:"outputTokens"`
	CacheReadTokens  int `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int `json:"cacheWriteTokens,omitempty"`
}

// StopReason is why a turn ended.
type StopReason string

// The stop reasons, normalised across APIs.
const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopOther     StopReason = "other"
)

// Stream yields the events of one model call. Next returns io.EOF after the
// EventDone event; any other error ends the stream (it may be an *APIError).
// Close releases the connection and may be called at any time, from any
// goroutine, to abort the stream; it is idempotent. Next is not safe for
// concurrent use.
type Stream interface {
	Next() (Event, error)
	Close() error
}

// Provider calls one model API. Its methods are safe for concurrent use.
type Provider interface {
	// Name is the provider's name as used in model strings: "openai",
	// "anthropic", "ollama", "replay".
	Name() string
	// Model returns what is known of the configured model.
	Model() ModelInfo
	// Stream starts a model call. Cancelling ctx aborts it.
	Stream(ctx context.Context, req Request) (Stream, error)
}

// ModelInfo describes a model.
type ModelInfo struct {
	ID            string
	ContextWindow int     // tokens; 0 if unknown
	MaxOutput     int     // tokens; 0 if unknown
	InputPrice    float64 // USD per million input tokens
	OutputPrice   float64 // USD per million output tokens
	CacheRead     float64 // USD per million cache-read tokens
	CacheWrite    float64 // USD per million cache-write tokens
	// Vision: the model takes images (image content in messages and tool
	// results). Without it, images reach the model as text placeholders.
	Vision bool
	// WindowGuessed: neither the tables, the config nor the model's server
	// said the context window; ContextWindow is DefaultContextWindow.
	WindowGuessed bool
}

// DefaultContextWindow is the context window of a model nobody states
// one for (a local server that does not report it): small enough for any
// model served today, so that a history is condensed before it outgrows
// the real one.
const DefaultContextWindow = 32_768

// Cost returns the price of u in USD.
func (m ModelInfo) Cost(u Usage) float64 {
	return (float64(u.InputTokens)*m.InputPrice + float64(u.OutputTokens)*m.OutputPrice +
		float64(u.CacheReadTokens)*m.CacheRead + float64(u.CacheWriteTokens)*m.CacheWrite) / 1e6
}

// APIError is a failed model call. The task loop retries when Retryable.
type APIError struct {
	Provider   string
	Status     int           // HTTP status; 0 for transport errors and mid-stream error events
	Type       string        // the API's error type, e.g. "rate_limit_error", "overloaded_error"
	Message    string        // the API's message (never contains the API key)
	Retryable  bool          // 429, 5xx, overloaded, timeouts, dropped connections
	RetryAfter time.Duration // from a Retry-After header, if any
	// ContextExceeded: the request was longer than the model's context
	// window (the task shrinks the history and asks again).
	ContextExceeded bool
	Err             error // the underlying error, if any
}

func (e *APIError) Error() string {
	s := e.Provider + ": "
	if e.Status != 0 {
		s += fmt.Sprintf("HTTP %d ", e.Status)
	}
	if e.Type != "" {
		s += e.Type + ": "
	}
	return s + e.Message
}

func (e *APIError) Unwrap() error { return e.Err }

// AsAPIError returns err as an *APIError, if it is one.
func AsAPIError(err error) (*APIError, bool) {
	var ae *APIError
	ok := errors.As(err, &ae)
	return ae, ok
}

// ErrNotConfigured is returned when no model is configured.
var ErrNotConfigured = errors.New("provider: no model configured")
