// Package acp is agentkernel as an Agent Client Protocol agent: an editor
// or any ACP client (Zed, JetBrains, Neovim, Jupyter AI's personas) drives
// agentkernel's agent over JSON-RPC on stdio, with the sessions, the
// history, the permission policy and the backing kernel the notebook has.
//
// ACP's sessions are agentkernel's: a session/new is a stored session of
// its cwd, seen by `agentkernel sessions`, the panel and the notebook;
// session/load and session/resume take any stored one. Each ACP session
// has a host and a backing kernel of its own, in its cwd. Asks become
// session/request_permission; the model's words, its reasoning, its tool
// calls (with the code and its outputs) become session/update. A rewind,
// which no ACP agent offers, is the /rewind command and the
// _agentkernel/rewind extension method.
//
// The protocol itself is github.com/coder/acp-go-sdk's (generated from
// the ACP schema): this package maps it onto session.Host.
package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/internal/gate"
	"github.com/agentkernel/agentkernel/mcp"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
)

// Agent is the ACP agent over an app: it implements sdk.Agent,
// sdk.AgentLoader and session/fork.
type Agent struct {
	open    Opener
	version string
	log     hclog.Logger
	conn    *sdk.AgentSideConnection

	mu       sync.Mutex
	sessions map[string]*acpSession
	closed   bool
	// fs is what the client offers of its files (its editor's buffers):
	// the file tools read and write through it.
	fs sdk.FileSystemCapabilities
}

// Opener opens the workspace of an ACP session in dir: a host of its own
// and its backing kernel; close ends both.
type Opener func(dir string) (h *session.Host, close func() error, err error)

// acpSession is one ACP session: a stored session current in a host of
// its own.
type acpSession struct {
	id    string
	host  *session.Host
	close func() error

	mu        sync.Mutex
	cancelled bool // session/cancel came during the running prompt
}

var (
	_ sdk.Agent       = (*Agent)(nil)
	_ sdk.AgentLoader = (*Agent)(nil)
)

// New returns an agent over a, which opens a workspace per session (a is
// opened with Surface.NoHost).
func New(a *app.App, version string, log hclog.Logger) *Agent {
	return NewWithOpener(func(dir string) (*session.Host, func() error, error) {
		ws, err := a.OpenWorkspace(dir, "acp")
		if err != nil {
			return nil, nil, err
		}
		return ws.Host, ws.Close, nil
	}, version, log)
}

// NewWithOpener returns an agent whose sessions open is given.
func NewWithOpener(open Opener, version string, log hclog.Logger) *Agent {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Agent{open: open, version: version, log: log.Named("acp"), sessions: map[string]*acpSession{}}
}

// Serve speaks ACP on r and w until the client closes its end or ctx
// ends, then closes every session.
func (a *Agent) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	in := gate.New(r)
	a.conn = sdk.NewAgentSideConnection(a, w, in)
	// The SDK's own log (a closed connection, a bad frame) goes to ours,
	// at its warnings; nothing is read before it is set.
	a.conn.SetLogger(slog.New(slog.NewTextHandler(a.log.StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true}),
		&slog.HandlerOptions{Level: slog.LevelWarn})))
	in.Open()
	select {
	case <-a.conn.Done():
	case <-ctx.Done():
	}
	return a.Close()
}

// Close closes every session's host and backing kernel.
func (a *Agent) Close() error {
	a.mu.Lock()
	ss := a.sessions
	a.sessions, a.closed = map[string]*acpSession{}, true
	a.mu.Unlock()
	var errs []error
	for _, s := range ss {
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}

// Initialize implements sdk.Agent.
func (a *Agent) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	a.mu.Lock()
	a.fs = p.ClientCapabilities.Fs
	a.mu.Unlock()
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentInfo:       &sdk.Implementation{Name: "agentkernel", Title: sdk.Ptr("agentkernel"), Version: a.version},
		AuthMethods:     []sdk.AuthMethod{},
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:        true,
			McpCapabilities:    sdk.McpCapabilities{Http: true},
			PromptCapabilities: sdk.PromptCapabilities{Image: true, EmbeddedContext: true},
			SessionCapabilities: sdk.SessionCapabilities{
				List:   &sdk.SessionListCapabilities{},
				Resume: &sdk.SessionResumeCapabilities{},
				Fork:   &sdk.SessionForkCapabilities{},
			},
		},
	}, nil
}

// Authenticate implements sdk.Agent: the model's keys are the
// environment's and the config file's, so there is nothing to do.
func (a *Agent) Authenticate(context.Context, sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

// openSession opens a host for cwd and makes a session current in it
// (start).
func (a *Agent) openSession(ctx context.Context, cwd string, servers []sdk.McpServer, start func(*session.Host) (session.Info, error)) (*acpSession, error) {
	if cwd == "" || !strings.HasPrefix(cwd, "/") {
		return nil, sdk.NewInvalidParams(map[string]any{"cwd": "an absolute path is required"})
	}
	h, closeWS, err := a.open(cwd)
	if err != nil {
		return nil, err
	}
	if err := h.Tools().AddMCPServers(mcpServers(servers)); err != nil {
		closeWS()
		return nil, err
	}
	a.mu.Lock()
	fsCaps := a.fs
	a.mu.Unlock()
	var files *clientFiles
	if fsCaps.ReadTextFile || fsCaps.WriteTextFile {
		files = &clientFiles{a: a, read: fsCaps.ReadTextFile, write: fsCaps.WriteTextFile}
		h.Tools().SetFiles(files)
	}
	info, err := start(h)
	if err != nil {
		closeWS()
		return nil, err
	}
	if files != nil {
		files.setSession(info.ID)
	}
	s := &acpSession{id: info.ID, host: h, close: closeWS}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		closeWS()
		return nil, errors.New("acp: the agent is closing")
	}
	if old := a.sessions[info.ID]; old != nil {
		defer old.close() // loaded again: the new host replaces it
	}
	a.sessions[info.ID] = s
	a.mu.Unlock()
	return s, nil
}

// clientFiles are the client's files (fs/read_text_file,
// fs/write_text_file) as the file tools' agent.Files: what the client
// does not offer is the disk.
type clientFiles struct {
	a           *Agent
	read, write bool
	mu          sync.Mutex
	sid         string
}

func (f *clientFiles) setSession(id string) {
	f.mu.Lock()
	f.sid = id
	f.mu.Unlock()
}

func (f *clientFiles) session() sdk.SessionId {
	f.mu.Lock()
	defer f.mu.Unlock()
	return sdk.SessionId(f.sid)
}

// ReadTextFile implements agent.Files.
func (f *clientFiles) ReadTextFile(ctx context.Context, path string) (string, error) {
	if !f.read {
		b, err := os.ReadFile(path)
		return string(b), err
	}
	resp, err := f.a.conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: f.session(), Path: path})
	if err != nil {
		return "", fmt.Errorf("the editor's fs/read_text_file: %w", err)
	}
	return resp.Content, nil
}

// WriteTextFile implements agent.Files.
func (f *clientFiles) WriteTextFile(ctx context.Context, path, content string) error {
	if !f.write {
		return os.WriteFile(path, []byte(content), 0o644)
	}
	if _, err := f.a.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: f.session(), Path: path, Content: content}); err != nil {
		return fmt.Errorf("the editor's fs/write_text_file: %w", err)
	}
	return nil
}

// mcpServers are the MCP servers a client gives a session, as ours; a
// client's names are labels (Jupyter AI's "Jupyter MCP Server"), made
// server names by mcp.ClientName.
func mcpServers(servers []sdk.McpServer) []mcp.ServerConfig {
	var out []mcp.ServerConfig
	for _, s := range servers {
		switch {
		case s.Stdio != nil:
			env := map[string]string{}
			for _, e := range s.Stdio.Env {
				env[e.Name] = e.Value
			}
			out = append(out, mcp.ServerConfig{Name: mcp.ClientName(s.Stdio.Name), Type: mcp.TransportStdio, Command: s.Stdio.Command, Args: s.Stdio.Args, Env: env})
		case s.Http != nil:
			hs := map[string]string{}
			for _, h := range s.Http.Headers {
				hs[h.Name] = h.Value
			}
			out = append(out, mcp.ServerConfig{Name: mcp.ClientName(s.Http.Name), Type: mcp.TransportHTTP, URL: s.Http.Url, Headers: hs})
		}
	}
	return out
}

// session returns the open session id.
func (a *Agent) session(id sdk.SessionId) (*acpSession, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[string(id)]
	if s == nil {
		return nil, sdk.NewInvalidParams(map[string]any{"sessionId": fmt.Sprintf("no open session %q: session/new, session/load or session/resume it first", id)})
	}
	return s, nil
}

// NewSession implements sdk.Agent: a new stored session of cwd.
func (a *Agent) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	s, err := a.openSession(ctx, p.Cwd, p.McpServers, func(h *session.Host) (session.Info, error) { return h.NewSession(ctx) })
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	a.afterOpen(ctx, s)
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(s.id), Modes: modes(s.host), ConfigOptions: configOptions(s.host)}, nil
}

// LoadSession implements sdk.AgentLoader: the stored session, its
// conversation replayed as session/update before the answer. Only the
// user's own: another user's, shared with them, is forked with
// session/fork (a load keeps the id it was given).
func (a *Agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	s, err := a.openSession(ctx, p.Cwd, p.McpServers, func(h *session.Host) (session.Info, error) { return h.ResumeOwn(ctx, string(p.SessionId)) })
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	a.replay(ctx, s)
	a.afterOpen(ctx, s)
	return sdk.LoadSessionResponse{Modes: modes(s.host)}, nil
}

// ResumeSession implements sdk.Agent: the stored session, not replayed;
// the user's own, as LoadSession.
func (a *Agent) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	s, err := a.openSession(ctx, p.Cwd, p.McpServers, func(h *session.Host) (session.Info, error) { return h.ResumeOwn(ctx, string(p.SessionId)) })
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	a.afterOpen(ctx, s)
	return sdk.ResumeSessionResponse{Modes: modes(s.host)}, nil
}

// UnstableForkSession is session/fork: a new session of the user's with
// the whole history of the given one (its files and kernel untouched),
// which may be another user's, shared with them.
func (a *Agent) UnstableForkSession(ctx context.Context, p sdk.UnstableForkSessionRequest) (sdk.UnstableForkSessionResponse, error) {
	s, err := a.openSession(ctx, p.Cwd, nil, func(h *session.Host) (session.Info, error) {
		info, err := h.Resume(ctx, string(p.SessionId))
		if err != nil || info.ForkOf != "" { // another's: Resume forked it
			return info, err
		}
		return h.World().Copy(ctx)
	})
	if err != nil {
		return sdk.UnstableForkSessionResponse{}, err
	}
	a.afterOpen(ctx, s)
	return sdk.UnstableForkSessionResponse{SessionId: sdk.SessionId(s.id), Modes: modes(s.host)}, nil
}

// CloseSession implements sdk.Agent: its turn stops, its kernel ends.
func (a *Agent) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	a.mu.Lock()
	s := a.sessions[string(p.SessionId)]
	delete(a.sessions, string(p.SessionId))
	a.mu.Unlock()
	if s != nil {
		s.close()
	}
	return sdk.CloseSessionResponse{}, nil
}

// ListSessions implements sdk.Agent: the user's stored sessions of cwd,
// or without one every session they may see.
func (a *Agent) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	dir := "/"
	if p.Cwd != nil && *p.Cwd != "" {
		dir = *p.Cwd
	}
	h, closeWS, err := a.open(dir)
	if err != nil {
		return sdk.ListSessionsResponse{}, err
	}
	defer closeWS()
	list, err := h.Sessions(ctx, "", 200, p.Cwd == nil || *p.Cwd == "")
	if err != nil {
		return sdk.ListSessionsResponse{}, err
	}
	out := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	for _, s := range list {
		out.Sessions = append(out.Sessions, sdk.SessionInfo{SessionId: sdk.SessionId(s.ID), Cwd: s.Workspace,
			Title: sdk.Ptr(s.Title), UpdatedAt: sdk.Ptr(s.UpdatedAt.UTC().Format("2006-01-02T15:04:05Z"))})
	}
	return out, nil
}

// SetSessionMode implements sdk.Agent: the permission mode.
func (a *Agent) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	m, err := agent.ParsePermissionMode(string(p.ModeId))
	if err != nil {
		return sdk.SetSessionModeResponse{}, sdk.NewInvalidParams(map[string]any{"modeId": err.Error()})
	}
	return sdk.SetSessionModeResponse{}, s.host.Modes().SetPermission(ctx, m)
}

// SetSessionConfigOption implements sdk.Agent: "mode" is the permission
// mode (as session/set_mode sets it), "agentMode" the agent mode.
func (a *Agent) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	v := p.ValueId
	if v == nil {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"value": "the mode option takes a value id"})
	}
	s, err := a.session(v.SessionId)
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	switch v.ConfigId {
	case configAgentMode:
		if _, err := s.host.Modes().SetAgent(ctx, string(v.Value)); err != nil {
			return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"value": err.Error()})
		}
		return sdk.SetSessionConfigOptionResponse{ConfigOptions: configOptions(s.host)}, nil
	case configMode:
	default:
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"configId": fmt.Sprintf("no option %q (there are %q and %q)", v.ConfigId, configMode, configAgentMode)})
	}
	m, err := agent.ParsePermissionMode(string(v.Value))
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"value": err.Error()})
	}
	if err := s.host.Modes().SetPermission(ctx, m); err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: configOptions(s.host)}, nil
}

// The ids of the config options: the permission mode, the agent mode.
const (
	configMode      sdk.SessionConfigId = "mode"
	configAgentMode sdk.SessionConfigId = "agentMode"
)

// configOptions are a session's config options: its permission mode.
func configOptions(h *session.Host) []sdk.SessionConfigOption {
	var opts sdk.SessionConfigSelectOptionsUngrouped
	for _, m := range agent.Modes {
		opts = append(opts, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(m), Name: modeNames[m], Description: sdk.Ptr(modeHelp[m])})
	}
	var agentModes sdk.SessionConfigSelectOptionsUngrouped
	ms, _ := h.Modes().AgentModes()
	for _, m := range ms {
		agentModes = append(agentModes, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(m.Name), Name: m.Name, Description: sdk.Ptr(m.Description)})
	}
	return []sdk.SessionConfigOption{
		{Select: &sdk.SessionConfigOptionSelect{Type: "select", Id: configMode, Name: "Permission mode",
			Category: sdk.Ptr(sdk.SessionConfigOptionCategoryMode), CurrentValue: sdk.SessionConfigValueId(h.Modes().Permission()),
			Options: sdk.SessionConfigSelectOptions{Ungrouped: &opts}}},
		{Select: &sdk.SessionConfigOptionSelect{Type: "select", Id: configAgentMode, Name: "Mode",
			Description:  sdk.Ptr("code, ask, architect, debug, or the user's: instructions and the tools offered"),
			CurrentValue: sdk.SessionConfigValueId(h.Modes().Agent().Name), Options: sdk.SessionConfigSelectOptions{Ungrouped: &agentModes}}},
	}
}

// Cancel implements sdk.Agent: the running prompt stops, and answers
// cancelled.
func (a *Agent) Cancel(ctx context.Context, p sdk.CancelNotification) error {
	s, err := a.session(p.SessionId)
	if err != nil {
		return nil // a notification: nothing to answer
	}
	if s.host.Busy() {
		s.mu.Lock()
		s.cancelled = true
		s.mu.Unlock()
	}
	s.host.Cancel(ctx)
	return nil
}

// modes is the session's permission modes as ACP's session modes.
func modes(h *session.Host) *sdk.SessionModeState {
	st := &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(h.Modes().Permission())}
	for _, m := range agent.Modes {
		st.AvailableModes = append(st.AvailableModes, sdk.SessionMode{Id: sdk.SessionModeId(m), Name: modeNames[m],
			Description: sdk.Ptr(modeHelp[m])})
	}
	return st
}

var modeNames = map[agent.PermissionMode]string{
	agent.PermissionDefault: "Ask", agent.PermissionAcceptEdits: "Accept edits", agent.PermissionBypass: "Bypass permissions", agent.PermissionPlan: "Plan",
}

var modeHelp = map[agent.PermissionMode]string{
	agent.PermissionDefault:     "asks before running code and editing files",
	agent.PermissionAcceptEdits: "edits files without asking; asks before running code",
	agent.PermissionBypass:      "runs and edits without asking",
	agent.PermissionPlan:        "reads and plans; runs nothing and edits nothing",
}

// afterOpen tells the client the commands a session has, and keeps its
// mode in step.
func (a *Agent) afterOpen(ctx context.Context, s *acpSession) {
	go a.update(context.WithoutCancel(ctx), s, sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{
		AvailableCommands: commands}})
}

// update sends one session/update; a client that is gone is only logged.
func (a *Agent) update(ctx context.Context, s *acpSession, u sdk.SessionUpdate) {
	if err := a.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: sdk.SessionId(s.id), Update: u}); err != nil {
		a.log.Debug("session/update", "error", err)
	}
}

// replay sends a loaded session's conversation as session/update: the
// user's prompts, the agent's words and thoughts, and the code it ran,
// each marked _meta.agentkernel.replay.
func (a *Agent) replay(ctx context.Context, s *acpSession) {
	first := true
	for _, m := range s.host.Conversation().UI() {
		var u sdk.SessionUpdate
		switch {
		case isPrompt(m, &first):
			u = sdk.UpdateUserMessageText(m.Text)
			u.UserMessageChunk.Meta = replayMeta(m.TS)
		case m.Partial:
			continue
		case m.Type == messages.TypeSay && (m.Say == messages.SayText || m.Say == messages.SayCompletionResult):
			u = sdk.UpdateAgentMessageText(m.Text)
			u.AgentMessageChunk.Meta = replayMeta(m.TS)
		case m.Type == messages.TypeSay && m.Say == messages.SayReasoning:
			u = sdk.UpdateAgentThoughtText(m.Text)
			u.AgentThoughtChunk.Meta = replayMeta(m.TS)
		case m.Type == messages.TypeAsk && m.Ask == messages.AskCommand:
			u = sdk.StartToolCall(sdk.ToolCallId(fmt.Sprintf("replay_%d", m.TS)), "Run "+messages.FirstLine(m.Text, 80),
				sdk.WithStartKind(sdk.ToolKindExecute), sdk.WithStartStatus(sdk.ToolCallStatusCompleted),
				sdk.WithStartRawInput(map[string]any{"code": m.Text}))
			u.ToolCall.Meta = replayMeta(m.TS)
		default:
			continue
		}
		a.update(ctx, s, u)
	}
}
