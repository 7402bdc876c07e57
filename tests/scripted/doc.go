// Package scripted is a model server for tests: it speaks the real
// streaming wire formats of the OpenAI chat completions API and the
// Anthropic Messages API on 127.0.0.1, answers each request with the next
// scripted Turn, and records every request it received.
//
// Start with New (tests: pass t, and the server closes itself at the end)
// or Listen (commands), queue turns with Enqueue, point a client at
// OpenAIURL or AnthropicURL, and assert on Requests:
//
//	srv := scripted.New(t)
//	srv.Enqueue(
//		scripted.Reply(scripted.Text("Hel", "lo"), scripted.UsageStep(scripted.Usage{Input: 10, Output: 2})),
//		scripted.Reply(scripted.ToolCall("call_1", "read_file", `{"pa`, `th":"a.txt"}`)),
//		scripted.Fail(429, "2"),
//	)
//
// A Turn is either an HTTP error (Status, Retry-After, error body in the
// API's shape) or a list of Steps: text and reasoning pieces, tool calls
// whose arguments arrive in pieces, usage, a stop reason, delays, a stall,
// pings, mid-stream error events, a dropped connection, raw lines. The same
// script plays in either format: the endpoint a request arrives at decides.
//
// It refuses what the real APIs refuse, with their 400 and error bodies,
// and takes no turn for it: on Anthropic's, tool_use or tool_result blocks
// with no tools defined, a tool_use whose tool_result is not in the next
// turn (or the reverse), an empty text block; on OpenAI's, a tool message
// that answers no tool call of the assistant message before it, or tool
// calls left unanswered. Consecutive messages of one role are one turn, as
// Anthropic's API combines them.
//
// Requests that do not stream are answered in the OpenAI format only: one
// chat.completion object (Jupyter AI's magics, langchain's invoke). Each
// recorded Request says when it was read, when its answer's first content
// went out and when the answer ended.
//
// The server owns its handler goroutines: Close ends stalls and delays and
// waits for every handler to return.
package scripted
