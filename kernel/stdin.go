package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// onStdin hands input replies to the pending Input call and drops
// anything else.
func (s *Server) onStdin(m *wire.Message) {
	if m.Header.MsgType != wire.MsgInputReply {
		s.log.Warn("unexpected message on stdin ignored", "msg_type", m.Header.MsgType)
		return
	}
	select {
	case s.stdinIn <- m:
	default:
		s.log.Warn("input_reply with no pending input_request dropped")
	}
}

// input sends an input_request to the peer that sent parent (the stdin
// ROUTER routes by the same identity as shell) and waits for the reply.
func (s *Server) input(ctx context.Context, parent *wire.Message, prompt string, password bool) (string, error) {
	// Forget replies to earlier, abandoned requests.
	for len(s.stdinIn) > 0 {
		<-s.stdinIn
	}
	content, err := json.Marshal(map[string]any{"prompt": prompt, "password": password})
	if err != nil {
		return "", err
	}
	req := &wire.Message{
		Identities:   parent.Identities,
		Header:       wire.NewHeader(s.session, username(parent), wire.MsgInputRequest),
		ParentHeader: parent.RawHeader(),
		Content:      content,
	}
	if err := s.send(s.stdin, req); err != nil {
		return "", err
	}
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case m := <-s.stdinIn:
			p, _ := m.Parent()
			if p.MsgID != "" && p.MsgID != req.Header.MsgID {
				s.log.Debug("input_reply for another request dropped", "parent", p.MsgID)
				continue
			}
			var c struct {
				Value  *string `json:"value"`
				Status string  `json:"status"`
			}
			if err := m.DecodeContent(&c); err != nil {
				return "", err
			}
			if c.Status == "error" {
				return "", errors.New("kernel: frontend answered input_request with an error")
			}
			if c.Value == nil {
				return "", fmt.Errorf("kernel: input_reply has no value")
			}
			return *c.Value, nil
		}
	}
}
