package acp

import (
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentkernel/agentkernel/mcp"
)

// TestClientMCPServers: the servers Jupyter AI's ACP client gives a session
// (its own Jupyter MCP Server over HTTP, with the chat's headers, and a
// stdio one from .jupyter/mcp_settings.json) become servers of ours, their
// labels made names.
func TestClientMCPServers(t *testing.T) {
	got := mcpServers([]sdk.McpServer{
		{Http: &sdk.McpServerHttpInline{Name: "Jupyter MCP Server", Url: "http://localhost:3001/mcp",
			Headers: []sdk.HttpHeader{{Name: "X-Jupyter-Chat-Id", Value: "chat-1"}}}},
		{Stdio: &sdk.McpServerStdio{Name: "fetch", Command: "uvx", Args: []string{"mcp-server-fetch"},
			Env: []sdk.EnvVariable{{Name: "K", Value: "v"}}}},
	})
	if len(got) != 2 {
		t.Fatalf("servers %+v", got)
	}
	if h := got[0]; h.Name != "Jupyter_MCP_Server" || h.Type != mcp.TransportHTTP || h.Headers["X-Jupyter-Chat-Id"] != "chat-1" {
		t.Errorf("the HTTP server: %+v", h)
	}
	if s := got[1]; s.Name != "fetch" || s.Command != "uvx" || s.Env["K"] != "v" {
		t.Errorf("the stdio server: %+v", s)
	}
}
