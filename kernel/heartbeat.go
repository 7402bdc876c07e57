package kernel

import (
	"context"
	"errors"
	"net"
)

// heartbeat echoes every ping on the REP socket.
func (s *Server) heartbeat(ctx context.Context) {
	for {
		msg, err := s.hb.Recv()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) || errors.Is(err, context.Canceled) {
				return
			}
			s.log.Debug("heartbeat receive failed", "error", err)
			continue
		}
		if err := s.hb.Send(msg); err != nil && ctx.Err() == nil {
			s.log.Debug("heartbeat send failed", "error", err)
		}
	}
}
