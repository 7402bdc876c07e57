// Package messages holds agentkernel's domain types: the two histories every
// session keeps and the pure bookkeeping over them.
//
// The UI history ([UIMessage]) is what the user sees: a stream of "ask" and
// "say" messages identified by a millisecond timestamp that is unique within
// a session (use a [Clock] to make them). The API history ([APIMessage]) is
// what the model is sent: user and assistant messages made of [ContentBlock]s
// (text, image, tool_use, tool_result, thinking).
//
// Where to start:
//   - [DecodeUI] and [DecodeAPI] turn JSON from outside (the store, the web
//     panel, an imported session) into validated values; [UIMessage.Validate]
//     and [APIMessage.Validate] check values built in code.
//   - [ClassOf] sorts asks into idle, resumable, interactive and non-blocking.
//   - [Condense], [Truncate] and [Effective] are the context bookkeeping:
//     condensing and sliding-window truncation never delete API messages,
//     they tag them as hidden; Effective computes what is actually sent.
//
// The package imports only the standard library. Everything in it is a value
// type or a pure function, except [Clock], which is safe for concurrent use.
// Functions never modify the slices they are given; they return new ones.
package messages
