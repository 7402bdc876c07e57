package scripted

import "time"

// Turn is the server's answer to one model request. Either Status is set
// (a non-2xx HTTP reply with an error body) or Steps are streamed.
type Turn struct {
	// Status, when not 0 or 200, makes the server answer with this HTTP
	// status and the API's error body instead of a stream.
	Status int
	// RetryAfter is sent as the Retry-After header with Status (e.g. "2").
	RetryAfter string
	// ErrorType and ErrorMessage fill the error body. Defaults depend on
	// Status ("rate_limit_error", "api_error", …).
	ErrorType    string
	ErrorMessage string
	// ContextExceeded answers HTTP 400 with the API's own "the prompt is
	// longer than the context window" error (ContextExceeded).
	ContextExceeded bool

	// Steps are streamed in order.
	Steps []Step
	// Model is echoed in the stream; default "scripted-model".
	Model string
}

// Reply is a streamed turn made of steps.
func Reply(steps ...Step) Turn { return Turn{Steps: steps} }

// ContextExceeded is a turn refused because the request is longer than the
// model's context window, in each API's words: OpenAI's (and vLLM's)
// "This model's maximum context length is …", Anthropic's "prompt is too
// long: … tokens > … maximum".
func ContextExceeded() Turn { return Turn{ContextExceeded: true} }

// Fail is a turn answered with an HTTP error status (429, 500, 529, …) and,
// if retryAfter is not empty, a Retry-After header.
func Fail(status int, retryAfter string) Turn {
	return Turn{Status: status, RetryAfter: retryAfter}
}

type stepKind int

const (
	stepText stepKind = iota + 1
	stepReasoning
	stepSignature
	stepToolCall
	stepUsage
	stepStop
	stepDelay
	stepStall
	stepError
	stepPing
	stepDisconnect
	stepRaw
)

// Step is one scripted piece of a streamed turn. Build steps with the
// functions of this package (Text, Reasoning, ToolCall, Usage, …).
type Step struct {
	kind   stepKind
	pieces []string
	id     string
	name   string
	usage  Usage
	delay  time.Duration
	errTyp string
	errMsg string
}

// Text streams assistant text, one chunk (OpenAI) or text_delta (Anthropic)
// per piece. Consecutive Text steps continue the same Anthropic text block.
func Text(pieces ...string) Step { return Step{kind: stepText, pieces: pieces} }

// Reasoning streams reasoning: delta.reasoning_content chunks (OpenAI) or
// thinking_delta events in a thinking block (Anthropic).
func Reasoning(pieces ...string) Step { return Step{kind: stepReasoning, pieces: pieces} }

// Signature ends the current Anthropic thinking block with a
// signature_delta. The OpenAI format ignores it.
func Signature(sig string) Step { return Step{kind: stepSignature, pieces: []string{sig}} }

// ToolCall streams one tool call whose arguments arrive in the given pieces
// (their concatenation should be a JSON object). Several ToolCall steps in
// a turn are parallel tool calls (OpenAI indexes 0, 1, …; Anthropic one
// tool_use block each).
func ToolCall(id, name string, argPieces ...string) Step {
	return Step{kind: stepToolCall, id: id, name: name, pieces: argPieces}
}

// Usage is the token counts a turn reports.
type Usage struct {
	Input      int // prompt tokens, cache reads excluded
	Output     int
	CacheRead  int // OpenAI: prompt_tokens_details.cached_tokens; Anthropic: cache_read_input_tokens
	CacheWrite int // Anthropic only: cache_creation_input_tokens
	// NullChoices sends the OpenAI usage chunk with "choices": null, as
	// vLLM does, instead of "choices": [].
	NullChoices bool
}

// UsageStep reports token usage. Whatever its position, the OpenAI format
// sends it as the last chunk before [DONE] (only when the request asked for
// stream_options.include_usage, as OpenAI does); the Anthropic format puts
// the input counts in message_start and the output count in message_delta.
func UsageStep(u Usage) Step { return Step{kind: stepUsage, usage: u} }

// Stop sets the turn's stop reason, in normalised words: "end_turn",
// "tool_use", "max_tokens" (sent as OpenAI "stop", "tool_calls", "length");
// any other word is sent as is. Without Stop the reason is "tool_use" when
// the turn has tool calls and "end_turn" otherwise.
func Stop(reason string) Step { return Step{kind: stepStop, pieces: []string{reason}} }

// Delay waits d before the next step (a slow stream). It ends early when
// the client goes away or the server closes.
func Delay(d time.Duration) Step { return Step{kind: stepDelay, delay: d} }

// Stall stops sending and holds the connection open until the client goes
// away or the server closes.
func Stall() Step { return Step{kind: stepStall} }

// StreamError sends a mid-stream error and ends the response: an Anthropic
// `event: error` with {"type":"error","error":{"type":…,"message":…}}, or
// an OpenAI `data: {"error":{…}}` chunk.
func StreamError(typ, message string) Step {
	return Step{kind: stepError, errTyp: typ, errMsg: message}
}

// Ping sends an Anthropic `event: ping`; an SSE comment in the OpenAI format.
func Ping() Step { return Step{kind: stepPing} }

// Disconnect drops the connection without ending the response (a
// connection reset from the client's point of view).
func Disconnect() Step { return Step{kind: stepDisconnect} }

// Raw sends one SSE data line as is, in either format: `data: <line>`.
func Raw(line string) Step { return Step{kind: stepRaw, pieces: []string{line}} }
