package openai

import (
	"github.com/agentkernel/agentkernel/agent/provider/internal/jsonscan"
)

// textChunk is what a chat.completion.chunk that carries text says: the
// bulk of a stream. decodeText reads it without the SDK's reflection.
type textChunk struct {
	id []byte // aliases the event's data
	// Of choice 0's delta: reasoning_content (llama.cpp, vLLM) and
	// reasoning (others), content and refusal; and its finish_reason.
	reasoningContent, reasoning, content, refusal, finish string
}

// decodeText reads data as a chunk that holds at most choice 0's text,
// reasoning, refusal and finish reason. It declines (ok false) everything
// else — tool call deltas, a usage object, an error, another choice, a
// null choice list, values of an unexpected type, encodings the decoders
// may read differently (see jsonscan) — which the SDK then decodes: for
// what it accepts, it gives what the SDK's decoding gives (TestFastText,
// FuzzFastText).
func decodeText(data []byte) (c textChunk, ok bool) {
	s := jsonscan.New(data)
	if !s.Enter('{') {
		return c, false
	}
	var seen jsonscan.Keys // a repeated key fails (Once)
	for i := 0; s.More('}', i); i++ {
		switch string(s.Key()) {
		case "id":
			s.Once(&seen, 1)
			c.id = s.StringBytes()
		case "choices":
			s.Once(&seen, 2)
			s.Enter('[')
			for j := 0; s.More(']', j); j++ {
				if j > 0 {
					s.Fail() // we ask for one choice
				}
				textChoice(&s, &c)
			}
		case "usage":
			s.Once(&seen, 4)
			if !s.IsNull() {
				s.Fail()
			}
		case "error":
			s.Fail() // the SDK's stream turns it into an error
		default:
			s.Skip()
		}
	}
	return c, s.End()
}

func textChoice(s *jsonscan.Scanner, c *textChunk) {
	s.Enter('{')
	var seen jsonscan.Keys // a repeated key fails (Once)
	for i := 0; s.More('}', i); i++ {
		switch string(s.Key()) {
		case "index":
			s.Once(&seen, 1)
			if s.Int() != 0 {
				s.Fail()
			}
		case "delta":
			s.Once(&seen, 2)
			if !s.IsNull() {
				textDelta(s, c)
			}
		case "finish_reason":
			s.Once(&seen, 4)
			if !s.IsNull() {
				c.finish = s.String()
			}
		default:
			s.Skip()
		}
	}
}

func textDelta(s *jsonscan.Scanner, c *textChunk) {
	s.Enter('{')
	var seen jsonscan.Keys // a repeated key fails (Once)
	str := func(dst *string) {
		if !s.IsNull() {
			*dst = s.String()
		}
	}
	for i := 0; s.More('}', i); i++ {
		switch string(s.Key()) {
		case "content":
			s.Once(&seen, 1)
			str(&c.content)
		case "refusal":
			s.Once(&seen, 2)
			str(&c.refusal)
		case "reasoning_content":
			s.Once(&seen, 4)
			str(&c.reasoningContent)
		case "reasoning":
			s.Once(&seen, 8)
			str(&c.reasoning)
		case "tool_calls":
			s.Once(&seen, 16)
			// Only an empty list: a tool call delta is the SDK's to
			// decode and accumulate.
			if !s.IsNull() && s.Enter('[') && s.More(']', 0) {
				s.Fail()
			}
		default:
			s.Skip()
		}
	}
}
