package mcpserve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
)

// variablesExpr lists the user's variables of an IPython kernel as
// base64-encoded JSON [[name, type, repr], …]: evaluated as a user
// expression of a silent request, it leaves nothing behind (no execution
// count, no history, no Out entry). Base64 keeps the repr of the string
// free of quoting.
const variablesExpr = `__import__('base64').b64encode(__import__('json').dumps([[k, type(v).__name__, (lambda r: r if len(r) <= 200 else r[:200] + '…')(object.__repr__(v) if isinstance(v, type) else repr(v))] for k, v in list(globals().items()) if not k.startswith('_') and k not in ('In', 'Out', 'exit', 'quit', 'get_ipython', 'open') and type(v).__name__ != 'module']).encode()).decode()`

func (s *Server) variables(ctx context.Context, _ *sdk.CallToolRequest, _ noIn) (*sdk.CallToolResult, any, error) {
	r, bad := s.runner()
	if bad != nil {
		return bad, nil, nil
	}
	var li struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(r.LanguageInfo(ctx), &li)
	if li.Name != "" && li.Name != "python" {
		return failed("list_variables knows Python kernels only; this one runs %s (use execute_code)", li.Name), nil, nil
	}
	no := false
	reply, err := r.Do(ctx, client.Request{MsgType: wire.MsgExecuteRequest, Content: wire.ExecuteRequest{
		Silent: true, StoreHistory: &no, UserExpressions: map[string]string{"v": variablesExpr}}}, client.Handlers{})
	if err != nil {
		return failed("list_variables: %v", err), nil, nil
	}
	var rep wire.ExecuteReply
	if err := json.Unmarshal(reply.Content, &rep); err != nil {
		return failed("list_variables: the kernel's reply: %v", err), nil, nil
	}
	var v struct {
		Status string            `json:"status"`
		Data   map[string]string `json:"data"`
		EName  string            `json:"ename"`
		EValue string            `json:"evalue"`
	}
	raw, _ := json.Marshal(rep.UserExpressions["v"])
	if err := json.Unmarshal(raw, &v); err != nil || v.Status != "ok" {
		return failed("list_variables: the kernel could not list them: %s %s", v.EName, v.EValue), nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(strings.Trim(v.Data["text/plain"], `'"`))
	if err != nil {
		return failed("list_variables: the kernel's answer: %v", err), nil, nil
	}
	var vars [][3]string
	if err := json.Unmarshal(b, &vars); err != nil {
		return failed("list_variables: the kernel's answer: %v", err), nil, nil
	}
	if len(vars) == 0 {
		return text("No variables."), nil, nil
	}
	var out strings.Builder
	for _, v := range vars {
		fmt.Fprintf(&out, "%s: %s = %s\n", v[0], v[1], v[2])
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
	ui := s.o.Host.History()
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
	ts, err := s.o.Host.Ref(strings.TrimSpace(in.To))
	if err != nil {
		return failed("rewind: %v", err), nil, nil
	}
	rw, err := s.o.Host.Rewind(ctxOf(ctx), ts, session.RewindOptions{ConversationOnly: in.ConversationOnly})
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
		i, err := s.o.Host.Copy(ctxOf(ctx))
		if err != nil {
			return failed("fork_session: %v", err), nil, nil
		}
		info = i
	} else {
		ts, err := s.o.Host.Ref(strings.TrimSpace(in.At))
		if err != nil {
			return failed("fork_session: %v", err), nil, nil
		}
		i, rw, err := s.o.Host.Fork(ctxOf(ctx), ts, session.RewindOptions{ConversationOnly: in.ConversationOnly})
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
