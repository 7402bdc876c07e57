package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/mcp"
	"github.com/agentkernel/agentkernel/surface/mcpserve"
)

// runMCP runs `agentkernel mcp list` or `agentkernel mcp serve` (package
// mcpserve).
func runMCP(args []string, env app.Env) error {
	const synopsis = "mcp list [--json] [--dir DIR] | mcp serve [flags]"
	switch {
	case len(args) > 0 && args[0] == "serve":
		return mcpserve.Run(args[1:], env)
	case len(args) > 0 && args[0] == "list":
		return runMCPList(args, env.Stdout, env.Stderr)
	case len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help"):
		fmt.Fprintln(env.Stdout, "Usage: agentkernel "+synopsis)
		return nil
	}
	fmt.Fprintln(env.Stderr, "Usage: agentkernel "+synopsis)
	return errors.New("mcp: want the subcommand list or serve")
}

// runMCPList: `agentkernel mcp list` starts the MCP servers configured for a
// directory (its .mcp.json, and the config file's mcpServers), waits for
// them, prints each one's status, transport and tools, and stops them.
func runMCPList(args []string, stdout, stderr io.Writer) error {
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
