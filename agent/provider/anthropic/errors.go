package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// retryableType reports whether an error type of the API is worth a retry.
func retryableType(typ string) bool {
	switch typ {
	case "overloaded_error", "api_error", "rate_limit_error", "timeout_error":
		return true
	}
	return false
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
	switch {
	case errors.As(err, &apiErr):
		var body struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal([]byte(apiErr.RawJSON()), &body)
		ae.Type = body.Error.Type
		ae.Message = body.Error.Message
		status := apiErr.StatusCode
		if status == http.StatusOK {
			// An `event: error` in the middle of a stream.
			status = 0
			ae.Retryable = retryableType(ae.Type)
		} else {
			ae.Retryable = provider.RetryableStatus(status) || retryableType(ae.Type)
		}
		ae.Status = status
		if ae.Message == "" {
			ae.Message = http.StatusText(apiErr.StatusCode)
		}
		if apiErr.Response != nil && status != 0 {
			ae.RetryAfter = provider.RetryAfter(apiErr.Response.Header, time.Now())
		}
		// The SDK's error holds the request and prints its URL: keep a
		// scrubbed summary only.
		err = fmt.Errorf("anthropic API error: status %d, type %q", apiErr.StatusCode, ae.Type)
	default:
		provider.ClassifyTransport(ae, err)
	}
	return provider.Seal(ae, err, p.key)
}
