package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
)

// Options configures a Manager. The zero value of every field works.
type Options struct {
	// Config is the servers (see Load).
	Config Config
	// Dir is the working directory of stdio servers: the workspace.
	// Default: the current directory.
	Dir string
	// UserDir is the directory of the config file whose mcpServers are the
	// user's servers: a relative cwd of theirs is relative to it.
	UserDir string
	// StartTimeout bounds a server's start (launch, initialize, tools/list),
	// which a session's first model request waits for. Default: $MCP_TIMEOUT
	// milliseconds (Claude Code's variable), else 30s.
	StartTimeout time.Duration
	// CallTimeout bounds a tool call when the server's entry sets no
	// timeout. Default 60s.
	CallTimeout time.Duration
	// MaxResultChars caps the text of a result given to the model. Default
	// 20,000, as every tool result.
	MaxResultChars int
	// MaxFrameBytes is the largest message read whole from a server; a
	// larger answer is cut to its beginning as it is read. Default 8 MiB.
	MaxFrameBytes int
	// LookupEnv expands ${VAR}; default os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Logger; default a null logger. Server stderr goes to it at debug.
	Logger hclog.Logger

	// OnChange, if set, is called (with no lock held, on the Manager's
	// goroutines) when a server's state changes: a panel refreshes then.
	OnChange func()

	// transport, when set (by tests and benchmarks), connects every server.
	transport func(ServerConfig) sdk.Transport
}

func (o Options) withDefaults() Options {
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
		if ms, err := strconv.Atoi(os.Getenv("MCP_TIMEOUT")); err == nil && ms > 0 {
			o.StartTimeout = time.Duration(ms) * time.Millisecond
		}
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 60 * time.Second
	}
	if o.MaxResultChars <= 0 {
		o.MaxResultChars = 20_000
	}
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = 8 << 20
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return o
}

// State is where a server is.
type State string

// The states.
const (
	StateIdle     State = "not started"
	StateStarting State = "starting"
	StateReady    State = "ready"
	StateFailed   State = "failed"   // it did not start; Restart tries again
	StateExited   State = "exited"   // it ran and stopped; the next call starts it again
	StateDisabled State = "disabled" // "disabled": true in its entry
	StateInvalid  State = "invalid"  // its entry could not be read
)

// Manager runs the configured MCP servers and offers their tools to the
// agent: it implements agent.ToolSource. Servers start on first need (Start,
// or the first Tools, Lookup or Call), in parallel, each within the start
// timeout; one that fails is reported with its error and the others work;
// one that exits is started again at its next call. All methods are safe
// for concurrent use; Close stops every server and waits for the
// goroutines the Manager started.
type Manager struct {
	opts    Options
	log     hclog.Logger
	client  *sdk.Client
	servers []*server
	invalid []Problem

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	progressMu sync.Mutex
	progress   map[string]func(string)
	seq        atomic.Int64
	closeOnce  sync.Once
}

// NewManager returns a Manager of opts.Config's servers. It starts nothing.
func NewManager(opts Options) *Manager {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{opts: opts, log: opts.Logger.Named("mcp"), ctx: ctx, cancel: cancel,
		progress: map[string]func(string){}, invalid: opts.Config.Problems}
	m.client = sdk.NewClient(&sdk.Implementation{Name: "agentkernel", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: m.onProgress,
	})
	for _, sc := range opts.Config.Servers {
		s := &server{m: m, cfg: sc, state: StateIdle, log: m.log.Named(sc.Name)}
		for _, w := range sc.Warnings {
			s.log.Warn("configuration: "+w, "scope", sc.Scope)
		}
		if sc.Disabled {
			s.state = StateDisabled
		}
		m.servers = append(m.servers, s)
	}
	return m
}

// Start begins starting every server that has not started, in the
// background, and returns at once.
func (m *Manager) Start() {
	for _, s := range m.servers {
		s.start(false)
	}
}

// WaitStarted starts the servers and waits until none is starting (or ctx
// ends).
func (m *Manager) WaitStarted(ctx context.Context) {
	for _, s := range m.servers {
		done := s.start(false)
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
	}
}

// Restart stops the server called name (every server for "") and starts it
// again, waiting for the start. It is how a failed server is retried.
func (m *Manager) Restart(ctx context.Context, name string) error {
	found := false
	for _, s := range m.servers {
		if name != "" && s.cfg.Name != name {
			continue
		}
		found = true
		s.stop()
		select {
		case <-s.start(true):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if !found {
		return fmt.Errorf("mcp: no server named %q", name)
	}
	return nil
}

// Tools returns the tools of the servers that are ready (see
// agent.ToolSource). It starts the servers on first use and does not wait
// for them.
func (m *Manager) Tools(ctx context.Context) []agent.SourceTool {
	var out []agent.SourceTool
	for _, s := range m.servers {
		done := s.start(false)
		s.mu.Lock()
		first := !s.started
		s.mu.Unlock()
		if first {
			// The first request waits for the server's first start (bounded
			// by the start timeout), as Claude Code waits before its first
			// query: a user's first prompt sees the servers they configured.
			select {
			case <-done:
			case <-ctx.Done():
			}
		}
		s.mu.Lock()
		if s.state == StateReady || s.state == StateExited {
			out = append(out, s.tools...)
		}
		s.mu.Unlock()
	}
	return out
}

// Lookup returns the tool called name, waiting while its server starts.
func (m *Manager) Lookup(ctx context.Context, name string) (agent.SourceTool, bool) {
	s := m.serverOf(name)
	if s == nil {
		return agent.SourceTool{}, false
	}
	select {
	case <-s.start(false):
	case <-ctx.Done():
	}
	st, ok := s.lookup(name)
	return st, ok
}

// serverOf returns the server whose tools' names start as name does.
func (m *Manager) serverOf(name string) *server {
	var best *server
	for _, s := range m.servers {
		p := agent.ExternalPrefix + s.cfg.Name + "__"
		if strings.HasPrefix(name, p) && (best == nil || len(s.cfg.Name) > len(best.cfg.Name)) {
			best = s
		}
	}
	return best
}

// Call runs a tool (see agent.ToolSource). A server that exited is
// started again first; a call that outlives the server's timeout, or whose
// server dies under it, is an error that says so.
func (m *Manager) Call(ctx context.Context, name string, input json.RawMessage, progress func(string)) (agent.Result, error) {
	s := m.serverOf(name)
	if s == nil {
		return agent.Result{}, fmt.Errorf("mcp: no server offers %q", name)
	}
	cs, st, err := s.ready(ctx, name)
	if err != nil {
		return agent.Result{}, err
	}
	timeout := s.cfg.callTimeout(m.opts.CallTimeout)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	params := &sdk.CallToolParams{Name: st.Tool, Arguments: input}
	if progress != nil {
		token := fmt.Sprintf("ak-%d", m.seq.Add(1))
		params.SetProgressToken(token)
		m.progressMu.Lock()
		m.progress[token] = progress
		m.progressMu.Unlock()
		defer func() {
			m.progressMu.Lock()
			delete(m.progress, token)
			m.progressMu.Unlock()
		}()
	}
	r, err := cs.CallTool(cctx, params)
	switch {
	case err == nil:
		return toResult(r, m.opts.MaxResultChars), nil
	case ctx.Err() != nil:
		return agent.Result{}, ctx.Err()
	case cctx.Err() != nil:
		return agent.Result{}, fmt.Errorf("mcp: %s: %s timed out after %s (the server's timeout; set \"timeout\" in its entry to change it)",
			s.cfg.Name, st.Tool, timeout)
	}
	if why := s.died(cs); why != "" {
		return agent.Result{}, fmt.Errorf("mcp: %s: the server stopped during the call of %s (%s); it is started again at the next call",
			s.cfg.Name, st.Tool, why)
	}
	s.mu.Lock()
	url := s.url
	s.mu.Unlock()
	return agent.Result{}, fmt.Errorf("mcp: %s: %s: %w", s.cfg.Name, st.Tool, redact(err, url, s.cfg.Where()))
}

// changed tells OnChange, unless the Manager is closing.
func (m *Manager) changed() {
	if m.opts.OnChange != nil && m.ctx.Err() == nil {
		m.opts.OnChange()
	}
}

func (m *Manager) onProgress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p := req.Params
	token, _ := p.ProgressToken.(string)
	m.progressMu.Lock()
	f := m.progress[token]
	m.progressMu.Unlock()
	if f == nil {
		return
	}
	text := fmt.Sprintf("%g", p.Progress)
	if p.Total > 0 {
		text += fmt.Sprintf("/%g", p.Total)
	}
	if p.Message != "" {
		text += " " + p.Message
	}
	f(text)
}

// Close stops every server and waits for the Manager's goroutines. A
// second call returns net.ErrClosed.
func (m *Manager) Close() error {
	err := net.ErrClosed
	m.closeOnce.Do(func() {
		err = nil
		m.cancel()
		for _, s := range m.servers {
			s.stop()
		}
		m.wg.Wait()
	})
	return err
}

// ServerStatus is what %agent mcp and agentkernel mcp list show of a
// server.
type ServerStatus struct {
	Name      string     `json:"name"`
	Scope     string     `json:"scope"`     // project or user
	Transport string     `json:"transport"` // stdio or http
	Where     string     `json:"where"`     // the command line, or the URL without query
	State     State      `json:"state"`
	Error     string     `json:"error,omitempty"`
	Warnings  []string   `json:"warnings,omitempty"` // of its entry: ignored fields
	Tools     []ToolInfo `json:"tools,omitempty"`
}

// ToolInfo is one tool of a server.
type ToolInfo struct {
	Name        string `json:"name"`        // the server's name for it
	Tool        string `json:"tool"`        // as the model sees it: mcp__server__tool
	Description string `json:"description"` // the first line
	AlwaysAllow bool   `json:"alwaysAllow,omitempty"`
}

// Status returns every configured server's status, in configuration
// order, then the entries that could not be read.
func (m *Manager) Status() []ServerStatus {
	var out []ServerStatus
	for _, s := range m.servers {
		s.mu.Lock()
		st := ServerStatus{Name: s.cfg.Name, Scope: s.cfg.Scope, Transport: s.cfg.Transport(),
			Where: s.cfg.Where(), State: s.state, Warnings: s.cfg.Warnings}
		if s.err != nil {
			st.Error = s.err.Error()
		}
		for _, t := range s.tools {
			desc, _, _ := strings.Cut(strings.TrimSpace(t.Spec.Description), "\n")
			st.Tools = append(st.Tools, ToolInfo{Name: t.Tool, Tool: t.Spec.Name, Description: desc, AlwaysAllow: t.AlwaysAllow})
		}
		s.mu.Unlock()
		out = append(out, st)
	}
	for _, p := range m.invalid {
		out = append(out, ServerStatus{Name: orDefault(p.Name, "("+p.Scope+" configuration)"), Scope: p.Scope,
			State: StateInvalid, Error: p.Err.Error()})
	}
	return out
}

// server is one configured server and its connection.
type server struct {
	m   *Manager
	cfg ServerConfig
	log hclog.Logger

	mu      sync.Mutex
	state   State
	err     error
	cs      *sdk.ClientSession
	tr      *commandTransport // stdio only
	url     string            // the expanded URL: never shown (see redact)
	tools   []agent.SourceTool
	starter chan struct{} // closed when the current start ends
	started bool          // a start has ended (ready or not)
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// start begins a start unless the server is ready, starting, or (without
// again) failed, exited or disabled; it returns a channel closed when the
// start in progress, if any, ends. again also starts a failed or exited
// server.
func (s *server) start(again bool) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.state == StateStarting:
		return s.starter
	case s.state == StateIdle, again && (s.state == StateFailed || s.state == StateExited):
	default:
		return closedChan
	}
	if s.m.ctx.Err() != nil {
		return closedChan
	}
	s.state, s.err = StateStarting, nil
	done := make(chan struct{})
	s.starter = done
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		defer s.m.changed()
		defer close(done)
		s.m.changed()
		s.connect()
	}()
	return done
}

// connect starts the server and lists its tools; it sets the state.
func (s *server) connect() {
	ctx, cancel := context.WithTimeout(s.m.ctx, s.m.opts.StartTimeout)
	defer cancel()
	begin := time.Now()
	cs, tr, tools, err := s.dial(ctx)
	if err != nil && ctx.Err() != nil && s.m.ctx.Err() == nil {
		err = fmt.Errorf("no answer within %s (the start timeout)", s.m.opts.StartTimeout)
	}
	if err != nil && tr != nil {
		if why := tr.exitStatus(); why != "" {
			err = fmt.Errorf("%w (%s)", err, why)
		}
	}
	s.mu.Lock()
	s.started = true
	if err != nil || s.m.ctx.Err() != nil {
		s.state, s.err = StateFailed, err
		if err == nil {
			s.err = errors.New("closed")
		}
		s.mu.Unlock()
		if cs != nil {
			cs.Close() // the Manager closed while it started
		}
		s.log.Warn("server did not start", "error", err)
		return
	}
	defer s.mu.Unlock()
	s.state, s.cs, s.tr, s.tools = StateReady, cs, tr, tools
	s.log.Info("server ready", "tools", len(tools), "took", time.Since(begin).Round(time.Millisecond))
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		_ = cs.Wait()
		s.mu.Lock()
		if s.cs == cs {
			s.state, s.cs = StateExited, nil
			why := "the connection closed"
			if tr != nil {
				why = orDefault(tr.exitStatus(), why)
			}
			s.err = errors.New(why)
			s.log.Warn("server stopped", "why", why)
		}
		s.mu.Unlock()
		cs.Close()
		s.m.changed()
	}()
}

// dial connects and lists the tools.
func (s *server) dial(ctx context.Context) (*sdk.ClientSession, *commandTransport, []agent.SourceTool, error) {
	cfg, err := s.cfg.expanded(s.m.opts.LookupEnv)
	if err != nil {
		return nil, nil, nil, err
	}
	s.mu.Lock()
	s.url = cfg.URL
	s.mu.Unlock()
	var transport sdk.Transport
	var tr *commandTransport
	switch {
	case s.m.opts.transport != nil:
		transport = s.m.opts.transport(cfg)
	case cfg.Transport() == TransportHTTP:
		transport = &sdk.StreamableClientTransport{Endpoint: cfg.URL, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: &headerTransport{headers: cfg.Headers, base: http.DefaultTransport,
				maxBody: int64(s.m.opts.MaxFrameBytes)}}}
	default:
		path, err := exec.LookPath(cfg.Command)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("command not found: %w", err)
		}
		cmd := exec.Command(path, cfg.Args...)
		if cmd.Dir, err = cfg.workDir(s.m.opts.Dir); err != nil {
			return nil, nil, nil, err
		}
		cmd.Env = os.Environ()
		for k, v := range cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		tr = newCommandTransport(cmd, s.m.opts.MaxFrameBytes, s.log)
		transport = tr
	}
	cs, err := s.m.client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, tr, nil, fmt.Errorf("connect: %w", redact(err, cfg.URL, s.cfg.Where()))
	}
	var tools []agent.SourceTool
	seen := map[string]bool{}
	var cursor string
	for {
		res, err := cs.ListTools(ctx, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			cs.Close()
			return nil, tr, nil, fmt.Errorf("tools/list: %w", redact(err, cfg.URL, s.cfg.Where()))
		}
		for _, t := range res.Tools {
			name := ToolName(s.cfg.Name, t.Name)
			if seen[name] {
				s.log.Warn("two tools have the same name for the model; the second is left out", "tool", t.Name, "name", name)
				continue
			}
			seen[name] = true
			schema, err := json.Marshal(t.InputSchema)
			if err != nil || t.InputSchema == nil {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			desc := t.Description
			if desc == "" {
				desc = orDefault(t.Title, t.Name)
			}
			tools = append(tools, agent.SourceTool{
				Spec:   provider.Tool{Name: name, Description: desc, InputSchema: schema},
				Server: s.cfg.Name, Tool: t.Name, AlwaysAllow: slices.Contains(s.cfg.AlwaysAllow, t.Name),
			})
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	return cs, tr, tools, nil
}

// ready returns the session and the tool for a call, starting an exited
// server again and waiting for a starting one.
func (s *server) ready(ctx context.Context, name string) (*sdk.ClientSession, agent.SourceTool, error) {
	select {
	case <-s.start(false):
	case <-ctx.Done():
		return nil, agent.SourceTool{}, ctx.Err()
	}
	s.mu.Lock()
	if s.state == StateReady && s.tr != nil && s.tr.exitStatus() != "" {
		// It died and its watcher has not said so yet.
		s.state, s.cs, s.err = StateExited, nil, errors.New(s.tr.exitStatus())
	}
	exited := s.state == StateExited
	s.mu.Unlock()
	if exited {
		s.log.Info("starting the server again")
		select {
		case <-s.start(true):
		case <-ctx.Done():
			return nil, agent.SourceTool{}, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != StateReady {
		return nil, agent.SourceTool{}, fmt.Errorf("mcp: the server %s is not available (%s): %v", s.cfg.Name, s.state, s.err)
	}
	for _, t := range s.tools {
		if t.Spec.Name == name {
			return s.cs, t, nil
		}
	}
	return nil, agent.SourceTool{}, fmt.Errorf("mcp: the server %s has no tool %q", s.cfg.Name, strings.TrimPrefix(name, agent.ExternalPrefix+s.cfg.Name+"__"))
}

// lookup finds a tool among those last listed.
func (s *server) lookup(name string) (agent.SourceTool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tools {
		if t.Spec.Name == name {
			return t, true
		}
	}
	return agent.SourceTool{}, false
}

// died reports why the session cs ended, or "" if it still runs.
func (s *server) died(cs *sdk.ClientSession) string {
	s.mu.Lock()
	tr, state, cur := s.tr, s.state, s.cs
	s.mu.Unlock()
	if tr != nil {
		select {
		case <-tr.exited:
			return tr.exitStatus()
		case <-time.After(500 * time.Millisecond):
		}
	}
	if cur != cs || state == StateExited {
		return "the connection closed"
	}
	return ""
}

// stop closes the server's session (stopping a stdio server's process).
func (s *server) stop() {
	s.mu.Lock()
	cs := s.cs
	s.cs = nil
	if s.state == StateReady {
		s.state = StateIdle
	}
	s.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
}

// toolNameRE is what model APIs accept in a tool name.
var toolNameRE = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// ToolName is the name the model sees for a server's tool:
// mcp__SERVER__TOOL, with characters the model APIs refuse replaced by
// "_" and cut to 64 characters.
func ToolName(server, tool string) string {
	n := agent.ExternalPrefix + server + "__" + toolNameRE.ReplaceAllString(tool, "_")
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// headerTransport adds the configured headers to every request and caps
// the body of answers to POSTs (the tool results) at maxBody.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
	maxBody int64
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost {
		resp.Body = &limitBody{rc: resp.Body, left: t.maxBody, max: t.maxBody}
	}
	return resp, err
}

// limitBody fails a read past max bytes.
type limitBody struct {
	rc interface {
		Read([]byte) (int, error)
		Close() error
	}
	left, max int64
}

func (b *limitBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("the server's answer is larger than %s", agent.HumanBytes(int(b.max)))
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitBody) Close() error { return b.rc.Close() }

// redact replaces the expanded URL (its query or user info may hold a
// token) in err's text with what is shown of it.
func redact(err error, url, shown string) error {
	if url == "" || !strings.Contains(err.Error(), url) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), url, shown))
}
