package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/eventlog"
)

const synopsis = `acp [--model MODEL] [--backing KERNELSPEC] [--store URL]

Speaks the Agent Client Protocol (JSON-RPC on stdin and stdout) as an agent:
an ACP client (Zed, JetBrains, Neovim, Jupyter AI) starts it and drives
agentkernel's agent. Each ACP session is a stored session of its cwd (shown
by "agentkernel sessions", the panel and %agent sessions) with a backing
kernel of its own there, started on first use. Asks become
session/request_permission; /rewind [N] takes the conversation and files
back to before the Nth last prompt. Logs go to stderr.`

// source names the inputs of ACP clients in the event log.
const source eventlog.Source = "acp"

// Command is `agentkernel acp`.
var Command = app.Command{Name: "acp", Synopsis: "acp [flags]", Summary: "an Agent Client Protocol agent on stdio (Zed, JetBrains, Neovim, Jupyter AI)",
	Run: run}

func run(args []string, env app.Env) error {
	fs := app.NewFlagSet("acp", synopsis, env.Stderr)
	model := fs.String("model", "", "model for new sessions (default $"+app.EnvModel+", then the config file)")
	bf := app.AddBackingFlags(fs, "kernelspec of the backing kernel each session's code runs in")
	storeArg := app.StoreFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("acp: unexpected argument %q", fs.Arg(0))
	}
	log, err := app.NewLogger(env.Stderr)
	if err != nil {
		return err
	}
	cfg := app.Load(app.Flags{Model: *model, Store: *storeArg}, log)
	if err := cfg.Err(); err != nil {
		return fmt.Errorf("acp: %w", err)
	}
	bo, err := bf.Options("acp")
	if err != nil {
		return fmt.Errorf("acp: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A client that closed its end before a last notification (a session's
	// commands, sent after the answer) is gone, not a crash: the write
	// fails and Serve ends.
	signal.Ignore(syscall.SIGPIPE)
	a, err := app.Open(ctx, cfg, app.Surface{Kind: "acp", Source: source, StoreNow: true, NoHost: true, Logger: log,
		Backing: bo})
	if err != nil {
		return fmt.Errorf("acp: %w", err)
	}
	defer a.Close()
	err = New(a, env.Version, log).Serve(ctx, env.Stdin, env.Stdout)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}
