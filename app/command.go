package app

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// Env is what a command is run with: its standard streams and
// agentkernel's version.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Version        string
}

// Command is one subcommand of agentkernel. A surface's package exports
// its Command, and cmd/agentkernel lists it: that line is all a new
// surface adds to the binary.
type Command struct {
	// Name is the word after agentkernel.
	Name string
	// Synopsis is its form in the usage text ("ask [PROMPT | -]").
	Synopsis string
	// Summary is what it does, in one line.
	Summary string
	// Run runs it with the arguments after Name.
	Run func(args []string, env Env) error
	// Hidden keeps it out of the usage text (a helper process).
	Hidden bool
}

// Find returns the command called name.
func Find(cmds []Command, name string) (Command, bool) {
	for _, c := range cmds {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// WriteUsage writes the usage lines of cmds that are not hidden, aligned.
func WriteUsage(w io.Writer, cmds []Command) {
	width := 0
	for _, c := range cmds {
		if !c.Hidden {
			width = max(width, len(c.Synopsis))
		}
	}
	for _, c := range cmds {
		if !c.Hidden {
			fmt.Fprintf(w, "  agentkernel %-*s  %s\n", width, c.Synopsis, c.Summary)
		}
	}
}

// EnvLogLevel is the variable NewLogger reads.
const EnvLogLevel = "AGENTKERNEL_LOG_LEVEL"

// NewLogger logs to w at the level of $AGENTKERNEL_LOG_LEVEL (default
// warn).
func NewLogger(w io.Writer) (hclog.Logger, error) {
	name := strings.TrimSpace(os.Getenv(EnvLogLevel))
	level := hclog.Warn
	if name != "" {
		level = hclog.LevelFromString(name)
		if level == hclog.NoLevel {
			return nil, fmt.Errorf("%s=%q: want trace, debug, info, warn, error or off", EnvLogLevel, name)
		}
	}
	return hclog.New(&hclog.LoggerOptions{Name: "agentkernel", Level: level, Output: w}), nil
}

// NewFlagSet returns a command's FlagSet: errors and --help go to w, the
// usage is "agentkernel SYNOPSIS" and the flags.
func NewFlagSet(name, synopsis string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "Usage: agentkernel %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}
