// Package replay records model calls to a cassette and plays them back
// deterministically: a real run recorded once (`--record FILE`) becomes a
// test or a demo that needs no network and no key.
//
// Recording: wrap any Provider with Create (a file) or NewRecorder (any
// writer) and use the Recorder as the Provider. Each model call is written
// when its stream ends; the task loop adds the tool results it sent and the
// approval answers it got with RecordToolResult and RecordApproval.
// Secrets are scrubbed from everything written: the strings in
// RecorderOptions.Secrets (pass the API keys), the values of environment
// variables named *_API_KEY, *_TOKEN, *_SECRET or *_PASSWORD, anything
// that looks like a key (sk-…), bearer tokens, and the values of
// Authorization / x-api-key / api_key / token / secret / password
// assignments. Headers are never recorded at all.
//
// Playing: Open (or Load) reads and checks the whole cassette, and the
// Player is the Provider. The n-th Stream call plays the n-th recorded call
// if its request digest matches (the last user message's text and the tool
// names); otherwise it fails with a *DivergenceError naming the call and
// showing the recorded and the actual text. A call past the end fails
// with ErrExhausted; a missing, empty or corrupt cassette fails at Open
// with the line number and what is wrong. ToolResult and NextApproval give
// back what the task loop recorded.
//
// # Cassette format (version 1)
//
// A cassette is JSON Lines: one JSON object per line, with a "kind". The
// first line is the header; the others come in the order they were
// completed (calls may be out of order when streams overlap; their "call"
// numbers are the order in which they started, 1, 2, 3, … without gaps).
//
//	{"kind":"header","version":1,"provider":"openai","created":"2026-11-22T14:00:00Z",
//	 "model":{"id":"gpt-4.1","contextWindow":1047576,"maxOutput":32768,"inputPrice":2,"outputPrice":8,"cacheRead":0.5}}
//	{"kind":"call","call":1,
//	 "request":{"messages":1,"last":"list the files","lastSHA256":"9f2c…","tools":["list_files","read_file"]},
//	 "events":[{"type":"text","text":"Let me look."},
//	           {"type":"tool_call","toolCall":{"id":"call_1","name":"list_files","input":{}}},
//	           {"type":"usage","usage":{"inputTokens":120,"outputTokens":9}},
//	           {"type":"done","stopReason":"tool_use"}]}
//	{"kind":"approval","ask":"list_files {}","answer":"allow"}
//	{"kind":"tool_result","id":"call_1","text":"a.txt\nb.txt"}
//	{"kind":"call","call":2,"request":{…},"events":[…],
//	 "error":{"message":"openai: HTTP 429 rate_limit_error: slow down",
//	          "api":{"provider":"openai","status":429,"type":"rate_limit_error","message":"slow down","retryable":true,"retryAfterMs":2000}}}
//
// Line kinds and fields:
//   - header: version (1), provider (the recorded provider's Name), model
//     (its ModelInfo, so that costs replay too), created (RFC 3339).
//   - call: call (1-based number), request (the Digest: messages — the
//     number sent, informative; last — the scrubbed text of the last user
//     message, cut to 2000 characters; lastSHA256 — of the whole scrubbed
//     text, compared; tools — names in order, compared), events (the
//     provider.Event values in order, as their JSON), and error when the
//     call did not end with a done event: message, api (an APIError's
//     fields, rebuilt on replay so the task loop retries the same way),
//     atStart (Stream itself failed; no events), aborted (the stream was
//     closed or its context ended; replay returns an error wrapping
//     context.Canceled after the events).
//   - tool_result: id (the tool call id), text.
//   - approval: ask, answer; played back in order by NextApproval.
package replay
