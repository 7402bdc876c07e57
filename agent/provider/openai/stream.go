package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// stream adapts the SDK's chunk stream to provider events. Text and
// reasoning are passed on as they arrive; tool calls are assembled by the
// SDK's ChatCompletionAccumulator and emitted, complete and in index order,
// when the stream ends; then usage and done.
type stream struct {
	p      *Provider
	ctx    context.Context
	cancel context.CancelFunc
	sdk    *ssestream.Stream[sdk.ChatCompletionChunk]

	acc     sdk.ChatCompletionAccumulator
	callIDs []string // tool call ids by index, for deltas without an index
	id      string   // the first chunk's id
	finish  string
	usage   *provider.Usage
	pending []provider.Event
	done    bool  // EventDone is queued or sent
	err     error // sticky
}

func (s *stream) Next() (provider.Event, error) {
	for {
		if len(s.pending) > 0 {
			ev := s.pending[0]
			s.pending = s.pending[1:]
			return ev, nil
		}
		if s.err != nil {
			return provider.Event{}, s.err
		}
		if s.done {
			return provider.Event{}, io.EOF
		}
		if s.ctx.Err() != nil {
			s.fail(fmt.Errorf("%s: stream aborted: %w", s.p.name, context.Cause(s.ctx)))
			continue
		}
		if !s.sdk.Next() {
			if err := s.sdk.Err(); err != nil {
				s.fail(s.p.mapError(s.ctx, err))
				continue
			}
			if s.ctx.Err() != nil {
				continue // aborted, not ended: reported at the top of the loop
			}
			s.end()
			continue
		}
		if err := s.chunk(s.sdk.Current()); err != nil {
			s.fail(err)
		}
	}
}

func (s *stream) fail(err error) {
	s.err = err
	_ = s.sdk.Close()
	s.cancel()
}

// chunk turns one chunk into events.
func (s *stream) chunk(c sdk.ChatCompletionChunk) error {
	if s.id == "" {
		s.id = c.ID
	}
	if c.JSON.Usage.Valid() {
		u := provider.Usage{
			InputTokens:     int(c.Usage.PromptTokens - c.Usage.PromptTokensDetails.CachedTokens),
			OutputTokens:    int(c.Usage.CompletionTokens),
			CacheReadTokens: int(c.Usage.PromptTokensDetails.CachedTokens),
		}
		s.usage = &u
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // we ask for one choice
		}
		d := ch.Delta
		if r := extraString(d.JSON.ExtraFields, "reasoning_content"); r != "" {
			s.pending = append(s.pending, provider.Event{Type: provider.EventReasoning, Text: r})
		} else if r := extraString(d.JSON.ExtraFields, "reasoning"); r != "" {
			s.pending = append(s.pending, provider.Event{Type: provider.EventReasoning, Text: r})
		}
		if d.Content != "" {
			s.pending = append(s.pending, provider.Event{Type: provider.EventText, Text: d.Content})
		}
		if d.Refusal != "" {
			s.pending = append(s.pending, provider.Event{Type: provider.EventText, Text: d.Refusal})
		}
		if ch.FinishReason != "" {
			s.finish = ch.FinishReason
		}
	}
	// Only chunks with tool calls go to the accumulator: text is passed on
	// as it comes, and accumulating it too would cost time for nothing.
	// Some servers vary the id between chunks; the accumulator refuses
	// that, and the id carries nothing we need.
	if !hasToolCalls(c) {
		return nil
	}
	s.indexToolCalls(c)
	c.ID = s.id
	if !s.acc.AddChunk(c) {
		return &provider.APIError{Provider: s.p.name, Type: "invalid_response",
			Message: "a stream chunk could not be accumulated (bad choice or tool call index)"}
	}
	return nil
}

// end queues the tool calls, usage and done once the stream has ended.
func (s *stream) end() {
	var calls []provider.Event
	if len(s.acc.Choices) > 0 {
		tcs := append([]sdk.ChatCompletionMessageToolCallUnion(nil), s.acc.Choices[0].Message.ToolCalls...)
		for i, tc := range tcs {
			if tc.Function.Name == "" && tc.ID == "" {
				continue // a gap in sparse indices
			}
			id := tc.ID
			if id == "" {
				id = fmt.Sprintf("call_%d", i)
			}
			input := json.RawMessage(tc.Function.Arguments)
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			calls = append(calls, provider.Event{Type: provider.EventToolCall,
				ToolCall: &provider.ToolCall{ID: id, Name: tc.Function.Name, Input: input}})
		}
	}
	s.pending = append(s.pending, calls...)
	if s.usage != nil {
		s.pending = append(s.pending, provider.Event{Type: provider.EventUsage, Usage: s.usage})
	}
	s.pending = append(s.pending, provider.Event{Type: provider.EventDone, StopReason: stopReason(s.finish, len(calls) > 0)})
	s.done = true
	s.cancel()
}

// indexToolCalls gives an index to tool call deltas that come without one
// (some servers send each call whole, in one chunk, unindexed): a new id
// is a new call, a known id its call, no id the last call.
func (s *stream) indexToolCalls(c sdk.ChatCompletionChunk) {
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		for j := range ch.Delta.ToolCalls {
			tc := &ch.Delta.ToolCalls[j]
			if tc.JSON.Index.Valid() {
				for int(tc.Index) >= len(s.callIDs) && tc.Index < 1<<16 {
					s.callIDs = append(s.callIDs, "")
				}
				if tc.ID != "" && tc.Index >= 0 && int(tc.Index) < len(s.callIDs) {
					s.callIDs[tc.Index] = tc.ID
				}
				continue
			}
			idx := -1
			for k, id := range s.callIDs {
				if tc.ID != "" && id == tc.ID {
					idx = k
				}
			}
			switch {
			case idx >= 0:
			case tc.ID != "" || len(s.callIDs) == 0:
				s.callIDs = append(s.callIDs, tc.ID)
				idx = len(s.callIDs) - 1
			default:
				idx = len(s.callIDs) - 1
			}
			tc.Index = int64(idx)
		}
	}
}

func hasToolCalls(c sdk.ChatCompletionChunk) bool {
	for _, ch := range c.Choices {
		if len(ch.Delta.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

func stopReason(finish string, calls bool) provider.StopReason {
	switch finish {
	case "tool_calls", "function_call":
		return provider.StopToolUse
	case "length":
		return provider.StopMaxTokens
	case "stop", "":
		if calls {
			return provider.StopToolUse // Ollama and others say "stop" after tool calls
		}
		return provider.StopEndTurn
	}
	return provider.StopOther
}

// extraString returns a string field the SDK does not know (e.g.
// reasoning_content), "" if absent or not a string.
func extraString(fields map[string]respjson.Field, name string) string {
	// Unknown fields are never Valid (the SDK has no type for them):
	// read the raw JSON.
	f, ok := fields[name]
	if !ok || f.Raw() == "" || f.Raw() == "null" {
		return ""
	}
	var s string
	if json.Unmarshal([]byte(f.Raw()), &s) != nil {
		return ""
	}
	return s
}

// Close aborts the stream; safe from any goroutine, idempotent.
func (s *stream) Close() error {
	s.cancel()
	return nil
}
