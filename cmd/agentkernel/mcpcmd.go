package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/mcp"
	"github.com/agentkernel/agentkernel/mcpserve"
)

// runMCP runs `agentkernel mcp list` or `agentkernel mcp serve` (package
// mcpserve).
func runMCP(args []string, env app.Env) error {
	if len(args) > 0 && args[0] == "serve" {
		return mcpserve.Run(args[1:], env)
	}
	return runMCPList(args, env.Stdout, env.Stderr)
}

// runMCPList: `agentkernel mcp list` starts the MCP servers configured for a
// directory (its .mcp.json, and the config file's mcpServers), waits for
// them, prints each one's status, transport and tools, and stops them.
func runMCPList(args []string, stdout, stderr io.Writer) error {
	if ok, err := wantList("mcp", "mcp list [--json] [--dir DIR] | mcp serve [flags]", args, stderr); !ok {
		return err
	}
	fs := newFlagSet("mcp list", "mcp list [--json] [--dir DIR]", stderr)
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	dir := fs.String("dir", ".", "the workspace whose .mcp.json is read")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	log, err := newLogger(stderr)
	if err != nil {
		return err
	}
	cfg := app.Load(app.Flags{}, log)
	if err := cfg.Err(); err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := mcp.NewManager(mcp.Options{Config: mcp.Load(*dir, cfg.File.MCPServers, cfg.UserDir()), Dir: *dir, Logger: log})
	defer m.Close()
	m.WaitStarted(ctx)
	status := m.Status()
	if *asJSON {
		if status == nil {
			status = []mcp.ServerStatus{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(status)
	}
	mcp.FormatStatus(stdout, status)
	return nil
}
