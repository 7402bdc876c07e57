package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentkernel/agentkernel/tests/scripted"
)

// helloServer is an MCP server over streamable HTTP with one tool, hello.
func helloServer(t *testing.T) *httptest.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "hello", Description: "Says hello."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{}, nil, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs
}

// TestMCPList: agentkernel mcp list reads the directory's .mcp.json and the
// config file's mcpServers, starts the servers and shows them.
func TestMCPList(t *testing.T) {
	hs := helloServer(t)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	user, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"web": map[string]any{"type": "http", "url": hs.URL}}})
	if err := os.WriteFile(cfg, user, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENTKERNEL_CONFIG", cfg)
	t.Setenv("AGENTKERNEL_LOG_LEVEL", "off")
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".mcp.json"), []byte(`{"mcpServers": {"gone": {"command": "no-such-mcp-command"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}

	var out, errOut bytes.Buffer
	if err := run([]string{"mcp", "list", "--dir", ws}, &out, &errOut); err != nil {
		t.Fatalf("mcp list: %v\n%s", err, errOut.String())
	}
	for _, want := range []string{"web: ready (http, user)", "mcp__web__hello — Says hello.", "gone: failed (stdio, project)", "not found"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := run([]string{"mcp", "list", "--json", "--dir", ws}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var list []struct {
		Name, State string
		Tools       []struct{ Tool string }
	}
	if err := json.Unmarshal(out.Bytes(), &list); err != nil || len(list) != 2 {
		t.Fatalf("json %s: %v", out.String(), err)
	}
	if err := run([]string{"mcp", "bogus"}, &out, &errOut); err == nil {
		t.Error("mcp bogus: no error")
	}
}

// TestAskStreamJSONInitMCP: stream-json's init names the MCP servers with
// Claude Code's statuses, and lists a ready server's tools among the tools.
func TestAskStreamJSONInitMCP(t *testing.T) {
	hs := helloServer(t)
	model, ws := askEnv(t)
	mcpJSON, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"web":  map[string]any{"type": "http", "url": hs.URL},
		"gone": map[string]any{"command": "no-such-mcp-command"},
		"off":  map[string]any{"command": "true", "disabled": true},
	}})
	if err := os.WriteFile(filepath.Join(ws, ".mcp.json"), mcpJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	model.Enqueue(scripted.Reply(scripted.Text("Hi.")))
	out, err := ask(t, strings.NewReader(""), "Say hi", "--output-format", "stream-json")
	if err != nil {
		t.Fatal(err)
	}
	init := parseEvents(t, out)[0]
	got := map[string]string{}
	servers, _ := init["mcp_servers"].([]any)
	for _, s := range servers {
		m, _ := s.(map[string]any)
		got[m["name"].(string)], _ = m["status"].(string)
	}
	if want := map[string]string{"web": "connected", "gone": "failed", "off": "disabled"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mcp_servers %v, want %v", got, want)
	}
	tools, _ := init["tools"].([]any)
	if !slices.Contains(tools, any("mcp__web__hello")) || !slices.Contains(tools, any("execute_code")) {
		t.Errorf("tools %v", tools)
	}
}
