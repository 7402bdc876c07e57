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
	index := -1
	open := "" // type of the open block, "" when none
	closeBlock := func() {
		if open != "" {
			sw.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
			open = ""
		}
	}
	openBlock := func(typ string, block map[string]any) {
		closeBlock()
		index++
		open = typ
		sw.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": block})
	}
	delta := func(d map[string]any) {
		sw.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": d})
	}
	for _, st := range t.Steps {
		if !sw.ok() {
			return
		}
		switch st.kind {
		case stepText:
			if open != "text" {
				openBlock("text", map[string]any{"type": "text", "text": ""})
			}
			for _, p := range st.pieces {
				sw.content()
				delta(map[string]any{"type": "text_delta", "text": p})
			}
		case stepReasoning:
			if open != "thinking" {
				openBlock("thinking", map[string]any{"type": "thinking", "thinking": "", "signature": ""})
			}
			for _, p := range st.pieces {
				sw.content()
				delta(map[string]any{"type": "thinking_delta", "thinking": p})
			}
		case stepSignature:
			if open != "thinking" {
				openBlock("thinking", map[string]any{"type": "thinking", "thinking": "", "signature": ""})
			}
			delta(map[string]any{"type": "signature_delta", "signature": st.pieces[0]})
			closeBlock()
		case stepToolCall:
			sw.content()
			openBlock("tool_use", map[string]any{"type": "tool_use", "id": st.id, "name": st.name, "input": map[string]any{}})
			for _, p := range st.pieces {
				delta(map[string]any{"type": "input_json_delta", "partial_json": p})
			}
			closeBlock()
		case stepDelay:
			if !sw.wait(st.delay) {
				return
			}
		case stepStall:
			sw.wait(-1)
			return
		case stepError:
			typ, msg := defaultError(529, st.errTyp, st.errMsg, true)
			sw.event("error", map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
			return
		case stepPing:
			sw.event("ping", map[string]any{"type": "ping"})
		case stepDisconnect:
			sw.disconnect()
		case stepRaw:
			sw.line("", st.pieces[0])
		case stepUsage, stepStop:
			// at the end
		}
	}
	closeBlock()
	_, stop := stopWords(turnStop(t))
	sw.event("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": u.Output},
	})
	sw.event("message_stop", map[string]any{"type": "message_stop"})
}
