package acpagent

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/internal/gate"
	"github.com/agentkernel/agentkernel/internal/procguard"
	"github.com/agentkernel/agentkernel/messages"
)

// This file: the agent's process, its connection and its session.

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
