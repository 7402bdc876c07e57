package kernel

import (
	"context"
	"encoding/json"
)

// Handler gives the server its behaviour.
//
// HandleShell is called on the shell goroutine, one request at a time, in
// arrival order, for every shell request except kernel_info_request and
// shutdown_request; the server has already published status busy and will
// publish idle when it returns. Requests of the same types that arrive on
// the control channel (ipykernel accepts them there too) are handed to it
// on the control goroutine, concurrently with shell; r.Channel says which. It answers with r.Reply (once, for request
// types that have a reply) and publishes outputs with r.Publish. It returns
// false for a message type it does not know; the server logs it.
//
// KernelInfo and Interrupt may be called from any goroutine, concurrently
// with HandleShell, and must not block for long.
type Handler interface {
	// KernelInfo returns the content of a kernel_info_reply.
	KernelInfo() KernelInfo
	HandleShell(ctx context.Context, r *Request) bool
	// Interrupt is called for interrupt_request and for SIGINT.
	Interrupt(ctx context.Context) error
	// Shutdown is called for shutdown_request before the reply is sent.
	Shutdown(ctx context.Context, restart bool) error
}

// BusyDeferrer is implemented by a Handler that wants to pass a request on
// before status busy is published for it: a proxy, whose request then
// reaches the backing kernel one write sooner. For the requests DeferBusy
// returns true for, busy is published by the Request's first Busy, Reply,
// Publish or Input call, or when HandleShell returns — before anything
// else goes out for the request, as the protocol wants.
type BusyDeferrer interface {
	DeferBusy(r *Request) bool
}

// Interceptor is implemented by a Handler that takes some shell messages
// past the queue, so that they reach it while a cell runs: the comm
// messages of a panel whose answer the running cell waits for. Intercept
// is called on the socket's reader goroutine, in arrival order, for every
// shell message; true means the handler took r (it must not block: it
// hands r to a goroutine of its own), and the server neither queues it
// nor publishes a status for it (a status would tell the frontend the
// kernel is idle while its cell runs). A message with a reply may be taken
// only when the handler answers it at once (a comm_info_request for the
// handler's own comms).
type Interceptor interface {
	Intercept(r *Request) bool
}

// KernelInfo is the content of a kernel_info_reply.
type KernelInfo struct {
	Status                string          `json:"status"`
	ProtocolVersion       string          `json:"protocol_version"`
	Implementation        string          `json:"implementation"`
	ImplementationVersion string          `json:"implementation_version"`
	LanguageInfo          json.RawMessage `json:"language_info"`
	Banner                string          `json:"banner"`
	HelpLinks             []HelpLink      `json:"help_links"`
	Debugger              bool            `json:"debugger"`
	// SupportedFeatures are the protocol's optional features offered
	// (protocol 5.5): "debugger", "kernel subshells".
	SupportedFeatures []string `json:"supported_features"`
}

// HelpLink is one entry of KernelInfo.HelpLinks.
type HelpLink struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}
