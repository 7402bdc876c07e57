package provider

import (
	"errors"
	"testing"
)

// TestSealClassifies: what servers say when a request outgrew the context
// window marks the error ContextExceeded (not retried as it is); what a
// proxy says when the model behind it is unreachable is not retried.
func TestSealClassifies(t *testing.T) {
	for _, tt := range []struct {
		name              string
		status            int
		typ, msg          string
		exceeded, retried bool
	}{
		{"OpenAI", 400, "invalid_request_error", "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.", true, false},
		{"vLLM", 400, "BadRequestError", "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens", true, false},
		{"vLLM newer", 400, "BadRequestError", "The decoder prompt (length 9000) is longer than the maximum model length of 8192.", true, false},
		{"llama.cpp", 400, "exceed_context_size_error", "the request exceeds the available context size, try increasing it", true, false},
		{"Ollama", 400, "", "input length exceeds the context length", true, false},
		{"Anthropic", 400, "invalid_request_error", "prompt is too long: 210473 tokens > 200000 maximum", true, false},
		{"LiteLLM", 400, "", "litellm.ContextWindowExceededError: litellm.BadRequestError: ...", true, false},
		{"Bad Gateway", 502, "", "Bad Gateway", false, false},
		{"Envoy", 503, "", "upstream connect error or disconnect/reset before headers. reset reason: connection failure", false, false},
		{"LiteLLM router", 500, "", "No deployments available for selected model, Try again in 60 seconds.", false, false},
		{"overloaded", 503, "api_error", "The server is overloaded", false, true},
		{"rate limit", 429, "rate_limit_error", "slow down", false, true},
		{"bad request", 400, "invalid_request_error", "messages: field required", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ae := &APIError{Provider: "p", Status: tt.status, Type: tt.typ, Message: tt.msg, Retryable: RetryableStatus(tt.status)}
			ae = Seal(ae, errors.New(tt.msg), "")
			if ae.ContextExceeded != tt.exceeded || ae.Retryable != tt.retried {
				t.Errorf("ContextExceeded %v, Retryable %v; want %v, %v", ae.ContextExceeded, ae.Retryable, tt.exceeded, tt.retried)
			}
		})
	}
}
