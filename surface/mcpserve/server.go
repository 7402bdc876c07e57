// Package mcpserve is a session's live kernel and the session store as an
// MCP server (agentkernel mcp serve): an outside agent — Claude Code,
// Codex, an editor, any MCP client — runs code in the session's backing
// kernel, reads its variables, interrupts or restarts it, reads and
// searches the histories, rewinds and forks.
//
// Every call goes through the session host: code runs as the agent's
// execute_code does, decided by the same permission policy and hooks, and
// is recorded in the UI history, the code log a rewind replays and the
// event log. An ask is put to the client (MCP elicitation) when it can
// answer, else to the approval policy. The protocol itself is the official
// Go SDK's; this package maps its tools onto session.Host and
// backing.Runner.
package mcpserve

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
)

// Source names the inputs of MCP clients in the event log.
const Source eventlog.Source = "mcp"

// Options configure a Server.
type Options struct {
	// Host is the session host whose current session the tools act on.
	Host *session.Host
	// Runner is the host's backing kernel (interrupt, restart, variables);
	// nil: those tools say there is none.
	Runner backing.Runner
	// Version is the server's version, told to clients.
	Version string
	// Approve answers the asks of a client that cannot be asked (it did
	// not declare elicitation, or NoElicitation). The zero value denies
	// them.
	Approve agent.ApprovalPolicy
	// NoElicitation never asks the client: its user was asked already
	// (an external agent asks before it calls a tool).
	NoElicitation bool
	// Notebook offers the agent's notebook tools (notebook_read,
	// notebook_insert_cell, …): the host has a notebook to work in
	// (session.Config.Cells).
	Notebook bool
	// Logger; default a null logger.
	Logger hclog.Logger
}

// Server is the MCP server of one session host. Its tools may be called
// by several clients at once; the kernel runs their code in order.
type Server struct {
	o   Options
	log hclog.Logger
	srv *sdk.Server
}

// New returns the server of o.Host with its tools.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Approve == "" {
		o.Approve = agent.ApproveNone
	}
	s := &Server{o: o, log: o.Logger.Named("mcp-serve")}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: "agentkernel", Title: "agentkernel: a live Jupyter kernel and its agent sessions", Version: o.Version},
		&sdk.ServerOptions{
			Instructions: "Tools of a live Jupyter kernel (the session's backing kernel, Python by default) " +
				"and of agentkernel's stored agent sessions. execute_code runs code in the kernel: variables persist " +
				"between calls and are the user's own.",
			Logger: s.slog(),
		})
	s.addTools()
	return s
}

// slog is the SDK's logger: ours, at its warnings.
func (s *Server) slog() *slog.Logger {
	return slog.New(slog.NewTextHandler(s.log.StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true}),
		&slog.HandlerOptions{Level: slog.LevelWarn}))
}

// Serve speaks MCP on t (stdio: &sdk.StdioTransport{} or an
// sdk.IOTransport) until the client goes or ctx ends.
func (s *Server) Serve(ctx context.Context, t sdk.Transport) error {
	err := s.srv.Run(ctx, t)
	if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return nil
	}
	return err
}

// Handler returns the server as MCP's streamable HTTP transport. Every
// request must carry "Authorization: Bearer TOKEN"; a cross-origin
// browser request and a request for another host name than the loopback
// one it was sent to (DNS rebinding) are refused.
func (s *Server) Handler(token string) http.Handler {
	h := http.NewCrossOriginProtection().Handler(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv },
		&sdk.StreamableHTTPOptions{Logger: s.slog()}))
	verify := func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		if token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{}, nil
	}
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}

// The tools' inputs.
type (
	executeIn struct {
		Code string `json:"code" jsonschema:"the code to run in the live kernel"`
	}
	noIn      struct{}
	historyIn struct {
		Last int    `json:"last,omitempty" jsonschema:"only the last N messages (after the role filter); 0 is all"`
		Role string `json:"role,omitempty" jsonschema:"only messages of this role: user, assistant or tool"`
	}
	searchIn struct {
		Query string `json:"query" jsonschema:"words to find in the messages of every stored session"`
		Limit int    `json:"limit,omitempty" jsonschema:"at most this many hits (default 20)"`
	}
	rewindIn struct {
		To               string `json:"to" jsonschema:"the message to go back to: its ts, or #N (its position in read_history's full list); it and what follows are removed"`
		ConversationOnly bool   `json:"conversation_only,omitempty" jsonschema:"rewind the conversation only: leave the files and the kernel as they are"`
	}
	forkIn struct {
		At               string `json:"at,omitempty" jsonschema:"fork before this message (ts or #N); empty copies the whole session"`
		ConversationOnly bool   `json:"conversation_only,omitempty" jsonschema:"leave the files and the kernel as they are"`
	}
)

// addTools registers the tools.
func (s *Server) addTools() {
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true}
	sdk.AddTool(s.srv, &sdk.Tool{Name: "execute_code", Title: "Run code in the live kernel",
		Description: "Run code in the session's live Jupyter kernel (Python with IPython by default: `!cmd` and `%%bash` work). " +
			"Variables persist between calls and are the notebook user's own. Returns stdout, stderr, the result, " +
			"the images displayed (as images) and the error with its traceback. Asked or refused by the session's permission policy."},
		s.execute)
	sdk.AddTool(s.srv, &sdk.Tool{Name: "list_variables", Title: "List the kernel's variables", Annotations: readOnly,
		Description: "The user's variables in the live kernel: name, type and a short repr (Python kernels)."}, s.variables)
	sdk.AddTool(s.srv, &sdk.Tool{Name: "interrupt_kernel", Title: "Interrupt the kernel",
		Description: "Interrupt the code the kernel runs (KeyboardInterrupt), as the notebook's stop button."}, s.interrupt)
	sdk.AddTool(s.srv, &sdk.Tool{Name: "restart_kernel", Title: "Restart the kernel",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true)},
		Description: "Restart the kernel: every variable is lost. Refused in plan mode."}, s.restart)
	sdk.AddTool(s.srv, &sdk.Tool{Name: "session_info", Title: "The current session", Annotations: readOnly,
		Description: "The current agent session: id, title, model, permission mode, workspace, kernel, message count."}, s.info)
	sdk.AddTool(s.srv, &sdk.Tool{Name: "read_history", Title: "Read the session's history", Annotations: readOnly,
		Description: "The current session's messages as the user sees them, as JSON lines {n, ts, role, kind, text}: prompts, " +
			"answers, tool calls and their outputs, asks and decisions."}, s.history)
	sdk.AddTool(s.srv, &sdk.Tool{Name: "search_sessions", Title: "Search all sessions", Annotations: readOnly,
		Description: "Full-text search of the messages of every stored session (all workspaces)."}, s.search)
	sdk.AddTool(s.srv, &sdk.Tool{Name: "rewind", Title: "Rewind the session",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true)},
		Description: "Take the session back to before a message: the conversation, and unless conversation_only the files the " +
			"agent changed and the kernel's state (its code is replayed up to that point). Refused in plan mode."}, s.rewind)
	sdk.AddTool(s.srv, &sdk.Tool{Name: "fork_session", Title: "Fork the session",
		Description: "Make a new session holding the history before a message (or all of it), linked to the current one, and " +
			"continue in it. The original session is kept as it is."}, s.fork)
	if s.o.Notebook {
		for _, spec := range agent.NotebookToolSpecs() {
			name := spec.Name
			s.srv.AddTool(&sdk.Tool{Name: name, Description: spec.Description, InputSchema: spec.InputSchema,
				Annotations: &sdk.ToolAnnotations{ReadOnlyHint: name == agent.ToolNotebookRead}},
				func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return s.notebookCall(ctx, req, name), nil
				})
		}
	}
}

// notebookCall runs a call of one of the agent's notebook tools as the
// agent's own (Host.Call): the policy, the hooks and the history see it.
func (s *Server) notebookCall(ctx context.Context, req *sdk.CallToolRequest, name string) *sdk.CallToolResult {
	input := req.Params.Arguments
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	call := provider.ToolCall{ID: "mcp_" + uuid.NewString(), Name: name, Input: input}
	approve, ask, err := s.approver(ctx, req, call, "")
	if err != nil {
		return failed("%s: %v", name, err)
	}
	if ask != nil {
		return ask
	}
	res, err := s.o.Host.Call(ctxOf(ctx), call, approve, s.progress(ctx, req))
	switch {
	case errors.Is(err, agent.ErrDenied):
		return failed("%s", res.Text)
	case err != nil:
		return failed("%s", strings.TrimPrefix(res.Text, "Error: "))
	}
	out := text(res.Text)
	out.IsError = res.IsError
	return out
}

func ptr[T any](v T) *T { return &v }

// ctxOf marks the inputs of ctx as coming from an MCP client.
func ctxOf(ctx context.Context) context.Context { return session.WithSource(ctx, Source) }

// text is a tool result of one text.
func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// failed is a tool result that says what went wrong (the client's model
// reads it; a protocol error would hide it).
func failed(format string, a ...any) *sdk.CallToolResult {
	r := text(fmt.Sprintf(format, a...))
	r.IsError = true
	return r
}

func (s *Server) execute(ctx context.Context, req *sdk.CallToolRequest, in executeIn) (*sdk.CallToolResult, any, error) {
	input, _ := json.Marshal(map[string]string{"code": in.Code})
	call := provider.ToolCall{ID: "mcp_" + uuid.NewString(), Name: agent.ToolExecuteCode, Input: input}
	approve, ask, err := s.approver(ctx, req, call, "agentkernel: run this code in the live kernel?\n\n"+in.Code)
	if err != nil {
		return failed("execute_code: %v", err), nil, nil
	}
	if ask != nil {
		return ask, nil, nil
	}
	res, err := s.o.Host.Call(ctxOf(ctx), call, approve, s.progress(ctx, req))
	switch {
	case errors.Is(err, agent.ErrDenied):
		return failed("%s", res.Text), nil, nil
	case err != nil:
		return failed("execute_code: %v", err), nil, nil
	}
	out := text(res.Text)
	out.IsError = res.IsError
	for _, b := range res.Blocks {
		if b.Type != messages.BlockImage || b.Source == nil {
			continue
		}
		data, err := base64.StdEncoding.DecodeString(b.Source.Data)
		if err != nil {
			continue
		}
		out.Content = append(out.Content, &sdk.ImageContent{Data: data, MIMEType: b.Source.MediaType})
	}
	return out, nil, nil
}

// progress reports what the code prints as it comes, as progress
// notifications, when the client asked for them (a progress token).
func (s *Server) progress(ctx context.Context, req *sdk.CallToolRequest) func(backing.Output) {
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return nil
	}
	n := 0.0
	return func(o backing.Output) {
		if o.Type != wire.MsgStream {
			return
		}
		var st wire.Stream
		if json.Unmarshal(o.Content, &st) != nil || st.Text == "" {
			return
		}
		t := st.Text
		n++
		// The output callback must be quick: the notification is sent
		// without waiting for it.
		go func(n float64) {
			_ = req.Session.NotifyProgress(context.WithoutCancel(ctx), &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: n, Message: t})
		}(n)
	}
}

// askKey is the id of the one input request of execute_code: the
// answer to its ask.
const askKey = "approve"

// approver answers the asks of call. A client that can be asked
// (elicitation) is asked in a round trip of MCP's own, before the call
// runs: the first request returns the question (InputRequests) when the
// policy says ask — question, or "" for the ask as a person reads it
// (agent.AskQuestion: a notebook cell's code, a change's diff) — and the
// client calls again with the answer, which approver then gives to that
// ask only: one that changed since (a cell the user edited meanwhile) is
// denied, to be asked again. ok is false when the question is to be sent:
// res holds it. Any other client gets the approval policy's answer.
func (s *Server) approver(ctx context.Context, req *sdk.CallToolRequest, call provider.ToolCall, question string) (approve agent.Approver, res *sdk.CallToolResult, err error) {
	ss := req.Session
	p := ss.InitializeParams()
	if s.o.NoElicitation || p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return s.o.Approve.Approver(), nil, nil
	}
	by := "mcp client"
	if p.ClientInfo != nil && p.ClientInfo.Name != "" {
		by = "mcp client " + p.ClientInfo.Name
	}
	if r, ok := req.Params.InputResponses[askKey].(*sdk.ElicitResult); ok {
		asked := req.Params.RequestState
		return func(_ context.Context, ask messages.UIMessage) (agent.Response, bool) {
			if asked != "" && asked != askState(ask) {
				return agent.Response{Kind: agent.ResponseMessage, By: by,
					Text: "what the call does changed since it was asked about (a cell's code, say): call again to be asked anew"}, true
			}
			return answer(r, by), true
		}, nil, nil
	}
	d, checked, err := s.o.Host.Decide(ctx, call)
	if err != nil {
		return nil, nil, err
	}
	if d.Verdict != agent.Ask {
		// A hook may still ask: the policy answers then.
		return s.o.Approve.Approver(), nil, nil
	}
	ask := agent.DecisionMessage(0, checked, d)
	if question == "" {
		question = "agentkernel: " + agent.AskQuestion(ask)
	}
	q := &sdk.ElicitParams{Message: question, RequestedSchema: decisionSchema}
	return nil, &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{askKey: q}, RequestState: askState(ask)}, nil
}

// askState names an ask by what it asks (agent.AskQuestion), as the
// request state a client echoes with its answer: the answer is given to
// that ask only.
func askState(ask messages.UIMessage) string {
	sum := sha256.Sum256([]byte(agent.AskQuestion(ask)))
	return "ask-" + hex.EncodeToString(sum[:16])
}

// answer is the client's answer to an ask.
func answer(r *sdk.ElicitResult, by string) agent.Response {
	if r.Action == "accept" {
		switch r.Content["decision"] {
		case "allow":
			return agent.Response{Kind: agent.ResponseYes, By: by}
		case "always":
			return agent.Response{Kind: agent.ResponseAllowAll, By: by}
		}
	}
	return agent.Response{Kind: agent.ResponseNo, By: by}
}

// decisionSchema is the form of an elicited ask: one choice.
var decisionSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"decision": map[string]any{"type": "string", "enum": []string{"allow", "always", "deny"},
			"description": "allow this once, always allow this kind of call in this session, or deny it"},
	},
	"required": []string{"decision"},
}

// refuseInPlan refuses what changes the world in plan (read-only) mode.
func (s *Server) refuseInPlan(what string) *sdk.CallToolResult {
	if s.o.Host.Modes().Permission() == agent.PermissionPlan {
		return failed("%s: refused in plan mode (read-only); switch the session's mode first", what)
	}
	return nil
}

func (s *Server) runner() (backing.Runner, *sdk.CallToolResult) {
	if s.o.Runner == nil {
		return nil, failed("this session has no backing kernel")
	}
	return s.o.Runner, nil
}

func (s *Server) interrupt(ctx context.Context, _ *sdk.CallToolRequest, _ noIn) (*sdk.CallToolResult, any, error) {
	r, bad := s.runner()
	if bad != nil {
		return bad, nil, nil
	}
	s.o.Host.Note(ctxOf(ctx), "interrupt", "")
	if err := r.Interrupt(ctx); err != nil {
		return failed("interrupt: %v", err), nil, nil
	}
	return text("Interrupted."), nil, nil
}

func (s *Server) restart(ctx context.Context, _ *sdk.CallToolRequest, _ noIn) (*sdk.CallToolResult, any, error) {
	r, bad := s.runner()
	if bad != nil {
		return bad, nil, nil
	}
	if bad := s.refuseInPlan("restart_kernel"); bad != nil {
		return bad, nil, nil
	}
	s.o.Host.Note(ctxOf(ctx), "restart", "")
	if err := r.Restart(ctx); err != nil {
		return failed("restart: %v", err), nil, nil
	}
	return text("The kernel restarted: its variables are gone."), nil, nil
}

func (s *Server) info(ctx context.Context, _ *sdk.CallToolRequest, _ noIn) (*sdk.CallToolResult, any, error) {
	cur, err := s.o.Host.Current(ctx)
	if err != nil {
		return failed("session: %v", err), nil, nil
	}
	title, _ := s.o.Host.Conversation().Title(ctx)
	kernel := ""
	if s.o.Runner != nil {
		kernel = s.o.Runner.Describe()
	}
	b, _ := json.MarshalIndent(map[string]any{
		"id": cur.ID, "title": title, "model": s.o.Host.Models().Model(), "mode": s.o.Host.Modes().Permission(),
		"workspace": s.o.Host.Workspace(), "kernel": kernel, "messages": cur.Messages,
	}, "", "  ")
	return text(string(b)), nil, nil
}
