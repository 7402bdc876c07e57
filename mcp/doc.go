// Package mcp makes the tools of MCP servers (Model Context Protocol) tools
// of the agent, with the official Go SDK.
//
// Where to start: [Load] reads the configuration — the workspace's
// .mcp.json (project scope) over the config file's mcpServers (user
// scope), in Claude Code's format — and [NewManager] runs its servers.
// The Manager is an agent.ToolSource: the session host gives it to the
// toolbox, which offers each ready server's tools to the model as
// mcp__SERVER__TOOL; the task loop decides each call with the permission
// policy like any tool and runs it through [Manager.Call].
//
// Ownership: a Manager owns its servers (stdio processes, HTTP sessions)
// and the goroutines that watch them; Close stops them all. Servers start
// on first need, in parallel, each within a timeout; a server that fails
// is shown with its error ([Manager.Status]) and the others work; one that
// exits is started again at its next call. The package imports agent (for
// the ToolSource contract) and nothing above it.
package mcp
