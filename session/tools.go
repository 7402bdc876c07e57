package session

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/mcp"
)

// Tools are what clients and frontends add to the tools of a host's
// sessions: MCP servers (the configured ones, and a client's), a client's
// file buffers, and the notebooks frontends show.
type Tools struct {
	set toolSettings
	lis *agent.Listeners

	mu        sync.Mutex         // guards what follows; never held across a call out
	mcp       *mcp.Manager       // made at the first session
	clientMCP []mcp.ServerConfig // a client's servers (AddMCPServers)
	closed    bool
	files     agent.Files // a client's file buffers (SetFiles)
	// frontends are the notebooks frontends show (SetFrontends);
	// cellsLater says they will be set (ExpectCells).
	frontends  Frontends
	cellsLater bool
	prompt     bool // the notebooks' cells are in prompt mode (SetPromptCells)
}

// toolSettings are what the tools are made from (Config).
type toolSettings struct {
	workspace    string
	mcp          mcp.Options
	mcpServers   json.RawMessage
	logger       hclog.Logger
	cells        func() Cells
	openNotebook func(path string) (FileCells, error)
}

// toolboxOptions are the tools' share of a session's toolbox: the MCP
// servers, a client's file buffers and servers, and the notebook, which
// open makes of the frontends' (or the configured) cells.
func (t *Tools) toolboxOptions(open func(Cells) agent.Notebook) agent.ToolboxOptions {
	return agent.ToolboxOptions{Source: t.mcpSource(), Files: t.filesNow(), KernelServers: t.clientServers(),
		Notebook: t.notebookSource(open), PromptCells: t.promptCells()}
}

// mcpServers returns the host's MCP manager, making it on first use from
// the workspace's .mcp.json and Config.MCPServers. It starts nothing.
func (t *Tools) mcpServers() *mcp.Manager {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mcp == nil && !t.closed {
		opts := t.set.mcp
		opts.Config = mcp.Load(t.set.workspace, t.set.mcpServers, opts.UserDir)
		opts.Config.Add(t.clientMCP)
		opts.Dir = t.set.workspace
		opts.Logger = t.set.logger
		opts.OnChange = func() { t.lis.Emit(agent.Event{Kind: EventMCPChanged}) }
		t.mcp = mcp.NewManager(opts)
	}
	return t.mcp
}

// AddMCPServers adds MCP servers a client gives (ACP's session/new) to the
// workspace's and the config file's, before the host's first session; a
// server named as a configured one replaces it. After that it is an
// error: the servers are running.
func (t *Tools) AddMCPServers(servers []mcp.ServerConfig) error {
	if len(servers) == 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mcp != nil {
		return errors.New("session: the MCP servers are already running")
	}
	t.clientMCP = append(t.clientMCP, servers...)
	return nil
}

// clientServers are the names of the MCP servers a client gave: the
// user's own kernel, when one offers execute_code (ToolboxOptions.KernelServers).
func (t *Tools) clientServers() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	for _, s := range t.clientMCP {
		names = append(names, s.Name)
	}
	return names
}

// SetFiles makes the file tools of the sessions the host opens from now on
// read and write through f (an ACP client's editor buffers) instead of
// the disk.
func (t *Tools) SetFiles(f agent.Files) {
	t.mu.Lock()
	t.files = f
	t.mu.Unlock()
}

// filesNow are the file buffers SetFiles gave (nil: the disk).
func (t *Tools) filesNow() agent.Files {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.files
}

// mcpSource is the tool source of a new session's toolbox: the MCP
// servers, which begin to start now, in the background; the first model
// request waits for their first start (bounded by the start timeout), so
// that a first prompt sees their tools. Nil when none is configured.
func (t *Tools) mcpSource() agent.ToolSource {
	m := t.mcpServers()
	if m == nil || len(m.Status()) == 0 {
		return nil
	}
	m.Start()
	return m
}

// MCPStatus returns the status of the configured MCP servers. With wait
// it starts them and waits until none is starting (or ctx ends).
func (t *Tools) MCPStatus(ctx context.Context, wait bool) []mcp.ServerStatus {
	m := t.mcpServers()
	if m == nil {
		return nil
	}
	if wait {
		m.WaitStarted(ctx)
	}
	return m.Status()
}

// MCPRestart stops the MCP server called name (every one for "") and
// starts it again, waiting for the start.
func (t *Tools) MCPRestart(ctx context.Context, name string) error {
	m := t.mcpServers()
	if m == nil {
		return ErrClosed
	}
	return m.Restart(ctx, name)
}

// close stops the MCP servers (the host's Close); none starts after.
func (t *Tools) close() error {
	t.mu.Lock()
	m := t.mcp
	t.mcp, t.closed = nil, true
	t.mu.Unlock()
	if m == nil {
		return nil
	}
	return m.Close()
}
