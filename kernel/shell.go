package kernel

import (
	"context"
	"encoding/json"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// onShell returns the shell handler: it queues requests for runShell, but
// those an Interceptor takes. A full queue holds back the peer's reader
// (and so the peer), nothing else.
func (s *Server) onShell(ctx context.Context) func(*wire.Message) {
	ic, _ := s.cfg.Handler.(Interceptor)
	return func(m *wire.Message) {
		if ic != nil {
			r := &Request{Msg: m, Channel: Shell, srv: s, sock: s.shell}
			r.busy.Do(func() {}) // no status for an intercepted message
			if ic.Intercept(r) {
				return
			}
		}
		q := s.queue
		if id := m.Header.SubshellID; id != "" {
			q = s.subshell(ctx, id)
		}
		select {
		case q <- m:
		case <-ctx.Done():
		}
	}
}

// subshell returns the queue of a kernel subshell's requests (protocol
// 5.5), starting its goroutine on first use: a subshell's requests run
// one at a time, beside the main shell's and the other subshells'. The
// handler decides what a subshell is (the bridge passes them to a backing
// kernel that has them); the server only keeps their order apart.
func (s *Server) subshell(ctx context.Context, id string) chan *wire.Message {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	if q, ok := s.subshells[id]; ok {
		return q
	}
	if s.subshells == nil {
		s.subshells = map[string]chan *wire.Message{}
	}
	q := make(chan *wire.Message, cap(s.queue))
	s.subshells[id] = q
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-q:
				s.handle(ctx, Shell, s.shell, m)
			}
		}
	}()
	return q
}

// runShell handles queued shell requests one at a time.
func (s *Server) runShell(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-s.queue:
			r := s.handle(ctx, Shell, s.shell, m)
			if r != nil && r.reply == "error" && stopOnError(m) {
				s.abortQueued(ctx)
			}
		}
	}
}

// handle runs one request on channel ch, bracketed by busy and idle.
func (s *Server) handle(ctx context.Context, ch Channel, sock socket, m *wire.Message) *Request {
	r := &Request{Msg: m, Channel: ch, srv: s, sock: sock}
	s.inflight.Add(1)
	if d, ok := s.cfg.Handler.(BusyDeferrer); !ok || !isHandlerType(m.Header.MsgType) || !d.DeferBusy(r) {
		r.Busy()
	}
	defer func() {
		r.Busy()
		s.inflight.Add(-1)
		s.status(m, statusIdle)
		if r.shutdown {
			select {
			case s.shutdown <- struct{}{}:
			default:
			}
		}
	}()
	switch t := m.Header.MsgType; t {
	case wire.MsgKernelInfoRequest:
		s.replyKernelInfo(r)
	case wire.MsgShutdownRequest:
		s.handleShutdown(ctx, r)
	case wire.MsgInterruptRequest:
		if ch != Control {
			s.log.Warn("interrupt_request on shell ignored: it belongs on control")
			return r
		}
		s.handleInterrupt(ctx, r)
	default:
		// As in ipykernel, control accepts the shell request types too; they
		// run on the control goroutine, beside whatever shell is doing.
		if !s.cfg.Handler.HandleShell(ctx, r) {
			s.log.Warn("unknown message type ignored", "channel", ch, "msg_type", t)
		}
	}
	return r
}

// isHandlerType reports whether the server hands requests of this type to
// the Handler's HandleShell.
func isHandlerType(t string) bool {
	switch t {
	case wire.MsgKernelInfoRequest, wire.MsgShutdownRequest, wire.MsgInterruptRequest:
		return false
	}
	return true
}

func (s *Server) replyKernelInfo(r *Request) {
	info := s.cfg.Handler.KernelInfo()
	if info.Status == "" {
		info.Status = "ok"
	}
	if info.ProtocolVersion == "" {
		info.ProtocolVersion = wire.ProtocolVersion
	}
	if info.HelpLinks == nil {
		info.HelpLinks = []HelpLink{}
	}
	if info.SupportedFeatures == nil {
		info.SupportedFeatures = []string{}
	}
	if len(info.LanguageInfo) == 0 {
		info.LanguageInfo = json.RawMessage(`{"name":""}`)
	}
	if err := r.Reply(wire.MsgKernelInfoReply, info); err != nil {
		s.log.Warn("kernel_info_reply failed", "error", err)
	}
}

// stopOnError reports whether an execute_request asks to abort the queue
// after an error (the spec's default is true).
func stopOnError(m *wire.Message) bool {
	if m.Header.MsgType != wire.MsgExecuteRequest {
		return false
	}
	c := struct {
		StopOnError *bool `json:"stop_on_error"`
	}{}
	_ = json.Unmarshal(m.Content, &c)
	return c.StopOnError == nil || *c.StopOnError
}

var abortedReply = json.RawMessage(`{"status":"aborted"}`)

// abortQueued answers every execute_request that was waiting in the queue
// when the error happened with status aborted (bracketed by busy/idle, as
// ipykernel does); other requests among them are handled normally, in
// order. Requests that arrive meanwhile — a frontend may send the next cell
// as soon as it has the replies — are not aborted: they were sent after
// the error was known.
func (s *Server) abortQueued(ctx context.Context) {
	for range len(s.queue) {
		m := <-s.queue // only runShell takes from the queue
		if ctx.Err() != nil {
			return
		}
		if m.Header.MsgType != wire.MsgExecuteRequest {
			s.handle(ctx, Shell, s.shell, m)
			continue
		}
		r := &Request{Msg: m, Channel: Shell, srv: s, sock: s.shell}
		r.Busy()
		if err := r.ReplyRaw(wire.MsgExecuteReply, abortedReply, nil, nil); err != nil {
			s.log.Debug("abort reply failed", "error", err)
		}
		s.status(m, statusIdle)
	}
}
