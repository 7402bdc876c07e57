package session

import (
	"context"
	"errors"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/mcp"
)

// mcpServers returns the host's MCP manager, making it on first use from
// the workspace's .mcp.json and Config.MCPServers. It starts nothing.
func (h *Host) mcpServers() *mcp.Manager {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mcp == nil && !h.closed {
		opts := h.cfg.MCP
		opts.Config = mcp.Load(h.cfg.Workspace, h.cfg.MCPServers, opts.UserDir)
		opts.Config.Add(h.clientMCP)
		opts.Dir = h.cfg.Workspace
		opts.Logger = h.cfg.Logger
		opts.OnChange = func() { h.lis.Emit(agent.Event{Kind: EventMCPChanged}) }
		h.mcp = mcp.NewManager(opts)
	}
	return h.mcp
}

// AddMCPServers adds MCP servers a client gives (ACP's session/new) to the
// workspace's and the config file's, before the host's first session; a
// server named as a configured one replaces it. After that it is an
// error: the servers are running.
func (h *Host) AddMCPServers(servers []mcp.ServerConfig) error {
	if len(servers) == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mcp != nil {
		return errors.New("session: the MCP servers are already running")
	}
	h.clientMCP = append(h.clientMCP, servers...)
	return nil
}

// clientServers are the names of the MCP servers a client gave: the
// user's own kernel, when one offers execute_code (ToolboxOptions.KernelServers).
func (h *Host) clientServers() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var names []string
	for _, s := range h.clientMCP {
		names = append(names, s.Name)
	}
	return names
}

// SetFiles makes the file tools of the sessions the host opens from now on
// read and write through f (an ACP client's editor buffers) instead of
// the disk.
func (h *Host) SetFiles(f agent.Files) {
	h.mu.Lock()
	h.files = f
	h.mu.Unlock()
}

// mcpSource is the tool source of a new session's toolbox: the MCP
// servers, which begin to start now, in the background; the first model
// request waits for their first start (bounded by the start timeout), so
// that a first prompt sees their tools. Nil when none is configured.
func (h *Host) mcpSource() agent.ToolSource {
	m := h.mcpServers()
	if m == nil || len(m.Status()) == 0 {
		return nil
	}
	m.Start()
	return m
}

// MCPStatus returns the status of the configured MCP servers. With wait
// it starts them and waits until none is starting (or ctx ends).
func (h *Host) MCPStatus(ctx context.Context, wait bool) []mcp.ServerStatus {
	m := h.mcpServers()
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
func (h *Host) MCPRestart(ctx context.Context, name string) error {
	m := h.mcpServers()
	if m == nil {
		return ErrClosed
	}
	return m.Restart(ctx, name)
}
