// Command agentkernel is a Jupyter kernel whose cells talk to an AI coding
// agent, backed by a real kernel (ipykernel by default).
//
//	agentkernel install [--user | --sys-prefix | --prefix DIR] [--name NAME] ...
//	agentkernel uninstall --name NAME
//	agentkernel kernel -f CONNECTION_FILE     (what Jupyter launches)
//	agentkernel run NOTEBOOK                  (headless, prompt cells through the agent)
//	agentkernel ask [PROMPT | -]              (one-shot agent: text, json, stream-json)
//	agentkernel sessions SUBCOMMAND           (list, show, search, export, import, rm, restore, rewind, fork)
//	agentkernel webview list
//	agentkernel logs [--follow]
//	agentkernel mcp list
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
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/backing"
)

// reaperCommand is the hidden subcommand of the gateway reaper.
const reaperCommand = "gateway-reaper"

// reaper is the command line of the gateway reaper: this executable (nil
// when it cannot be found: no reaper).
func reaper() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{exe, reaperCommand}
}

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

const usage = `agentkernel — a Jupyter kernel whose cells talk to an AI coding agent

Usage:
  agentkernel install [flags]        install the kernelspec so Jupyter lists "Agent"
  agentkernel uninstall --name NAME  remove an agentkernel kernelspec (what install printed)
  agentkernel kernel -f FILE [flags] run the kernel (Jupyter does this)
  agentkernel run NOTEBOOK [flags]   execute a notebook headlessly (prompt cells through the agent)
  agentkernel ask [PROMPT | -]       one-shot agent: text, json or stream-json output
  agentkernel sessions SUBCOMMAND    list, show, search, export, import, rm, restore, rewind, fork sessions
  agentkernel webview list           the web panels of running kernels (URLs with their tokens)
  agentkernel logs [--follow]        the event log: prompts, answers, commands, messages, tool calls, results
  agentkernel mcp list [--json]      the MCP servers of this directory: status, transport, tools
  agentkernel version                print the version

Run "agentkernel COMMAND --help" for a command's flags.

Environment:
  AGENTKERNEL_MODEL            model for new sessions: openai:gpt-4.1, anthropic:claude-sonnet-4-5,
                               ollama:qwen2.5-coder, replay:FILE (keys: OPENAI_API_KEY, ANTHROPIC_API_KEY, ...)
  AGENTKERNEL_APPROVE          none (default), read-only or all: answers asks when there is no stdin
  AGENTKERNEL_PERMISSION_MODE  default, acceptEdits, bypassPermissions or plan
  AGENTKERNEL_DATA_DIR         the session database's directory (default $XDG_DATA_HOME/agentkernel)
  AGENTKERNEL_CONFIG           config file (default $XDG_CONFIG_HOME/agentkernel/config.json)
  AGENTKERNEL_LOG_LEVEL        trace, debug, info, warn (default), error, off
`

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "install":
		return runInstall(rest, stdout, stderr)
	case "uninstall":
		return runUninstall(rest, stdout, stderr)
	case "kernel":
		return runKernel(rest, stderr)
	case "run":
		return runRun(rest, stdout, stderr)
	case "ask":
		return runAsk(rest, os.Stdin, stdout, stderr)
	case "sessions":
		return runSessions(rest, os.Stdin, stdout, stderr)
	case "webview":
		return runWebview(rest, stdout, stderr)
	case "logs":
		return runLogs(rest, stdout, stderr)
	case "mcp":
		return runMCP(rest, stdout, stderr)
	case reaperCommand: // hidden: started by a gateway backing (backing/reaper.go)
		backing.IgnoreStopSignals()
		os.Exit(backing.RunReaper(os.Stdin, stderr))
		return nil
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "agentkernel", versionString())
		return nil
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

// newLogger logs to w at the level from AGENTKERNEL_LOG_LEVEL.
func newLogger(w io.Writer) (hclog.Logger, error) {
	name := strings.TrimSpace(os.Getenv("AGENTKERNEL_LOG_LEVEL"))
	level := hclog.Warn
	if name != "" {
		level = hclog.LevelFromString(name)
		if level == hclog.NoLevel {
			return nil, fmt.Errorf("AGENTKERNEL_LOG_LEVEL=%q: want trace, debug, info, warn, error or off", name)
		}
	}
	return hclog.New(&hclog.LoggerOptions{Name: "agentkernel", Level: level, Output: w}), nil
}

// newFlagSet returns a FlagSet whose --help prints usage to stdout-like w.
func newFlagSet(name, synopsis string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "Usage: agentkernel %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}
