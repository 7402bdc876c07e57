// Command agentkernel is a Jupyter kernel whose cells talk to an AI coding
// agent, backed by a real kernel (ipykernel by default).
//
//	agentkernel install [--user | --sys-prefix | --prefix DIR] [--name NAME] ...
//	agentkernel uninstall --name NAME
//	agentkernel kernel -f CONNECTION_FILE     (what Jupyter launches)
//	agentkernel run NOTEBOOK                  (headless, prompt cells through the agent)
//	agentkernel ask [PROMPT | -]              (one-shot agent: text, json, stream-json)
//	agentkernel sessions SUBCOMMAND           (list, show, search, export, import, rm, restore, rewind, fork, share)
//	agentkernel store SUBCOMMAND              (init, grant, revoke, whoami: a shared PostgreSQL store)
//	agentkernel webview list
//	agentkernel logs [--follow]
//	agentkernel mcp list
//	agentkernel mcp serve [--http ADDR]      (the live kernel and the sessions as an MCP server)
//	agentkernel acp                           (an Agent Client Protocol agent on stdio)
//	agentkernel version
//
// The usage text (usage, below) says what each does; gateway-reaper is
// hidden: a gateway backing starts it (backing/reaper.go).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/surface/acp"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "agentkernel:", err)
			os.Exit(1)
		}
	}
}

// version is set with -ldflags "-X main.version=..."; otherwise the module
// version from the build info.
var version = ""

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v := bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				if v == "" || v == "(devel)" {
					v = "dev"
				}
				return v + "+" + s.Value[:12]
			}
		}
		if v != "" && v != "(devel)" {
			return v
		}
	}
	return "dev"
}

// commands are agentkernel's subcommands, in the order the usage lists
// them. A new surface is its package's Command, listed here.
var commands = []app.Command{
	{Name: "install", Synopsis: "install [flags]", Summary: `install the kernelspec so Jupyter lists "Agent"`,
		Run: func(a []string, e app.Env) error { return runInstall(a, e.Stdout, e.Stderr) }},
	{Name: "uninstall", Synopsis: "uninstall --name NAME", Summary: "remove an agentkernel kernelspec (what install printed)",
		Run: func(a []string, e app.Env) error { return runUninstall(a, e.Stdout, e.Stderr) }},
	{Name: "kernel", Synopsis: "kernel -f FILE [flags]", Summary: "run the kernel (Jupyter does this)",
		Run: func(a []string, e app.Env) error { return runKernel(a, e.Stderr) }},
	{Name: "run", Synopsis: "run NOTEBOOK [flags]", Summary: "execute a notebook headlessly (prompt cells through the agent)",
		Run: func(a []string, e app.Env) error { return runRun(a, e.Stdout, e.Stderr) }},
	{Name: "ask", Synopsis: "ask [PROMPT | -]", Summary: "one-shot agent: text, json or stream-json output",
		Run: func(a []string, e app.Env) error { return runAsk(a, e.Stdin, e.Stdout, e.Stderr) }},
	{Name: "sessions", Synopsis: "sessions SUBCOMMAND", Summary: "list, show, search, export, import, rm, restore, rewind, fork, share sessions",
		Run: func(a []string, e app.Env) error { return runSessions(a, e.Stdin, e.Stdout, e.Stderr) }},
	{Name: "store", Synopsis: "store SUBCOMMAND", Summary: "set up a shared PostgreSQL store: init, grant, revoke, whoami",
		Run: func(a []string, e app.Env) error { return runStore(a, e.Stdout, e.Stderr) }},
	{Name: "webview", Synopsis: "webview list", Summary: "the web panels of running kernels (URLs with their tokens)",
		Run: func(a []string, e app.Env) error { return runWebview(a, e.Stdout, e.Stderr) }},
	{Name: "logs", Synopsis: "logs [--follow]", Summary: "the event log: prompts, answers, commands, messages, tool calls, results",
		Run: func(a []string, e app.Env) error { return runLogs(a, e.Stdout, e.Stderr) }},
	{Name: "mcp", Synopsis: "mcp list | mcp serve", Summary: "the MCP servers of this directory; serve the live kernel and the sessions as one",
		Run: runMCP},
	acp.Command,
	{Name: "version", Synopsis: "version", Summary: "print the version",
		Run: func(_ []string, e app.Env) error {
			_, err := fmt.Fprintln(e.Stdout, "agentkernel", e.Version)
			return err
		}},
	{Name: app.ReaperCommand, Hidden: true, // started by a gateway backing (backing/reaper.go)
		Run: func(_ []string, e app.Env) error {
			backing.IgnoreStopSignals()
			os.Exit(backing.RunReaper(e.Stdin, e.Stderr))
			return nil
		}},
}

// usage writes the usage text.
func usage(w io.Writer) {
	fmt.Fprint(w, "agentkernel — a Jupyter kernel whose cells talk to an AI coding agent\n\nUsage:\n")
	app.WriteUsage(w, commands)
	fmt.Fprint(w, `
Run "agentkernel COMMAND --help" for a command's flags.

Environment:
  AGENTKERNEL_MODEL            model for new sessions: openai:gpt-4.1, anthropic:claude-sonnet-4-5,
                               ollama:qwen2.5-coder, replay:FILE (keys: OPENAI_API_KEY, ANTHROPIC_API_KEY, ...)
  AGENTKERNEL_APPROVE          none (default), read-only or all: answers asks when there is no stdin
  AGENTKERNEL_PERMISSION_MODE  default, acceptEdits, bypassPermissions or plan
  AGENTKERNEL_DATA_DIR         the session database's directory (default $XDG_DATA_HOME/agentkernel)
  AGENTKERNEL_CONFIG           config file (default $XDG_CONFIG_HOME/agentkernel/config.json)
  AGENTKERNEL_LOG_LEVEL        trace, debug, info, warn (default), error, off
`)
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return errors.New("no command given")
	}
	switch args[0] {
	case "--version", "-version":
		args[0] = "version"
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return nil
	}
	c, ok := app.Find(commands, args[0])
	if !ok {
		usage(stderr)
		return fmt.Errorf("unknown command %q", args[0])
	}
	return c.Run(args[1:], app.Env{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Version: versionString()})
}

// newLogger logs to w at the level from AGENTKERNEL_LOG_LEVEL.
func newLogger(w io.Writer) (hclog.Logger, error) { return app.NewLogger(w) }

// newFlagSet returns a FlagSet whose --help prints usage to w.
func newFlagSet(name, synopsis string, w io.Writer) *flag.FlagSet {
	return app.NewFlagSet(name, synopsis, w)
}
