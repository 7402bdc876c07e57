package scripted

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
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
	s := &openaiStream{sw: sw, id: "chatcmpl-scripted-" + strconv.Itoa(req.N), created: time.Now().Unix(),
		model: t.Model, usage: includeUsage(req)}
	s.delta(map[string]any{"role": "assistant", "content": ""})
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
	s.end(t)
}

// openaiStream is one streamed chat completion being written.
type openaiStream struct {
	sw      *sseWriter
	id      string
	created int64
	model   string
	usage   bool // the request asked for a usage chunk
	n       int  // chunks so far
	tool    int  // the index of the next tool call
}

// chunk is a chat.completion.chunk of choices. As OpenAI sends them: with
// a service tier, a usage of null on every chunk but the last when usage
// was asked for, and an obfuscation string of varying length that pads
// the chunk.
func (s *openaiStream) chunk(choices any) map[string]any {
	s.n++
	c := map[string]any{
		"id": s.id, "object": "chat.completion.chunk", "created": s.created,
		"model": s.model, "service_tier": "default", "system_fingerprint": "fp_scripted", "choices": choices,
		"obfuscation": "Zq8xPw3"[:s.n%7+1],
	}
	if s.usage {
		c["usage"] = nil
	}
	return c
}

// delta writes a chunk of the one choice's delta d.
func (s *openaiStream) delta(d map[string]any) {
	s.sw.event("", s.chunk([]any{map[string]any{
		"index": 0, "delta": d, "logprobs": nil, "finish_reason": nil,
	}}))
}

// step writes one step of the turn, and reports whether the stream goes
// on after it.
func (s *openaiStream) step(st Step) bool {
	sw := s.sw
	switch st.kind {
	case stepText:
		for _, p := range st.pieces {
			sw.content()
			s.delta(map[string]any{"content": p})
		}
	case stepReasoning:
		for _, p := range st.pieces {
			sw.content()
			s.delta(map[string]any{"reasoning_content": p})
		}
	case stepToolCall:
		sw.content()
		s.delta(map[string]any{"tool_calls": []any{map[string]any{
			"index": s.tool, "id": st.id, "type": "function",
			"function": map[string]any{"name": st.name, "arguments": ""},
		}}})
		for _, p := range st.pieces {
			s.delta(map[string]any{"tool_calls": []any{map[string]any{
				"index": s.tool, "function": map[string]any{"arguments": p},
			}}})
		}
		s.tool++
	case stepError:
		typ, msg := defaultError(500, st.errTyp, st.errMsg, false)
		sw.event("", map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
		return false
	case stepPing:
		sw.write(": ping\n\n")
	case stepSignature, stepUsage, stepStop:
		// signature: not in this format; usage and stop: at the end
	}
	return true
}

// end writes the turn's finish reason, its usage chunk when the request
// asked for one, and [DONE].
func (s *openaiStream) end(t Turn) {
	finish, _ := stopWords(turnStop(t))
	s.sw.event("", s.chunk([]any{map[string]any{
		"index": 0, "delta": map[string]any{}, "logprobs": nil, "finish_reason": finish,
	}}))
	if u, ok := turnUsage(t); ok && s.usage {
		var choices any = []any{}
		if u.NullChoices {
			choices = nil
		}
		c := s.chunk(choices)
		c["usage"] = map[string]any{
			"prompt_tokens":             u.Input + u.CacheRead,
			"completion_tokens":         u.Output,
			"total_tokens":              u.Input + u.CacheRead + u.Output,
			"prompt_tokens_details":     map[string]any{"cached_tokens": u.CacheRead},
			"completion_tokens_details": map[string]any{"reasoning_tokens": 0},
		}
		s.sw.event("", c)
	}
	s.sw.line("", "[DONE]")
}

func includeUsage(req Request) bool {
	so, _ := req.Body["stream_options"].(map[string]any)
	b, _ := so["include_usage"].(bool)
	return b
}

// whole answers a request that does not stream (stream false or absent):
// one chat.completion object with the turn's text, reasoning_content and
// tool calls, its finish reason and usage, after the turn's delays.
func (openaiFormat) whole(sw *sseWriter, t Turn, req Request) {
	var text, reasoning strings.Builder
	var calls []any
	for _, st := range t.Steps {
		switch st.kind {
		case stepText:
			text.WriteString(strings.Join(st.pieces, ""))
		case stepReasoning:
			reasoning.WriteString(strings.Join(st.pieces, ""))
		case stepToolCall:
			calls = append(calls, map[string]any{"id": st.id, "type": "function",
				"function": map[string]any{"name": st.name, "arguments": strings.Join(st.pieces, "")}})
		case stepDelay:
			if !sw.wait(st.delay) {
				return
			}
		}
	}
	msg := map[string]any{"role": "assistant", "content": text.String(), "refusal": nil}
	if reasoning.Len() > 0 {
		msg["reasoning_content"] = reasoning.String()
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	finish, _ := stopWords(turnStop(t))
	u, _ := turnUsage(t)
	body, err := json.Marshal(map[string]any{
		"id": "chatcmpl-scripted-" + strconv.Itoa(req.N), "object": "chat.completion", "created": time.Now().Unix(),
		"model": t.Model, "system_fingerprint": "fp_scripted",
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage": map[string]any{"prompt_tokens": u.Input + u.CacheRead, "completion_tokens": u.Output,
			"total_tokens": u.Input + u.CacheRead + u.Output, "prompt_tokens_details": map[string]any{"cached_tokens": u.CacheRead}},
	})
	if err != nil {
		panic(fmt.Sprintf("scripted: marshal completion: %v", err)) // our own values: a bug
	}
	sw.w.Header().Set("Content-Type", "application/json")
	sw.w.WriteHeader(http.StatusOK)
	if text.Len()+reasoning.Len()+len(calls) > 0 {
		sw.content()
	}
	sw.write(string(body))
}
