package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// keyPattern matches things that look like API keys (OpenAI "sk-…",
// "sk-proj-…", Anthropic "sk-ant-…").
var keyPattern = regexp.MustCompile(`sk-[A-Za-z0-9_\-]{8,}`)

// scrub removes the configured key and anything that looks like a key.
func scrub(s, key string) string {
	if key != "" {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	return keyPattern.ReplaceAllString(s, "sk-[redacted]")
}

// mapError turns an error of the SDK or the transport into an
// *provider.APIError, or a wrapped context error when ctx ended.
func (p *Provider) mapError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%s: %w", p.name, cerr)
	}
	ae := &provider.APIError{Provider: p.name}
	var apiErr *sdk.Error
	var streamErr *ssestream.StreamError
	var netErr net.Error
	switch {
	case errors.As(err, &apiErr):
		ae.Status = apiErr.StatusCode
		ae.Type = apiErr.Type
		if ae.Type == "" {
			ae.Type = apiErr.Code
		}
		ae.Message = apiErr.Message
		if ae.Message == "" {
			ae.Message = http.StatusText(apiErr.StatusCode)
		}
		ae.Retryable = provider.RetryableStatus(apiErr.StatusCode)
		if apiErr.Response != nil {
			ae.RetryAfter = provider.RetryAfter(apiErr.Response.Header, time.Now())
		}
		// The SDK's error holds the request (and its Authorization
		// header): keep only what is safe.
		err = errors.New(scrub(apiErr.Error(), p.key))
	case errors.As(err, &streamErr):
		// A `data: {"error": …}` chunk in the middle of a stream.
		var body struct {
			Error struct {
				Message string          `json:"message"`
				Type    string          `json:"type"`
				Code    json.RawMessage `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(streamErr.Event.Data, &body)
		ae.Type = body.Error.Type
		ae.Message = body.Error.Message
		if ae.Message == "" {
			ae.Message = "error event in the stream"
		}
		ae.Retryable = !strings.Contains(ae.Type, "invalid_request") &&
			!strings.Contains(ae.Type, "authentication") && !strings.Contains(ae.Type, "permission")
		err = errors.New(scrub(streamErr.Message, p.key))
	case errors.As(err, &netErr) && netErr.Timeout():
		ae.Type = "timeout"
		ae.Message = err.Error()
		ae.Retryable = true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNABORTED):
		ae.Type = "connection_error"
		ae.Message = err.Error()
		ae.Retryable = true
	case errors.As(err, &netErr):
		ae.Type = "connection_error"
		ae.Message = err.Error()
	default:
		var syntaxErr *json.SyntaxError
		if errors.As(err, &syntaxErr) {
			ae.Type = "invalid_response"
		}
		ae.Message = err.Error()
	}
	ae.Message = scrub(ae.Message, p.key)
	ae.Err = err
	if !containsKey(err, p.key) {
		return ae
	}
	ae.Err = errors.New(scrub(err.Error(), p.key))
	return ae
}

func containsKey(err error, key string) bool {
	s := err.Error()
	return (key != "" && strings.Contains(s, key)) || keyPattern.MatchString(s)
}
