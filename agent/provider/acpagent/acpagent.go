// Package acpagent drives an external agent that speaks the Agent Client
// Protocol — Claude Code (claude-agent-acp), Codex (codex-acp), Gemini
// CLI, any ACP agent — as agentkernel's model: it is a provider.Provider
// whose turns are the agent's. agentkernel is the ACP client: it starts
// the agent's process, opens a session in the workspace with the tools it
// is given (the live kernel, as an MCP server), sends each prompt, and
// turns the agent's session/update into the provider's events — its words
// and reasoning as text, its own tool calls as activity — and its
// session/request_permission into asks, which the task puts to whoever
// answers asks.
//
// The agent keeps its own history. The conversation is agentkernel's: a
// prompt after a rewind (the history no longer holds what the agent was
// told) opens a new ACP session and gives it the rewound conversation as
// a transcript, so the agent goes on from there; what the agent did to
// files and the kernel is undone by agentkernel's rewind as usual. A
// process that dies fails the turn, and the next prompt starts a new one
// the same way.
package acpagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/internal/gate"
	"github.com/agentkernel/agentkernel/internal/procguard"
	"github.com/agentkernel/agentkernel/messages"
)

// Name is the provider's name in model strings: "acp:claude".
const Name = "acp"

// ToolServer is an MCP server given to the agent in each session it opens
// (the live kernel's): streamable HTTP at URL with Headers.
type ToolServer struct {
	Name    string
	URL     string
	Headers map[string]string
}

// Options configure a Provider.
type Options struct {
	// Label names the agent for people ("claude"); default the command.
	Label string
	// Command is the agent's command line.
	Command []string
	// Env is added to the agent's environment.
	Env []string
	// Dir is the workspace: the process's directory and the session's cwd.
	Dir string
	// Tools, when set, gives the MCP servers of each new session.
	Tools func(ctx context.Context) ([]ToolServer, error)
	// StartTimeout bounds the start and initialize (default 60 s).
	StartTimeout time.Duration
	// Logger; default a null logger.
	Logger hclog.Logger
}

// cancelGrace is how long a cancelled turn may take to end.
const cancelGrace = 10 * time.Second

// Aliases are the agents `%agent use NAME` knows, as command lines; any
// other name is taken as the command line itself.
var Aliases = map[string][]string{
	"claude": {"claude-agent-acp"},
	"codex":  {"codex-acp"},
	"gemini": {"gemini", "--experimental-acp"},
}

// installHints say how the aliases' agents are installed.
var installHints = map[string]string{
	"claude-agent-acp": "npm install -g @zed-industries/claude-agent-acp",
	"codex-acp":        "npm install -g @zed-industries/codex-acp",
	"gemini":           "npm install -g @google/gemini-cli",
}

// Model returns the model string of the agent spec: "acp:" and the agent,
// whether spec is spelt "claude", "acp:claude", "node agent.js" or
// "acp:node agent.js". Every place that turns a user's --agent or %agent use
// into a model calls it.
func Model(spec string) string {
	return Name + ":" + agentOf(spec)
}

// agentOf is the agent a spec names, without the "acp:" prefixes a model
// string (or an older install that wrote "acp:acp:…") carries.
func agentOf(spec string) string {
	spec = strings.TrimSpace(spec)
	for strings.HasPrefix(spec, Name+":") {
		spec = strings.TrimSpace(strings.TrimPrefix(spec, Name+":"))
	}
	return spec
}

// Command returns the command line of an agent named in a model string
// ("claude", "codex", "gemini", or a command line; with or without
// "acp:").
func Command(spec string) []string {
	spec = agentOf(spec)
	if c, ok := Aliases[spec]; ok {
		return slices.Clone(c)
	}
	return strings.Fields(spec)
}

// Find returns the program of the agent spec names (as Command reads
// it) as found on PATH, or an error that says how to install it.
func Find(spec string) (string, error) {
	return findProgram(Command(spec))
}

func findProgram(cmd []string) (string, error) {
	if len(cmd) == 0 {
		return "", errors.New("no agent command")
	}
	path, err := exec.LookPath(cmd[0])
	if err != nil {
		hint := ""
		if h, ok := installHints[cmd[0]]; ok {
			hint = " (install it with: " + h + ")"
		}
		return "", fmt.Errorf("the agent %q is not installed (or not on PATH)%s: %w", cmd[0], hint, err)
	}
	return path, nil
}

// interpreters run an agent's script: the script names the agent.
var interpreters = map[string]bool{"node": true, "nodejs": true, "npx": true, "bun": true, "deno": true, "python": true,
	"python3": true, "uvx": true, "uv": true, "env": true, "sh": true, "bash": true}

// Label names the agent of a command line for people: its program, or
// the script an interpreter runs (a package's dist/index.js is named by
// its package directory).
func Label(cmd []string) string {
	i := 0
	for i < len(cmd)-1 && (interpreters[filepath.Base(cmd[i])] || strings.HasPrefix(cmd[i], "-")) {
		i++
	}
	p := cmd[i]
	for _, suffix := range []string{"/dist/index.js", "/dist/cli.js", "/index.js", "/cli.js", "/bin/cli.js"} {
		if strings.HasSuffix(p, suffix) {
			return filepath.Base(strings.TrimSuffix(p, suffix))
		}
	}
	return filepath.Base(p)
}

// Provider is an external ACP agent as a provider. Its methods are safe
// for concurrent use; one turn runs at a time.
type Provider struct {
	o   Options
	log hclog.Logger

	mu     sync.Mutex
	proc   *process
	closed bool
	turnMu sync.Mutex // one prompt at a time
}

// New returns the provider of the agent o.Command; nothing is started
// until the first turn.
func New(o Options) (*Provider, error) {
	if len(o.Command) == 0 {
		return nil, errors.New("acpagent: no agent command")
	}
	if o.Label == "" {
		o.Label = Label(o.Command)
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = time.Minute
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return &Provider{o: o, log: o.Logger.Named("acp-agent")}, nil
}

// Name implements provider.Provider.
func (p *Provider) Name() string { return Name }

// Model implements provider.Provider: the agent, whose prices are its own
// business (its usage is counted; its cost is not known here).
func (p *Provider) Model() provider.ModelInfo {
	return provider.ModelInfo{ID: p.o.Label, Vision: true}
}

// Close stops the agent's process.
func (p *Provider) Close() error {
	p.mu.Lock()
	proc := p.proc
	p.proc, p.closed = nil, true
	p.mu.Unlock()
	if proc != nil {
		proc.stop()
	}
	return nil
}

// apiError is a failed turn, as the task loop reports it.
func (p *Provider) apiError(format string, a ...any) error {
	return &provider.APIError{Provider: Name, Message: fmt.Sprintf(format, a...)}
}

// Stream implements provider.Provider: it sends the last user message of
// req to the agent as a prompt and streams the turn.
func (p *Provider) Stream(ctx context.Context, req provider.Request) (provider.Stream, error) {
	prompt, history, err := lastPrompt(req.Messages)
	if err != nil {
		return nil, err
	}
	promptTS := req.Messages[len(req.Messages)-1].TS
	p.turnMu.Lock()
	proc, err := p.process(ctx)
	if err != nil {
		p.turnMu.Unlock()
		return nil, err
	}
	// The agent's session must hold what this history held before the
	// prompt: else (a rewind, an edit, a new process) a new session is
	// told the conversation first.
	if !proc.inSync(history) {
		if err := proc.newSession(ctx, p.o); err != nil {
			p.turnMu.Unlock()
			return nil, p.apiError("%s: session/new: %v", p.o.Label, err)
		}
		if t := transcript(history); t != "" {
			prompt = append([]sdk.ContentBlock{sdk.TextBlock(t)}, prompt...)
		}
	}
	s := &stream{done: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	proc.setTurn(s)
	go func() {
		defer p.turnMu.Unlock()
		defer proc.setTurn(nil)
		stopCancel := context.AfterFunc(ctx, func() {
			_ = proc.conn.Cancel(context.WithoutCancel(ctx), sdk.CancelNotification{SessionId: proc.sid})
			// An agent that does not wind its turn up is stopped: the
			// next prompt starts another.
			select {
			case <-s.done:
			case <-time.After(cancelGrace):
				p.log.Warn("the agent did not end its cancelled turn; stopping it", "agent", p.o.Label)
				p.drop(proc)
			}
		})
		defer stopCancel()
		resp, err := proc.conn.Prompt(context.WithoutCancel(ctx), sdk.PromptRequest{SessionId: proc.sid, Prompt: prompt})
		if err != nil {
			// A process that died fails the prompt as its pipe closes,
			// a moment before its exit is seen.
			select {
			case <-proc.exited:
				err = p.apiError("%s exited during the turn (%v)%s", p.o.Label, proc.cmd.ProcessState, proc.stderrTail())
				p.drop(proc)
			case <-time.After(time.Second):
				err = p.apiError("%s: session/prompt: %v", p.o.Label, err)
			}
			s.end(err)
			return
		}
		proc.sent(history, promptTS)
		if u := resp.Usage; u != nil {
			usage := provider.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
			if u.CachedReadTokens != nil {
				usage.CacheReadTokens = *u.CachedReadTokens
			}
			if u.CachedWriteTokens != nil {
				usage.CacheWriteTokens = *u.CachedWriteTokens
			}
			s.push(provider.Event{Type: provider.EventUsage, Usage: &usage})
		}
		stop := provider.StopEndTurn
		switch resp.StopReason {
		case sdk.StopReasonMaxTokens:
			stop = provider.StopMaxTokens
		case sdk.StopReasonEndTurn:
		default:
			stop = provider.StopOther
		}
		s.push(provider.Event{Type: provider.EventDone, StopReason: stop})
		s.end(nil)
	}()
	return s, nil
}

// drop forgets proc (it exited): the next turn starts a new process.
func (p *Provider) drop(proc *process) {
	p.mu.Lock()
	if p.proc == proc {
		p.proc = nil
	}
	p.mu.Unlock()
	proc.stop()
}

// process returns the running agent process, starting one if none runs.
func (p *Provider) process(ctx context.Context) (*process, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, p.apiError("%s: closed", p.o.Label)
	}
	if p.proc != nil {
		select {
		case <-p.proc.exited:
			p.proc.stop()
			p.proc = nil
		default:
			return p.proc, nil
		}
	}
	sctx, cancel := context.WithTimeout(ctx, p.o.StartTimeout)
	defer cancel()
	proc, err := start(sctx, p.o, p.log)
	if err != nil {
		return nil, p.apiError("%s: %v", p.o.Label, err)
	}
	p.proc = proc
	return proc, nil
}

// lastPrompt is the last message of msgs, a user message, as ACP content,
// and the messages before it.
func lastPrompt(msgs []messages.APIMessage) ([]sdk.ContentBlock, []messages.APIMessage, error) {
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != messages.RoleUser {
		return nil, nil, errors.New("acpagent: the history does not end with a prompt")
	}
	last := msgs[len(msgs)-1]
	var out []sdk.ContentBlock
	for _, b := range last.Content {
		switch {
		case b.Type == messages.BlockText && b.Text != "":
			out = append(out, sdk.TextBlock(b.Text))
		case b.Type == messages.BlockImage && b.Source != nil && b.Source.Data != "":
			out = append(out, sdk.ImageBlock(b.Source.Data, b.Source.MediaType))
		case b.Type == messages.BlockToolResult:
			// A tool result of ours (none in an agent's turn, but a
			// history from another model may end so): its text.
			for _, c := range b.Content {
				if c.Type == messages.BlockText && c.Text != "" {
					out = append(out, sdk.TextBlock(c.Text))
				}
			}
		}
	}
	if len(out) == 0 {
		out = append(out, sdk.TextBlock("(empty prompt)"))
	}
	return out, msgs[:len(msgs)-1], nil
}

// transcript is the conversation so far, for a new session of the agent
// to go on from.
func transcript(history []messages.APIMessage) string {
	var b strings.Builder
	for _, m := range history {
		var parts []string
		for _, c := range m.Content {
			if c.Type == messages.BlockText && strings.TrimSpace(c.Text) != "" {
				parts = append(parts, c.Text)
			}
		}
		if len(parts) == 0 {
			continue
		}
		fmt.Fprintf(&b, "<%s>\n%s\n</%s>\n", m.Role, strings.Join(parts, "\n"), m.Role)
	}
	if b.Len() == 0 {
		return ""
	}
	return "This conversation began earlier (in another session, or it was rewound to this point). Here it is; " +
		"go on from its end:\n<conversation>\n" + b.String() + "</conversation>\n\nThe new message:"
}

// process is a running agent: its connection and its current session.
type process struct {
	cmd    *exec.Cmd
	conn   *sdk.ClientSideConnection
	caps   sdk.AgentCapabilities
	exited chan struct{}
	stderr *tail
	log    hclog.Logger

	mu   sync.Mutex
	sid  sdk.SessionId
	seen []int64 // the ts of the messages the session has been given
	turn *stream
}

// start starts the agent and initializes the connection.
func start(ctx context.Context, o Options, log hclog.Logger) (*process, error) {
	path, err := findProgram(o.Command)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, o.Command[1:]...)
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), o.Env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	pr := &process{cmd: cmd, exited: make(chan struct{}), stderr: &tail{max: 4096, log: log}, log: log}
	cmd.Stderr = pr.stderr
	// Its own process group (what it starts, as Claude Code under
	// claude-agent-acp, is stopped with it), which ends with us however we
	// end.
	if err := procguard.Start(cmd); err != nil {
		return nil, err
	}
	go func() {
		_ = cmd.Wait()
		procguard.Release(cmd)
		close(pr.exited)
	}()
	in := gate.New(stdout)
	pr.conn = sdk.NewClientSideConnection(&client{p: pr}, stdin, in)
	pr.conn.SetLogger(slog.New(slog.NewTextHandler(log.StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true}),
		&slog.HandlerOptions{Level: slog.LevelWarn})))
	in.Open()
	init, err := pr.conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber,
		ClientInfo:         &sdk.Implementation{Name: "agentkernel", Version: "1"},
		ClientCapabilities: sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: false, WriteTextFile: false}, Terminal: false}})
	if err != nil {
		select {
		case <-pr.exited:
			return nil, fmt.Errorf("it exited before it answered initialize (%v)%s", cmd.ProcessState, pr.stderrTail())
		case <-time.After(200 * time.Millisecond):
		}
		pr.stop()
		return nil, fmt.Errorf("initialize: %w%s", err, pr.stderrTail())
	}
	pr.caps = init.AgentCapabilities
	log.Debug("agent started", "command", o.Command, "protocol", init.ProtocolVersion)
	return pr, nil
}

// newSession opens a session in o.Dir with o.Tools.
func (pr *process) newSession(ctx context.Context, o Options) error {
	servers := []sdk.McpServer{}
	if o.Tools != nil {
		ts, err := o.Tools(ctx)
		if err != nil {
			pr.log.Warn("the tools for the agent", "error", err)
		}
		for _, t := range ts {
			if !pr.caps.McpCapabilities.Http {
				pr.log.Warn("the agent takes no HTTP MCP servers: it runs without the kernel's tools", "server", t.Name)
				continue
			}
			hs := []sdk.HttpHeader{}
			for k, v := range t.Headers {
				hs = append(hs, sdk.HttpHeader{Name: k, Value: v})
			}
			servers = append(servers, sdk.McpServer{Http: &sdk.McpServerHttpInline{Type: "http", Name: t.Name, Url: t.URL, Headers: hs}})
		}
	}
	resp, err := pr.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: o.Dir, McpServers: servers})
	if err != nil {
		return err
	}
	pr.mu.Lock()
	pr.sid, pr.seen = resp.SessionId, nil
	pr.mu.Unlock()
	return nil
}

// inSync reports whether the session has been given exactly the prompts
// of history (and so holds its answers).
func (pr *process) inSync(history []messages.APIMessage) bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.sid == "" {
		return false
	}
	return slices.Equal(pr.seen, prompts(history))
}

// sent records that the session has been given the prompts of history
// and the prompt stamped ts.
func (pr *process) sent(history []messages.APIMessage, ts int64) {
	pr.mu.Lock()
	pr.seen = append(prompts(history), ts)
	pr.mu.Unlock()
}

// prompts are the stamps of the user messages of ms: what a session that
// holds ms was given.
func prompts(ms []messages.APIMessage) []int64 {
	out := []int64{}
	for _, m := range ms {
		if m.Role == messages.RoleUser {
			out = append(out, m.TS)
		}
	}
	return out
}

func (pr *process) setTurn(s *stream) {
	pr.mu.Lock()
	pr.turn = s
	pr.mu.Unlock()
}

func (pr *process) current() *stream {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.turn
}

// stop ends the process group: the agent and what it started.
func (pr *process) stop() {
	select {
	case <-pr.exited:
		return
	default:
	}
	if pr.cmd.Process != nil {
		_ = syscall.Kill(-pr.cmd.Process.Pid, syscall.SIGTERM)
	}
	select {
	case <-pr.exited:
	case <-time.After(3 * time.Second):
		_ = syscall.Kill(-pr.cmd.Process.Pid, syscall.SIGKILL)
		<-pr.exited
	}
}

// stderrTail is the end of what the agent wrote on stderr, for an error.
func (pr *process) stderrTail() string {
	t := strings.TrimSpace(pr.stderr.String())
	if t == "" {
		return ""
	}
	return ": " + t
}

// tail keeps the last max bytes written, and logs each line.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
	log hclog.Logger
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		if len(line) > 0 {
			t.log.Debug("agent stderr", "line", string(line))
		}
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// stream is one turn's events, queued without bound (the agent's
// notifications must never wait on the task, which may be waiting for
// the user), and read by the task loop.
type stream struct {
	mu     sync.Mutex
	cond   *sync.Cond
	queue  []provider.Event
	err    error // after the queue: io.EOF or the turn's error
	ended  bool
	closed bool
	done   chan struct{}
	calls  map[string]*provider.Activity
}

func (s *stream) push(e provider.Event) {
	s.mu.Lock()
	if !s.ended && !s.closed {
		s.queue = append(s.queue, e)
		s.cond.Signal()
	}
	s.mu.Unlock()
}

// end ends the stream after what is queued, with err (nil: io.EOF).
func (s *stream) end(err error) {
	if err == nil {
		err = io.EOF
	}
	s.mu.Lock()
	if !s.ended {
		s.ended, s.err = true, err
		close(s.done)
		s.cond.Broadcast()
	}
	s.mu.Unlock()
}

// Next implements provider.Stream.
func (s *stream) Next() (provider.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) == 0 && !s.ended && !s.closed {
		s.cond.Wait()
	}
	if len(s.queue) > 0 && !s.closed {
		e := s.queue[0]
		s.queue = s.queue[1:]
		return e, nil
	}
	if s.closed {
		return provider.Event{}, context.Canceled
	}
	return provider.Event{}, s.err
}

// Close implements provider.Stream. The turn itself ends when the agent
// answers the cancel that the turn's context sent.
func (s *stream) Close() error {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	return nil
}

// activity merges an update of the tool call id into what is known of it.
func (s *stream) activity(id, title, kind string, input any, status string, content []sdk.ToolCallContent) provider.Activity {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[string]*provider.Activity{}
	}
	a := s.calls[id]
	if a == nil {
		a = &provider.Activity{ID: id}
		s.calls[id] = a
	}
	if title != "" {
		a.Title = title
	}
	if kind != "" {
		a.Kind = kind
	}
	if input != nil {
		if b, err := json.Marshal(input); err == nil && string(b) != "null" && string(b) != "{}" {
			a.Input = b
		}
	}
	if status != "" {
		a.Status = status
	}
	if t := contentText(content); t != "" {
		a.Output = t
	}
	if a.Title == "" {
		a.Title = "tool call"
	}
	return *a
}

// contentText is the text of a tool call's content.
func contentText(cs []sdk.ToolCallContent) string {
	var parts []string
	for _, c := range cs {
		switch {
		case c.Content != nil && c.Content.Content.Text != nil:
			parts = append(parts, c.Content.Content.Text.Text)
		case c.Diff != nil:
			parts = append(parts, "edited "+c.Diff.Path)
		}
	}
	return strings.Join(parts, "\n")
}

// client is agentkernel's side of the connection (sdk.Client): it turns
// the agent's notifications and requests into the current turn's events.
// Files and terminals are not offered: the agent uses its own.
type client struct{ p *process }

var _ sdk.Client = (*client)(nil)

func (c *client) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	s := c.p.current()
	if s == nil {
		return nil // between turns: commands, modes
	}
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		s.push(provider.Event{Type: provider.EventText, Text: u.AgentMessageChunk.Content.Text.Text})
	case u.AgentThoughtChunk != nil && u.AgentThoughtChunk.Content.Text != nil:
		s.push(provider.Event{Type: provider.EventReasoning, Text: u.AgentThoughtChunk.Content.Text.Text})
	case u.ToolCall != nil:
		t := u.ToolCall
		a := s.activity(string(t.ToolCallId), t.Title, string(t.Kind), t.RawInput, string(t.Status), t.Content)
		s.push(provider.Event{Type: provider.EventActivity, Activity: &a})
	case u.ToolCallUpdate != nil:
		t := u.ToolCallUpdate
		title, kind, status := "", "", ""
		if t.Title != nil {
			title = *t.Title
		}
		if t.Kind != nil {
			kind = string(*t.Kind)
		}
		if t.Status != nil {
			status = string(*t.Status)
		}
		a := s.activity(string(t.ToolCallId), title, kind, t.RawInput, status, t.Content)
		s.push(provider.Event{Type: provider.EventActivity, Activity: &a})
	}
	return nil
}

func (c *client) RequestPermission(ctx context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	cancelled := sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}
	s := c.p.current()
	if s == nil {
		return cancelled, nil
	}
	title := "tool call"
	if r.ToolCall.Title != nil {
		title = *r.ToolCall.Title
	}
	var input json.RawMessage
	if r.ToolCall.RawInput != nil {
		input, _ = json.Marshal(r.ToolCall.RawInput)
	}
	type answer struct{ allow, always bool }
	got := make(chan answer, 1)
	var once sync.Once
	s.push(provider.Event{Type: provider.EventAsk, Ask: &provider.Ask{Tool: title, Input: input, Reply: func(allow, always bool) {
		once.Do(func() { got <- answer{allow, always} })
	}}})
	var a answer
	select {
	case a = <-got:
	case <-s.done:
		return cancelled, nil
	case <-ctx.Done():
		return cancelled, nil
	}
	pick := func(kinds ...sdk.PermissionOptionKind) (sdk.RequestPermissionResponse, bool) {
		for _, k := range kinds {
			for _, o := range r.Options {
				if o.Kind == k {
					return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(o.OptionId)}, true
				}
			}
		}
		return cancelled, false
	}
	var resp sdk.RequestPermissionResponse
	switch {
	case a.allow && a.always:
		resp, _ = pick(sdk.PermissionOptionKindAllowAlways, sdk.PermissionOptionKindAllowOnce)
	case a.allow:
		resp, _ = pick(sdk.PermissionOptionKindAllowOnce, sdk.PermissionOptionKindAllowAlways)
	default:
		resp, _ = pick(sdk.PermissionOptionKindRejectOnce, sdk.PermissionOptionKindRejectAlways)
	}
	return resp, nil
}

func (c *client) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsReadTextFile)
}

func (c *client) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsWriteTextFile)
}

func (c *client) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalCreate)
}

func (c *client) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalKill)
}

func (c *client) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalOutput)
}

func (c *client) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalRelease)
}

func (c *client) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalWaitForExit)
}
