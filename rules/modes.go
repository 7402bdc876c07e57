package rules

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Mode is an agent mode: instructions, the tools it may use, and the
// permission mode it switches to. The built-in ones are code, ask,
// architect and debug; the user adds more in the config file's "modes"
// and in .agentkernel/modes/NAME.md of the workspace (front matter:
// description, tools, permissionMode; the text is the instructions).
type Mode struct {
	Name        string `json:"-"`
	Description string `json:"description"`
	// Instructions are added to the system prompt while the mode is on.
	Instructions string `json:"instructions"`
	// Tools are the tools the mode may use: names (execute_code,
	// mcp__github__get_issue) or groups — read, edit, execute, interact, notebook,
	// mcp, fetch. Empty: every tool.
	Tools []string `json:"tools"`
	// PermissionMode, when set, is the permission mode switching to the
	// mode sets (default, acceptEdits, bypassPermissions, plan).
	PermissionMode string `json:"permissionMode"`
	// Source is "built-in", "config" or the file the mode came from.
	Source string `json:"-"`
}

// ModeDefault is the mode a session starts in.
const ModeDefault = "code"

// Builtin are the built-in modes.
var Builtin = []Mode{
	{Name: "code", Description: "writes and runs code, reads and changes files (the default)", Source: "built-in"},
	{Name: "ask", Description: "answers questions: reads the workspace; runs no code and changes nothing",
		Tools: []string{"read", "interact"}, Source: "built-in",
		Instructions: "You are in ask mode: explain and answer from what you read. Do not run code or change files; if that is needed, say so and suggest switching to code mode."},
	{Name: "architect", Description: "plans: studies the workspace and writes a step-by-step plan; runs no code",
		Tools: []string{"read", "interact"}, Source: "built-in",
		Instructions: "You are in architect mode: study the workspace and the question, then write a clear, numbered plan (what to change, in which files or cells, and how to check it) for the user to approve. Do not run code or change files."},
	{Name: "debug", Description: "finds the cause of a problem before it fixes it", Source: "built-in",
		Instructions: "You are in debug mode: reproduce the problem first, state hypotheses, add checks to tell them apart, find the cause, then make the smallest fix and show that it works."},
}

// LoadModes returns the built-in modes, then the config file's (config,
// by name), then the workspace's .agentkernel/modes/*.md; a later mode
// of the same name replaces an earlier one. A file that cannot be used is
// a problem; the others load.
func LoadModes(workspace string, config map[string]Mode) ([]Mode, []error) {
	out := slices.Clone(Builtin)
	var problems []error
	put := func(m Mode) {
		if i := slices.IndexFunc(out, func(o Mode) bool { return o.Name == m.Name }); i >= 0 {
			out[i] = m
			return
		}
		out = append(out, m)
	}
	names := make([]string, 0, len(config))
	for n := range config {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		m := config[n]
		m.Name, m.Source = n, "config"
		if err := m.check(); err != nil {
			problems = append(problems, fmt.Errorf("config file: modes: %s: %w", n, err))
			continue
		}
		put(m)
	}
	files, _ := filepath.Glob(filepath.Join(workspace, ".agentkernel", "modes", "*.md"))
	slices.Sort(files)
	for _, f := range files {
		m, err := readMode(f)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		put(m)
	}
	return out, problems
}

// readMode reads a mode file: NAME.md with front matter.
func readMode(p string) (Mode, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return Mode{}, err
	}
	m := Mode{Name: strings.TrimSuffix(filepath.Base(p), ".md"), Source: p}
	front, body, _ := frontMatter(string(b))
	m.Instructions = strings.TrimSpace(body)
	err = eachKey(p, front, func(k, v string) error {
		switch k {
		case "description":
			m.Description = strings.Trim(strings.TrimSpace(v), `"'`)
		case "tools":
			m.Tools = list(v)
		case "permissionMode", "permission_mode", "permission-mode":
			m.PermissionMode = strings.TrimSpace(v)
		default:
			return fmt.Errorf("front matter: unknown key %q (want description, tools or permissionMode)", k)
		}
		return nil
	})
	if err != nil {
		return Mode{}, err
	}
	if err := m.check(); err != nil {
		return Mode{}, fmt.Errorf("%s: %w", p, err)
	}
	return m, nil
}

// groups are the tool groups a mode's tools may name.
var groups = []string{"read", "edit", "execute", "interact", "mcp", "fetch", "notebook"}

func (m Mode) check() error {
	if m.Name == "" || strings.ContainsAny(m.Name, " \t/") {
		return fmt.Errorf("mode name %q: one word", m.Name)
	}
	for _, t := range m.Tools {
		if !slices.Contains(groups, t) && !strings.Contains(t, "_") {
			return fmt.Errorf("tools: %q is neither a tool name nor a group (%s)", t, strings.Join(groups, ", "))
		}
	}
	return nil
}

// Allows reports whether the mode may use the tool name of the group
// class (read, edit, execute, interact, mcp).
func (m Mode) Allows(name, class string) bool {
	if len(m.Tools) == 0 {
		return true
	}
	return slices.Contains(m.Tools, name) || slices.Contains(m.Tools, class)
}

// FindMode returns the mode called name among ms.
func FindMode(ms []Mode, name string) (Mode, bool) {
	i := slices.IndexFunc(ms, func(m Mode) bool { return strings.EqualFold(m.Name, name) })
	if i < 0 {
		return Mode{}, false
	}
	return ms[i], true
}
