package bridge

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentkernel/agentkernel/mcp"
)

// mcpMagic is %agent mcp: the MCP servers' status (started and waited for
// first), restart [NAME], or serve and stop (the kernel's own server, to
// outside clients).
func (b *Bridge) mcpMagic(ctx context.Context, args []string) (string, error) {
	switch {
	case len(args) == 1 && args[0] == "serve":
		return b.mcpServe()
	case len(args) == 1 && args[0] == "stop":
		if b.cfg.MCP == nil {
			return "", errNoMCPServer
		}
		if err := b.cfg.MCP.Stop(); err != nil {
			return "", err
		}
		return "The kernel's MCP server stopped: its token is good no more.", nil
	case len(args) == 0:
	case args[0] == "restart" && len(args) <= 2:
		name := ""
		if len(args) == 2 {
			name = args[1]
		}
		if err := b.host.Tools().MCPRestart(ctx, name); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("usage: %%agent mcp [restart [NAME] | serve | stop]")
	}
	var sb strings.Builder
	mcp.FormatStatus(&sb, b.host.Tools().MCPStatus(ctx, true))
	return strings.TrimRight(sb.String(), "\n"), nil
}

var errNoMCPServer = errors.New("this kernel has no MCP server to serve")

// mcpServe is %agent mcp serve: the kernel's MCP server — its live kernel,
// its sessions and the notebook a frontend shows — served (once) to
// outside clients on loopback; the output is the user's own: it has the
// token, and is never logged.
func (b *Bridge) mcpServe() (string, error) {
	if b.cfg.MCP == nil {
		return "", errNoMCPServer
	}
	url, token, err := b.cfg.MCP.Start()
	if err != nil {
		return "", fmt.Errorf("mcp serve: %w", err)
	}
	return fmt.Sprintf("The kernel's MCP server (execute_code, the notebook tools, the sessions) serves MCP clients on this machine:\n"+
		"URL: %s\ntoken: %s\n"+
		"Claude Code: claude mcp add --transport http agentkernel %s --header \"Authorization: Bearer %s\"\n"+
		"Every request carries \"Authorization: Bearer TOKEN\"; calls are decided by this session's permissions. "+
		"%%agent mcp stop stops it.", url, token, url, token), nil
}
