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
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent/provider"
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
