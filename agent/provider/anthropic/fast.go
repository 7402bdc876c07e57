package anthropic

import (
	"github.com/agentkernel/agentkernel/agent/provider/internal/jsonscan"
)

// textDelta is what a content_block_delta event that carries text says: the
// bulk of a stream. decodeDelta reads it without the SDK's reflection.
type textDelta struct {
	thinking bool   // a thinking_delta, else a text_delta
	text     string // its text, or thinking
}

// decodeDelta reads data as a content_block_delta whose delta is a
// text_delta or a thinking_delta. It declines (ok false) every other event
// — message_start, content_block_start and _stop, input_json_delta,
// signature_delta, message_delta, message_stop, errors — and values of an
// unexpected type or encodings the decoders may read differently (see
// jsonscan), which the SDK then decodes: for what it accepts, it gives what
// the SDK's decoding gives (TestFastDelta, FuzzFastDelta).
func decodeDelta(data []byte) (d textDelta, ok bool) {
	s := jsonscan.New(data)
	if !s.Enter('{') {
		return d, false
	}
	var seen jsonscan.Keys // a repeated key fails (Once)
	for i := 0; s.More('}', i); i++ {
		switch string(s.Key()) {
		case "type":
			s.Once(&seen, 1)
			if string(s.StringBytes()) != "content_block_delta" {
				s.Fail()
			}
		case "delta":
			s.Once(&seen, 2)
			deltaText(&s, &d)
		default:
			s.Skip()
		}
	}
	return d, seen == 3 && s.End()
}

func deltaText(s *jsonscan.Scanner, d *textDelta) {
	s.Enter('{')
	var seen jsonscan.Keys // a repeated key fails (Once)
	var text, thinking string
	for i := 0; s.More('}', i); i++ {
		switch string(s.Key()) {
		case "type":
			s.Once(&seen, 1)
			switch string(s.StringBytes()) {
			case "text_delta":
			case "thinking_delta":
				d.thinking = true
			default:
				s.Fail()
			}
		case "text":
			s.Once(&seen, 2)
			if !s.IsNull() {
				text = s.String()
			}
		case "thinking":
			s.Once(&seen, 4)
			if !s.IsNull() {
				thinking = s.String()
			}
		default:
			s.Skip()
		}
	}
	if seen&1 == 0 {
		s.Fail()
	}
	d.text = text
	if d.thinking {
		d.text = thinking
	}
}
