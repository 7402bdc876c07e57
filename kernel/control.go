package kernel

import (
	"context"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// onControl returns the control handler: requests are handled on the
// goroutine that read them, one at a time, so they are answered while
// shell is busy.
func (s *Server) onControl(ctx context.Context) func(*wire.Message) {
	return func(m *wire.Message) {
		s.controlMu.Lock()
		defer s.controlMu.Unlock()
		if ctx.Err() != nil {
			return
		}
		s.handle(ctx, Control, s.control, m)
	}
}

// Interrupt interrupts the running request as an interrupt_request would.
// It is what a SIGINT handler calls.
func (s *Server) Interrupt(ctx context.Context) error {
	s.log.Info("interrupt")
	return s.cfg.Handler.Interrupt(ctx)
}

func (s *Server) handleInterrupt(ctx context.Context, r *Request) {
	content := map[string]any{"status": "ok"}
	if err := s.Interrupt(ctx); err != nil {
		s.log.Warn("interrupt failed", "error", err)
		content = map[string]any{"status": "error", "ename": "InterruptError", "evalue": err.Error(), "traceback": []string{}}
	}
	if err := r.Reply(wire.MsgInterruptReply, content); err != nil {
		s.log.Debug("interrupt_reply failed", "error", err)
	}
}

func (s *Server) handleShutdown(ctx context.Context, r *Request) {
	var c struct {
		Restart bool `json:"restart"`
	}
	_ = r.Msg.DecodeContent(&c)
	s.log.Info("shutdown requested", "restart", c.Restart, "channel", r.Channel)
	sctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
	err := s.cfg.Handler.Shutdown(sctx, c.Restart)
	cancel()
	content := map[string]any{"status": "ok", "restart": c.Restart}
	if err != nil {
		s.log.Warn("shutdown handler failed", "error", err)
		content = map[string]any{"status": "error", "restart": c.Restart, "ename": "ShutdownError", "evalue": err.Error(), "traceback": []string{}}
	}
	if err := r.Reply(wire.MsgShutdownReply, content); err != nil {
		s.log.Debug("shutdown_reply failed", "error", err)
	}
	// ipykernel also broadcasts the reply on iopub.
	if err := r.Publish(wire.MsgShutdownReply, content); err != nil {
		s.log.Debug("publish shutdown_reply failed", "error", err)
	}
	r.shutdown = true // handle stops the server after publishing idle
}
