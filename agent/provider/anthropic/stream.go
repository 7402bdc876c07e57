package anthropic

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// stream adapts the SDK's event stream to provider events. The SDK's
// Message.Accumulate assembles the blocks; text and thinking deltas are
// passed on as they arrive, a thinking block's signature on an empty
// reasoning event when the block stops, a tool_use block as one tool call
// when it stops, usage and done at message_stop.
type stream struct {
	provider.Pump[sdk.MessageStreamEventUnion]
	p *Provider

	acc sdk.Message
}

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

// newStream adapts sdkStream, whose context is ctx (cancel cancels it).
func newStream(p *Provider, ctx context.Context, cancel context.CancelFunc, sdkStream *ssestream.Stream[sdk.MessageStreamEventUnion]) *stream {
	s := &stream{p: p}
	s.Pump = provider.Pump[sdk.MessageStreamEventUnion]{Name: p.name, Ctx: ctx, Cancel: cancel, SDK: sdkStream,
		MapError: p.mapError, Decode: s.event, End: s.end}
	return s
}

// end: the stream ended without message_stop.
func (s *stream) end() error {
	return &provider.APIError{Provider: s.p.name, Type: "connection_error", Retryable: true,
		Message: "the stream ended before message_stop"}
}
