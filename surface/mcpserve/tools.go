package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
)

func (s *Server) variables(ctx context.Context, _ *sdk.CallToolRequest, _ noIn) (*sdk.CallToolResult, any, error) {
	r, bad := s.runner()
	if bad != nil {
		return bad, nil, nil
	}
	vars, err := backing.Namespace(ctx, r)
	if err != nil {
		return failed("list_variables: %v", err), nil, nil
	}
	if len(vars) == 0 {
		return text("No variables."), nil, nil
	}
	var out strings.Builder
	for _, v := range vars {
		out.WriteString(v.Describe() + "\n")
	}
	return text(out.String()), nil, nil
}

// histMessage is one message of read_history.
type histMessage struct {
	N    int    `json:"n"`
	TS   int64  `json:"ts"`
	Role string `json:"role"`
	Kind string `json:"kind"`
	Text string `json:"text,omitempty"`
}

// maxHistoryText caps each message's text in read_history.
const maxHistoryText = 4000

func (s *Server) history(ctx context.Context, _ *sdk.CallToolRequest, in historyIn) (*sdk.CallToolResult, any, error) {
	switch in.Role {
	case "", "user", "assistant", "tool":
	default:
		return failed("read_history: role %q: want user, assistant or tool", in.Role), nil, nil
	}
	if _, err := s.o.Host.Current(ctx); err != nil {
		return failed("session: %v", err), nil, nil
	}
	ui := s.o.Host.Conversation().UI()
	var out []histMessage
	for i, m := range ui {
		role := messages.RoleOf(m, i == 0)
		if role == messages.RoleMeta || (in.Role != "" && string(role) != in.Role) {
			continue
		}
		kind := string(m.Say)
		if m.Ask != "" {
			kind = "ask:" + string(m.Ask)
		}
		t := m.Text
		if r := []rune(t); len(r) > maxHistoryText {
			t = string(r[:maxHistoryText]) + "…"
		}
		out = append(out, histMessage{N: i, TS: m.TS, Role: string(role), Kind: kind, Text: t})
	}
	if in.Last > 0 && len(out) > in.Last {
		out = out[len(out)-in.Last:]
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	for _, m := range out {
		_ = enc.Encode(m)
	}
	if b.Len() == 0 {
		return text("No messages."), nil, nil
	}
	return text(b.String()), nil, nil
}

func (s *Server) search(ctx context.Context, _ *sdk.CallToolRequest, in searchIn) (*sdk.CallToolResult, any, error) {
	if strings.TrimSpace(in.Query) == "" {
		return failed("search_sessions: no query given"), nil, nil
	}
	if in.Limit <= 0 {
		in.Limit = 20
	}
	hits, err := s.o.Host.Search(ctxOf(ctx), in.Query, in.Limit, true)
	if err != nil {
		return failed("search_sessions: %v", err), nil, nil
	}
	if len(hits) == 0 {
		return text("No matches."), nil, nil
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	for _, h := range hits {
		_ = enc.Encode(map[string]any{"session": h.SessionID, "ts": h.TS, "role": h.Role, "kind": h.Kind, "snippet": h.Snippet})
	}
	return text(b.String()), nil, nil
}

func (s *Server) rewind(ctx context.Context, _ *sdk.CallToolRequest, in rewindIn) (*sdk.CallToolResult, any, error) {
	if bad := s.refuseInPlan("rewind"); bad != nil {
		return bad, nil, nil
	}
	if _, err := s.o.Host.Current(ctx); err != nil {
		return failed("session: %v", err), nil, nil
	}
	ts, err := s.o.Host.Conversation().Ref(strings.TrimSpace(in.To))
	if err != nil {
		return failed("rewind: %v", err), nil, nil
	}
	rw, err := s.o.Host.World().Rewind(ctxOf(ctx), ts, session.RewindOptions{ConversationOnly: in.ConversationOnly})
	if err != nil {
		return failed("rewind: %v", err), nil, nil
	}
	return text(rw.Summary()), nil, nil
}

func (s *Server) fork(ctx context.Context, _ *sdk.CallToolRequest, in forkIn) (*sdk.CallToolResult, any, error) {
	if _, err := s.o.Host.Current(ctx); err != nil {
		return failed("session: %v", err), nil, nil
	}
	var info session.Info
	summary := ""
	if strings.TrimSpace(in.At) == "" {
		i, err := s.o.Host.World().Copy(ctxOf(ctx))
		if err != nil {
			return failed("fork_session: %v", err), nil, nil
		}
		info = i
	} else {
		ts, err := s.o.Host.Conversation().Ref(strings.TrimSpace(in.At))
		if err != nil {
			return failed("fork_session: %v", err), nil, nil
		}
		i, rw, err := s.o.Host.World().Fork(ctxOf(ctx), ts, session.RewindOptions{ConversationOnly: in.ConversationOnly})
		if err != nil {
			return failed("fork_session: %v", err), nil, nil
		}
		info, summary = i, rw.Summary()
	}
	msg := fmt.Sprintf("Forked: the current session is now %s (%d messages).", info.ID, info.Messages)
	if summary != "" {
		msg += " " + summary
	}
	return text(msg), nil, nil
}
