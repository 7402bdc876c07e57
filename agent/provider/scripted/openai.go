package scripted

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// openaiFormat writes the OpenAI chat completions streaming format:
// `data: {chat.completion.chunk}` lines, a usage chunk with empty (or null)
// choices, and `data: [DONE]`.
type openaiFormat struct{}

func (openaiFormat) writeError(w http.ResponseWriter, status int, typ, msg, retryAfter string) {
	typ, msg = defaultError(status, typ, msg, false)
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": typ},
	})
}

func (openaiFormat) stream(sw *sseWriter, t Turn, req Request) {
	id := "chatcmpl-scripted-" + strconv.Itoa(req.N)
	created := time.Now().Unix()
	usage := includeUsage(req)
	n := 0
	chunk := func(choices any) map[string]any {
		// As OpenAI sends them: with a service tier, a usage of null on
		// every chunk but the last when usage was asked for, and an
		// obfuscation string of varying length that pads the chunk.
		n++
		c := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created,
			"model": t.Model, "service_tier": "default", "system_fingerprint": "fp_scripted", "choices": choices,
			"obfuscation": "Zq8xPw3"[:n%7+1],
		}
		if usage {
			c["usage"] = nil
		}
		return c
	}
	delta := func(d map[string]any) {
		sw.event("", chunk([]any{map[string]any{
			"index": 0, "delta": d, "logprobs": nil, "finish_reason": nil,
		}}))
	}
	delta(map[string]any{"role": "assistant", "content": ""})
	toolIndex := 0
	for _, st := range t.Steps {
		if !sw.ok() {
			return
		}
		switch st.kind {
		case stepText:
			for _, p := range st.pieces {
				delta(map[string]any{"content": p})
			}
		case stepReasoning:
			for _, p := range st.pieces {
				delta(map[string]any{"reasoning_content": p})
			}
		case stepToolCall:
			delta(map[string]any{"tool_calls": []any{map[string]any{
				"index": toolIndex, "id": st.id, "type": "function",
				"function": map[string]any{"name": st.name, "arguments": ""},
			}}})
			for _, p := range st.pieces {
				delta(map[string]any{"tool_calls": []any{map[string]any{
					"index": toolIndex, "function": map[string]any{"arguments": p},
				}}})
			}
			toolIndex++
		case stepDelay:
			if !sw.wait(st.delay) {
				return
			}
		case stepStall:
			sw.wait(-1)
			return
		case stepError:
			typ, msg := defaultError(500, st.errTyp, st.errMsg, false)
			sw.event("", map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
			return
		case stepPing:
			sw.write(": ping\n\n")
		case stepDisconnect:
			sw.disconnect()
		case stepRaw:
			sw.line("", st.pieces[0])
		case stepSignature, stepUsage, stepStop:
			// signature: not in this format; usage and stop: at the end
		}
	}
	finish, _ := stopWords(turnStop(t))
	sw.event("", chunk([]any{map[string]any{
		"index": 0, "delta": map[string]any{}, "logprobs": nil, "finish_reason": finish,
	}}))
	if u, ok := turnUsage(t); ok && usage {
		var choices any = []any{}
		if u.NullChoices {
			choices = nil
		}
		c := chunk(choices)
		c["usage"] = map[string]any{
			"prompt_tokens":             u.Input + u.CacheRead,
			"completion_tokens":         u.Output,
			"total_tokens":              u.Input + u.CacheRead + u.Output,
			"prompt_tokens_details":     map[string]any{"cached_tokens": u.CacheRead},
			"completion_tokens_details": map[string]any{"reasoning_tokens": 0},
		}
		sw.event("", c)
	}
	sw.line("", "[DONE]")
}

func includeUsage(req Request) bool {
	so, _ := req.Body["stream_options"].(map[string]any)
	b, _ := so["include_usage"].(bool)
	return b
}
