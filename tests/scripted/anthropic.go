package scripted

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// anthropicFormat writes the Anthropic Messages streaming format:
// message_start, content_block_start / _delta / _stop per block,
// message_delta (stop reason, output tokens), message_stop; ping and error
// events.
type anthropicFormat struct{}

func (anthropicFormat) writeError(w http.ResponseWriter, status int, typ, msg, retryAfter string) {
	typ, msg = defaultError(status, typ, msg, true)
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_scripted")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type": "error", "error": map[string]any{"type": typ, "message": msg},
	})
}

func (anthropicFormat) stream(sw *sseWriter, t Turn, req Request) {
	u, _ := turnUsage(t)
	sw.event("message_start", map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id": "msg_scripted_" + strconv.Itoa(req.N), "type": "message", "role": "assistant",
			"model": t.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{
				"input_tokens":                u.Input,
				"output_tokens":               1,
				"cache_read_input_tokens":     u.CacheRead,
				"cache_creation_input_tokens": u.CacheWrite,
			},
		},
	})
	s := &anthropicStream{sw: sw, index: -1}
	for _, st := range t.Steps {
		if !sw.ok() {
			return
		}
		if played, goOn := sw.control(st); played {
			if !goOn {
				return
			}
			continue
		}
		if !s.step(st) {
			return
		}
	}
	s.closeBlock()
	_, stop := stopWords(turnStop(t))
	sw.event("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": u.Output},
	})
	sw.event("message_stop", map[string]any{"type": "message_stop"})
}

// anthropicStream is one streamed message being written: its content
// blocks, one open at a time.
type anthropicStream struct {
	sw    *sseWriter
	index int    // the index of the last block opened
	open  string // type of the open block, "" when none
}

// closeBlock ends the open block, if any.
func (s *anthropicStream) closeBlock() {
	if s.open != "" {
		s.sw.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": s.index})
		s.open = ""
	}
}

// openBlock ends the open block and starts block, of type typ.
func (s *anthropicStream) openBlock(typ string, block map[string]any) {
	s.closeBlock()
	s.index++
	s.open = typ
	s.sw.event("content_block_start", map[string]any{"type": "content_block_start", "index": s.index, "content_block": block})
}

// delta writes d to the open block.
func (s *anthropicStream) delta(d map[string]any) {
	s.sw.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": s.index, "delta": d})
}

// step writes one step of the turn, and reports whether the stream goes
// on after it.
func (s *anthropicStream) step(st Step) bool {
	sw := s.sw
	switch st.kind {
	case stepText:
		if s.open != "text" {
			s.openBlock("text", map[string]any{"type": "text", "text": ""})
		}
		for _, p := range st.pieces {
			sw.content()
			s.delta(map[string]any{"type": "text_delta", "text": p})
		}
	case stepReasoning:
		if s.open != "thinking" {
			s.openBlock("thinking", map[string]any{"type": "thinking", "thinking": "", "signature": ""})
		}
		for _, p := range st.pieces {
			sw.content()
			s.delta(map[string]any{"type": "thinking_delta", "thinking": p})
		}
	case stepSignature:
		if s.open != "thinking" {
			s.openBlock("thinking", map[string]any{"type": "thinking", "thinking": "", "signature": ""})
		}
		s.delta(map[string]any{"type": "signature_delta", "signature": st.pieces[0]})
		s.closeBlock()
	case stepToolCall:
		sw.content()
		s.openBlock("tool_use", map[string]any{"type": "tool_use", "id": st.id, "name": st.name, "input": map[string]any{}})
		for _, p := range st.pieces {
			s.delta(map[string]any{"type": "input_json_delta", "partial_json": p})
		}
		s.closeBlock()
	case stepError:
		typ, msg := defaultError(529, st.errTyp, st.errMsg, true)
		sw.event("error", map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
		return false
	case stepPing:
		sw.event("ping", map[string]any{"type": "ping"})
	case stepUsage, stepStop:
		// at the end
	}
	return true
}
