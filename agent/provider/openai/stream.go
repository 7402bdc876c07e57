package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// stream adapts the SDK's server-sent events to provider events. Text and
// reasoning are passed on as they arrive; tool calls are assembled by the
// SDK's ChatCompletionAccumulator and emitted, complete and in index order,
// when the stream ends; then usage and done.
//
// The events come raw from the SDK's SSE decoder. A chunk that carries only
// text (nearly all of them) is read by decodeText; any other event — the
// first with a tool call, usage, an error, [DONE], anything unusual — goes
// through the SDK's own stream and decoding (sdkEvent), as it did before
// the fast path existed.
type stream struct {
	provider.Pump[ssestream.Event]
	p    *Provider
	resp *http.Response // the streaming response, for sdkEvent
	// sdkOnly sends every event through the SDK: the tests' reference,
	// which the fast path must agree with.
	sdkOnly bool

	acc     sdk.ChatCompletionAccumulator
	callIDs []string // tool call ids by index, for deltas without an index
	id      string   // the first chunk's id
	finish  string
	usage   *provider.Usage
}

// event turns one server-sent event into events.
func (s *stream) event(ev ssestream.Event) error {
	if c, ok := decodeText(ev.Data); ok && !s.sdkOnly {
		if s.id == "" {
			s.id = string(c.id)
		}
		s.text(c)
		return nil
	}
	return s.sdkEvent(ev)
}

// sdkEvent reads ev as the SDK's stream reads it — [DONE] ends the stream,
// a chunk with an "error" is a *ssestream.StreamError, a chunk is decoded
// into an sdk.ChatCompletionChunk — by giving it alone to a stream of the
// SDK's, over the SDK's decoder.
func (s *stream) sdkEvent(ev ssestream.Event) error {
	one := ssestream.NewStream[sdk.ChatCompletionChunk](ssestream.NewDecoder(provider.Replay(s.resp, ev.Type, ev.Data)), nil)
	if one.Next() {
		return s.chunk(one.Current())
	}
	if err := one.Err(); err != nil {
		return s.p.mapError(s.Ctx, err)
	}
	return s.end() // [DONE]
}

// text passes on what a chunk's choice 0 says.
func (s *stream) text(c textChunk) {
	if c.reasoningContent != "" {
		s.Push(provider.Event{Type: provider.EventReasoning, Text: c.reasoningContent})
	} else if c.reasoning != "" {
		s.Push(provider.Event{Type: provider.EventReasoning, Text: c.reasoning})
	}
	if c.content != "" {
		s.Push(provider.Event{Type: provider.EventText, Text: c.content})
	}
	if c.refusal != "" {
		s.Push(provider.Event{Type: provider.EventText, Text: c.refusal})
	}
	if c.finish != "" {
		s.finish = c.finish
	}
}

// chunk turns one chunk the SDK decoded into events.
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
		s.text(textChunk{
			reasoningContent: extraString(d.JSON.ExtraFields, "reasoning_content"),
			reasoning:        extraString(d.JSON.ExtraFields, "reasoning"),
			content:          d.Content, refusal: d.Refusal, finish: ch.FinishReason,
		})
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
func (s *stream) end() error {
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
	s.Push(calls...)
	if s.usage != nil {
		s.Push(provider.Event{Type: provider.EventUsage, Usage: s.usage})
	}
	s.Push(provider.Event{Type: provider.EventDone, StopReason: stopReason(s.finish, len(calls) > 0)})
	s.Finish()
	return nil
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

// newStream reads resp, the streaming response of a request made with ctx
// (cancel cancels it), through the SDK's SSE decoder.
func newStream(p *Provider, ctx context.Context, cancel context.CancelFunc, resp *http.Response) *stream {
	s := &stream{p: p, resp: resp}
	s.Pump = provider.Pump[ssestream.Event]{Name: p.name, Ctx: ctx, Cancel: cancel,
		SDK:      provider.Events[ssestream.Event]{Decoder: ssestream.NewDecoder(resp)},
		MapError: p.mapError, Decode: s.event, End: s.end}
	return s
}
