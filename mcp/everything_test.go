package mcp

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// everything is the reference server @modelcontextprotocol/server-everything,
// installed from npm in tests/mcp (make mcp-server) and run over stdio.
func everything(t *testing.T) ServerConfig {
	t.Helper()
	index, err := filepath.Abs("../tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(index); err != nil {
		t.Skip("server-everything is not installed: run make mcp-server")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	return ServerConfig{Name: "everything", Scope: "project", Command: "node", Args: []string{"${AK_EVERYTHING:-" + index + "}", "stdio"},
		Env: map[string]string{"AK_GREETING": "${AK_UNSET_GREETING:-hello from .mcp.json}"}}
}

func TestEverything(t *testing.T) {
	m := newManager(t, Options{}, everything(t))
	m.WaitStarted(context.Background())
	s := statusOf(m, "everything")
	if s.State != StateReady {
		t.Fatalf("everything: %+v", s)
	}
	names := map[string]bool{}
	for _, tool := range s.Tools {
		names[tool.Tool] = true
	}
	for _, want := range []string{"mcp__everything__echo", "mcp__everything__get-tiny-image", "mcp__everything__trigger-long-running-operation", "mcp__everything__get-env"} {
		if !names[want] {
			t.Errorf("tool %s not offered; have %v", want, names)
		}
	}

	res, err := call(t, m, "mcp__everything__echo", `{"message":"hello MCP"}`)
	if err != nil || res.Text != "Echo: hello MCP" {
		t.Errorf("echo: %q %v", res.Text, err)
	}

	res, err = call(t, m, "mcp__everything__get-tiny-image", `{}`)
	if err != nil || len(res.Blocks) != 1 || res.Blocks[0].Source.MediaType != "image/png" || !strings.Contains(res.Text, "[image image/png") {
		t.Errorf("get-tiny-image: %q, %d image blocks, %v", res.Text, len(res.Blocks), err)
	}

	res, err = call(t, m, "mcp__everything__get-env", `{}`)
	if err != nil || !strings.Contains(res.Text, `hello from .mcp.json`) {
		t.Errorf("get-env: the expanded env did not reach the server: %.300q %v", res.Text, err)
	}

	var mu sync.Mutex
	var progress []string
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err = m.Call(ctx, "mcp__everything__trigger-long-running-operation", json.RawMessage(`{"duration":0.6,"steps":3}`),
		func(p string) { mu.Lock(); progress = append(progress, p); mu.Unlock() })
	mu.Lock()
	defer mu.Unlock()
	// The last report may come after the reply (notifications are handled
	// beside it): the two before must have come.
	if err != nil || !strings.Contains(res.Text, "Long running operation completed") || !strings.HasPrefix(strings.Join(progress, ","), "1/3,2/3") {
		t.Errorf("long-running: %q %v, progress %q", res.Text, err, progress)
	}
}
