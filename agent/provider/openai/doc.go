// Package openai is the provider for OpenAI-compatible chat completions:
// OpenAI itself, and through Config.BaseURL Ollama, vLLM, llama.cpp
// (--jinja) and LM Studio. It uses github.com/openai/openai-go/v3 for the
// HTTP calls, the SSE decoding, the decoding of chunks and the assembly of
// tool-call deltas (ChatCompletionAccumulator) — except for the chunks that
// carry only text, reasoning or a finish reason, nearly all of a stream,
// which decodeText (fast.go) reads without reflection: about 1 µs a chunk
// instead of 20. Whatever it does not take goes to the SDK.
//
// Use New with a Config, then Stream. What is sent: the system prompt as a
// system message, the history mapped as described at chatMessages (tool_use
// blocks become assistant tool_calls, tool_result blocks tool messages,
// images data URLs, thinking blocks are dropped), tools as function tools,
// stream_options.include_usage. What comes back: text deltas, reasoning
// deltas (delta.reasoning_content as llama.cpp and vLLM send it, or
// delta.reasoning), complete tool calls, usage (input tokens exclude cache
// reads, which are counted apart), done with a normalised stop reason. A
// usage chunk with "choices": null (vLLM) is accepted.
//
// Errors are *provider.APIError: Retryable for 408, 409, 429, 5xx, error
// events in the stream, timeouts and dropped connections, with RetryAfter
// from Retry-After or retry-after-ms. The SDK's own retries are off. The
// API key never appears in an error.
//
// KnownModel holds the price table; Config.Info overrides it.
package openai
