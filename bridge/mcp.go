package bridge

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentkernel/agentkernel/mcp"
)

// mcpMagic is %agent mcp: the MCP servers' status (started and waited for
// first), or restart [NAME].
func (b *Bridge) mcpMagic(ctx context.Context, args []string) (string, error) {
	switch {
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
		return "", fmt.Errorf("usage: %%agent mcp [restart [NAME]]")
	}
	var sb strings.Builder
	mcp.FormatStatus(&sb, b.host.Tools().MCPStatus(ctx, true))
	return strings.TrimRight(sb.String(), "\n"), nil
}
