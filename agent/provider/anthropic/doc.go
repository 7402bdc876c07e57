// Package anthropic is the provider for the Anthropic Messages API, over
// github.com/anthropics/anthropic-sdk-go (HTTP, SSE decoding, ping and
// error events, decoding, and Message.Accumulate to assemble blocks). The
// text and thinking deltas, nearly all of a stream, are read by
// decodeDelta (fast.go) without reflection; every other event, and
// whatever it does not take, goes to the SDK.
//
// Use New with a Config, then Stream. What is sent: the history in the
// API's own block types (text, image, tool_use, tool_result with text and
// images, thinking with its signature — unsigned thinking, e.g. from
// another provider, is dropped), tools with their JSON schemas, the system
// prompt, extended thinking when Config.ThinkingBudget is set, and
// prompt-cache breakpoints on the system prompt, the last tool and the last
// message unless Config.NoCache. What comes back: text and thinking deltas,
// the thinking block's signature on a final empty reasoning event, each
// tool_use block as one complete tool call when it stops, usage (input,
// output, cache read, cache write) and done with a normalised stop reason
// at message_stop.
//
// Errors are *provider.APIError: Retryable for 408, 409, 429, 5xx
// (including 529 overloaded), overloaded_error / api_error /
// rate_limit_error events in the middle of a stream (Status 0), timeouts,
// dropped connections and streams that end before message_stop; RetryAfter
// comes from Retry-After or retry-after-ms. The SDK's own retries and its
// environment defaults are off. The API key never appears in an error.
//
// KnownModel holds the price table; Config.Info overrides it.
package anthropic
