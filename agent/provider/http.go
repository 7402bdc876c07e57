package provider

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Helpers the provider packages share: which HTTP statuses are worth a
// retry, how long the server asked to wait, and the price tables.

// RetryableStatus reports whether a failed request with this HTTP status
// may succeed when tried again: rate limits, timeouts, conflicts, 5xx.
func RetryableStatus(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout ||
		status == http.StatusConflict || status >= 500
}

// RetryAfter reads retry-after-ms or Retry-After (seconds or an HTTP date)
// from a response's headers; 0 when absent or in the past.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// PriceTable maps model families to what they cost. It is read-only once
// built.
type PriceTable map[string]ModelInfo

// Lookup returns the entry for id. A dated snapshot ("gpt-4.1-2025-04-14")
// matches its family ("gpt-4.1"): the longest key that equals id or is
// followed in id by "-". Unknown models cost nothing and have an unknown
// context window.
func (t PriceTable) Lookup(id string) (ModelInfo, bool) {
	best := ""
	for k := range t {
		if (id == k || strings.HasPrefix(id, k+"-")) && len(k) > len(best) {
			best = k
		}
	}
	if best == "" {
		return ModelInfo{ID: id}, false
	}
	m := t[best]
	m.ID = id
	return m, true
}

// keyPattern matches strings that look like API keys.
var keyPattern = regexp.MustCompile(`sk-[A-Za-z0-9_\-]{8,}`)

// ScrubKey removes key, and anything that looks like an API key, from s.
func ScrubKey(s, key string) string {
	if key != "" {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	return keyPattern.ReplaceAllString(s, "sk-[redacted]")
}

// ClassifyTransport fills ae for an error that is no answer of the API:
// timeouts and dropped connections are retryable, other network errors and
// undecodable responses are not.
func ClassifyTransport(ae *APIError, err error) {
	var netErr net.Error
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		ae.Type, ae.Retryable = "timeout", true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNABORTED):
		ae.Type, ae.Retryable = "connection_error", true
	case errors.As(err, &netErr):
		ae.Type = "connection_error"
	default:
		var syntaxErr *json.SyntaxError
		if errors.As(err, &syntaxErr) {
			ae.Type = "invalid_response"
		}
	}
	ae.Message = err.Error()
}

// contextExceeded are what servers say when a request is longer than the
// model's context window, lower case: OpenAI's code and message (vLLM's
// too), vLLM's newer wording, llama.cpp's, Ollama's, Anthropic's, the
// LiteLLM proxy's exception name.
var contextExceeded = []string{
	"context_length_exceeded", "maximum context length", "maximum model length", "max_model_len",
	"exceed_context_size", "exceeds the available context size", "context size has been exceeded",
	"input length exceeds the context length", "prompt is too long", "exceed context limit",
	"contextwindowexceedederror", "context window exceeded", "too many tokens in the prompt",
}

// ContextExceeded reports whether an error of type typ saying msg means
// that the request was longer than the model's context window.
func ContextExceeded(typ, msg string) bool {
	s := strings.ToLower(typ + " " + msg)
	for _, p := range contextExceeded {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// upstreamGone are what a proxy or gateway in front of the model says when
// the model behind it cannot be reached (lower case): Envoy's and nginx's
// words, the LiteLLM router's, a connection error passed on. Asking again
// at once only multiplies the proxy's own retries.
var upstreamGone = []string{
	"upstream connect error", "no healthy upstream", "upstream request timeout", "no deployments available",
	"apiconnectionerror", "connection refused", "all connection attempts failed", "name or service not known",
}

// UpstreamGone reports whether an answer with this HTTP status, error type
// and message says that the model behind a proxy is unreachable: 502 Bad
// Gateway, or a 5xx whose message says so.
func UpstreamGone(status int, typ, msg string) bool {
	if status == http.StatusBadGateway {
		return true
	}
	if status < 500 {
		return false
	}
	s := strings.ToLower(typ + " " + msg)
	for _, p := range upstreamGone {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// Seal finishes ae: its message is scrubbed of key, and err becomes its
// cause — as a scrubbed copy when err's text mentions a key. An error that
// says the request outgrew the context window is marked ContextExceeded
// (and is not retried as it is); one that says the model behind a proxy is
// unreachable is not retried.
func Seal(ae *APIError, err error, key string) *APIError {
	if ContextExceeded(ae.Type, ae.Message) {
		ae.ContextExceeded, ae.Retryable = true, false
	}
	if UpstreamGone(ae.Status, ae.Type, ae.Message) {
		ae.Retryable = false
	}
	ae.Message = ScrubKey(ae.Message, key)
	ae.Err = err
	if s := err.Error(); (key != "" && strings.Contains(s, key)) || keyPattern.MatchString(s) {
		ae.Err = errors.New(ScrubKey(s, key))
	}
	return ae
}
