package acpagent

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// This file: the agents a model string names, and their command lines.

// Aliases are the agents `%agent use NAME` knows, as command lines; any
// other name is taken as the command line itself.
var Aliases = map[string][]string{
	"claude": {"claude-agent-acp"},
	"codex":  {"codex-acp"},
	"gemini": {"gemini", "--experimental-acp"},
}

// installHints say how the aliases' agents are installed.
var installHints = map[string]string{
	"claude-agent-acp": "npm install -g @zed-industries/claude-agent-acp",
	"codex-acp":        "npm install -g @zed-industries/codex-acp",
	"gemini":           "npm install -g @google/gemini-cli",
}

// Model returns the model string of the agent spec: "acp:" and the agent,
// whether spec is spelt "claude", "acp:claude", "node agent.js" or
// "acp:node agent.js". Every place that turns a user's --agent or %agent use
// into a model calls it.
func Model(spec string) string {
	return Name + ":" + agentOf(spec)
}

// agentOf is the agent a spec names, without the "acp:" prefixes a model
// string (or an older install that wrote "acp:acp:…") carries.
func agentOf(spec string) string {
	spec = strings.TrimSpace(spec)
	for strings.HasPrefix(spec, Name+":") {
		spec = strings.TrimSpace(strings.TrimPrefix(spec, Name+":"))
	}
	return spec
}

// Command returns the command line of an agent named in a model string
// ("claude", "codex", "gemini", or a command line; with or without
// "acp:").
func Command(spec string) []string {
	spec = agentOf(spec)
	if c, ok := Aliases[spec]; ok {
		return slices.Clone(c)
	}
	return strings.Fields(spec)
}

// Find returns the program of the agent spec names (as Command reads
// it) as found on PATH, or an error that says how to install it.
func Find(spec string) (string, error) {
	return findProgram(Command(spec))
}

func findProgram(cmd []string) (string, error) {
	if len(cmd) == 0 {
		return "", errors.New("no agent command")
	}
	path, err := exec.LookPath(cmd[0])
	if err != nil {
		hint := ""
		if h, ok := installHints[cmd[0]]; ok {
			hint = " (install it with: " + h + ")"
		}
		return "", fmt.Errorf("the agent %q is not installed (or not on PATH)%s: %w", cmd[0], hint, err)
	}
	return path, nil
}

// interpreters run an agent's script: the script names the agent.
var interpreters = map[string]bool{"node": true, "nodejs": true, "npx": true, "bun": true, "deno": true, "python": true,
	"python3": true, "uvx": true, "uv": true, "env": true, "sh": true, "bash": true}

// Label names the agent of a command line for people: its program, or
// the script an interpreter runs (a package's dist/index.js is named by
// its package directory).
func Label(cmd []string) string {
	i := 0
	for i < len(cmd)-1 && (interpreters[filepath.Base(cmd[i])] || strings.HasPrefix(cmd[i], "-")) {
		i++
	}
	p := cmd[i]
	for _, suffix := range []string{"/dist/index.js", "/dist/cli.js", "/index.js", "/cli.js", "/bin/cli.js"} {
		if strings.HasSuffix(p, suffix) {
			return filepath.Base(strings.TrimSuffix(p, suffix))
		}
	}
	return filepath.Base(p)
}
