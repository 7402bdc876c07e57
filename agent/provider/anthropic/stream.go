package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// stream adapts the SDK's server-sent events to provider events. The SDK's
// Message.Accumulate assembles the blocks; text and thinking deltas are
// passed on as they arrive, a thinking block's signature on an empty
// reasoning event when the block stops, a tool_use block as one tool call
// when it stops, usage and done at message_stop.
//
// The events come raw from the SDK's SSE decoder. A content_block_delta of
// text or thinking (nearly all of them) is read by decodeDelta; any other
// event — ping, error, the other event types, anything unusual — goes
// through the SDK's own stream and decoding (sdkEvent), as it did before
// the fast path existed.
type stream struct {
	provider.Pump[ssestream.Event]
	p    *Provider
	resp *http.Response // the streaming response, for sdkEvent
	// sdkOnly sends every event through the SDK: the tests' reference,
	// which the fast path must agree with.
	sdkOnly bool

	acc sdk.Message
}

// raw turns one server-sent event into events.
func (s *stream) raw(ev ssestream.Event) error {
	if ev.Type == "content_block_delta" && !s.sdkOnly {
		if d, ok := decodeDelta(ev.Data); ok {
			switch {
			case d.text == "":
			case d.thinking:
				s.Push(provider.Event{Type: provider.EventReasoning, Text: d.text})
			default:
				s.Push(provider.Event{Type: provider.EventText, Text: d.text})
			}
			return nil
		}
	}
	return s.sdkEvent(ev)
}

// sdkEvent reads ev as the SDK's stream reads it — ping and unnamed events
// are skipped, an error event is an *sdk.Error, any other event is decoded
// into an sdk.MessageStreamEventUnion — by giving it alone to a stream of
// the SDK's, over the SDK's decoder.
func (s *stream) sdkEvent(ev ssestream.Event) error {
	one := ssestream.NewStream[sdk.MessageStreamEventUnion](ssestream.NewDecoder(provider.Replay(s.resp, ev.Type, ev.Data)), nil)
	if one.Next() {
		return s.event(one.Current())
	}
	if err := one.Err(); err != nil {
		return s.p.mapError(s.Ctx, err)
	}
	return nil // skipped
}

// event turns one event the SDK decoded into events.
func (s *stream) event(ev sdk.MessageStreamEventUnion) error {
	// Text and thinking deltas are passed on, not accumulated: nothing
	// reads the assembled text, and the SDK's string concatenation is
	// quadratic in the length of a block.
	skip := ev.Type == "content_block_delta" && (ev.Delta.Type == "text_delta" || ev.Delta.Type == "thinking_delta")
	if !skip {
		if err := s.acc.Accumulate(ev); err != nil {
			return &provider.APIError{Provider: s.p.name, Type: "invalid_response", Message: err.Error()}
		}
	}
	switch ev.Type {
	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			if ev.Delta.Text != "" {
				s.Push(provider.Event{Type: provider.EventText, Text: ev.Delta.Text})
			}
		case "thinking_delta":
			if ev.Delta.Thinking != "" {
				s.Push(provider.Event{Type: provider.EventReasoning, Text: ev.Delta.Thinking})
			}
		}
	case "content_block_stop":
		b := s.acc.Content[ev.Index] // Accumulate checked the index
		switch b.Type {
		case "tool_use":
			input := json.RawMessage(b.Input)
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			if !json.Valid(input) {
				return &provider.APIError{Provider: s.p.name, Type: "invalid_response",
					Message: fmt.Sprintf("tool call %s (%s): arguments are not valid JSON", b.ID, b.Name)}
			}
			s.Push(provider.Event{Type: provider.EventToolCall,
				ToolCall: &provider.ToolCall{ID: b.ID, Name: b.Name, Input: append(json.RawMessage(nil), input...)}})
		case "thinking":
			if b.Signature != "" {
				s.Push(provider.Event{Type: provider.EventReasoning, Signature: b.Signature})
			}
		}
	case "message_stop":
		u := s.acc.Usage
		s.Push(
			provider.Event{Type: provider.EventUsage, Usage: &provider.Usage{
				InputTokens:      int(u.InputTokens),
				OutputTokens:     int(u.OutputTokens),
				CacheReadTokens:  int(u.CacheReadInputTokens),
				CacheWriteTokens: int(u.CacheCreationInputTokens),
			}},
			provider.Event{Type: provider.EventDone, StopReason: stopReason(s.acc.StopReason)})
		s.Finish()
	}
	return nil
}

func stopReason(r sdk.StopReason) provider.StopReason {
	switch r {
	case "end_turn", "stop_sequence":
		return provider.StopEndTurn
	case "tool_use":
		return provider.StopToolUse
	case "max_tokens":
		return provider.StopMaxTokens
	}
	return provider.StopOther
}

// newStream reads resp, the streaming response of a request made with ctx
// (cancel cancels it), through the SDK's SSE decoder.
func newStream(p *Provider, ctx context.Context, cancel context.CancelFunc, resp *http.Response) *stream {
	s := &stream{p: p, resp: resp}
	s.Pump = provider.Pump[ssestream.Event]{Name: p.name, Ctx: ctx, Cancel: cancel,
		SDK:      provider.Events[ssestream.Event]{Decoder: ssestream.NewDecoder(resp)},
		MapError: p.mapError, Decode: s.raw, End: s.end}
	return s
}

// end: the stream ended without message_stop.
func (s *stream) end() error {
	return &provider.APIError{Provider: s.p.name, Type: "connection_error", Retryable: true,
		Message: "the stream ended before message_stop"}
}
