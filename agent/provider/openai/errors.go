package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentkernel/agentkernel/agent/provider"
)

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
		err = errors.New(provider.ScrubKey(apiErr.Error(), p.key))
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
		err = errors.New(provider.ScrubKey(streamErr.Message, p.key))
	default:
		provider.ClassifyTransport(ae, err)
	}
	return provider.Seal(ae, err, p.key)
}
