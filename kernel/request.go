package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// Channel names the socket a request came in on: wire.Shell or
// wire.Control. It is the type the client uses too.
type Channel = wire.Channel

// The request channels.
const (
	Shell   = wire.Shell
	Control = wire.Control
)

// Request is one shell or control request being handled. Its methods may be
// called from any goroutine until the handler returns.
type Request struct {
	Msg     *wire.Message
	Channel Channel

	srv      *Server
	sock     socket
	reply    string // status of the execute_reply sent, for stop_on_error
	busy     sync.Once
	shutdown bool // a shutdown_request was answered: stop after idle
}

// Busy publishes status busy for the request unless that was done. The
// server calls it before the handler runs, unless the handler deferred it
// (BusyDeferrer); Reply, Publish and Input call it first.
func (r *Request) Busy() {
	r.busy.Do(func() { r.srv.status(r.Msg, statusBusy) })
}

// ReplyStatus returns the status of the execute_reply sent for the request
// ("" before one was sent). Call it from the handler, after the reply.
func (r *Request) ReplyStatus() string { return r.reply }

// Type returns the request's msg_type.
func (r *Request) Type() string { return r.Msg.Header.MsgType }

// Reply sends a reply to the requester on the request's own channel.
// content is marshalled to JSON; a json.RawMessage is sent as is.
func (r *Request) Reply(msgType string, content any) error {
	raw, err := toRaw(content)
	if err != nil {
		return fmt.Errorf("kernel: encode %s: %w", msgType, err)
	}
	return r.ReplyRaw(msgType, raw, nil, nil)
}

// ReplyRaw sends a reply with raw content, metadata and buffers.
func (r *Request) ReplyRaw(msgType string, content, metadata json.RawMessage, buffers [][]byte) error {
	if msgType == wire.MsgExecuteReply {
		var st struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(content, &st)
		r.reply = st.Status
	}
	r.Busy()
	m := &wire.Message{
		Identities:   r.Msg.Identities,
		Header:       wire.NewHeader(r.srv.session, username(r.Msg), msgType),
		ParentHeader: r.Msg.RawHeader(),
		Metadata:     metadata,
		Content:      content,
		Buffers:      buffers,
	}
	return r.srv.send(r.sock, m)
}

// Publish sends an iopub message whose parent is this request.
func (r *Request) Publish(msgType string, content any) error {
	raw, err := toRaw(content)
	if err != nil {
		return fmt.Errorf("kernel: encode %s: %w", msgType, err)
	}
	r.Busy()
	return r.srv.publish(r.Msg, msgType, raw, nil, nil)
}

// PublishRaw sends an iopub message with raw content, metadata and buffers,
// unchanged, with this request as parent: what a proxy forwards.
func (r *Request) PublishRaw(msgType string, content, metadata json.RawMessage, buffers [][]byte) error {
	r.Busy()
	return r.srv.publish(r.Msg, msgType, content, metadata, buffers)
}

// Forward publishes m, an iopub message of a kernel this one proxies
// whose parent is this request, on this kernel's iopub. When m was read
// with this kernel's key (the proxied kernel was given it) it goes out as
// it came, signature and all, and the frontend checks it; otherwise it is
// checked (a lazily decoded m: wire.Message.Verify) and published anew
// with this request as parent, as PublishRaw does.
func (r *Request) Forward(m *wire.Message) error {
	r.Busy()
	return r.srv.forward(r.Msg, m)
}

// AllowStdin reports whether the frontend accepts input_request for this
// request (allow_stdin in an execute_request; false otherwise).
func (r *Request) AllowStdin() bool {
	if r.Type() != wire.MsgExecuteRequest {
		return false
	}
	var c struct {
		AllowStdin bool `json:"allow_stdin"`
	}
	_ = json.Unmarshal(r.Msg.Content, &c)
	return c.AllowStdin
}

// ErrStdinNotAllowed is returned by Input when the frontend does not accept
// input requests.
var ErrStdinNotAllowed = errors.New("kernel: frontend does not support input requests")

// Input sends an input_request to the frontend that sent this request and
// waits for its input_reply. Only one Input may be pending at a time (the
// shell runs one request at a time). It returns ctx's error if ctx ends
// first, and ErrStdinNotAllowed when the frontend said allow_stdin false.
func (r *Request) Input(ctx context.Context, prompt string, password bool) (string, error) {
	if !r.AllowStdin() {
		return "", ErrStdinNotAllowed
	}
	r.Busy()
	return r.srv.input(ctx, r.Msg, prompt, password)
}

func toRaw(content any) (json.RawMessage, error) {
	switch c := content.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		return c, nil
	default:
		return json.Marshal(c)
	}
}
