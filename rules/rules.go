// Package rules is what the user tells the agent beside the prompt: the
// instruction files peers read — AGENTS.md (Codex, notebook-intelligence
// and others) and CLAUDE.md (Claude Code) — in the workspace, its parent
// directories up to the repository's root, and the user's configuration
// directory; and rule files with a scope, in .agentkernel/rules/*.md of the
// workspace and rules/*.md of the configuration directory:
//
//	---
//	kernels: python, ir        the backing kernel's language or kernelspec name
//	modes: default, ask        the permission mode or the agent mode
//	paths: analysis/*.ipynb    the notebook's path in the workspace (Jupyter's JPY_SESSION_NAME)
//	---
//	Use polars, not pandas.
//
// Each key takes a comma-separated list; a rule applies when every key it
// has matches (one of its values), and a rule without keys always. Load
// reads the files; Applying picks those of a turn's context, and Prompt
// adds them to the system prompt. The package imports nothing of ours.
package rules

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// The instruction files, in the order they are read in each directory.
var instructionFiles = []string{"AGENTS.md", "CLAUDE.md"}

// MaxBytes caps one file's text: a larger one is cut, and says so.
const MaxBytes = 64 << 10

// Rule is one file's instructions.
type Rule struct {
	// Path is the file; Scope is "project" (the workspace and its
	// parents) or "user" (the configuration directory).
	Path, Scope string
	// Kernels, Modes and Paths restrict where the rule applies (nil: no
	// restriction).
	Kernels, Modes, Paths []string
	// Text is the instructions, without the front matter.
	Text string
}

// Context is what a turn's rules are picked by.
type Context struct {
	// Language is the backing kernel's language (language_info.name),
	// Kernel its kernelspec name.
	Language, Kernel string
	// Mode is the permission mode, AgentMode the agent mode (code, ask,
	// …): a rule's modes match either.
	Mode, AgentMode string
	// Notebook is the notebook's path relative to the workspace ("" when
	// it is not known).
	Notebook string
}

// Load reads the rules of workspace and of the configuration directory
// userDir ("" for none): the user's first, then the project's from the
// outermost directory in, then the scoped rule files. A file that cannot
// be read or whose front matter is broken is a problem; the others load.
// A file is read once, under the first scope that reaches it (a workspace
// that is the configuration directory, or a symbolic link to it).
func Load(workspace, userDir string) ([]Rule, []error) {
	var out []Rule
	var problems []error
	seen := map[string]bool{}
	add := func(p, scope string, scoped bool) {
		key, err := filepath.Abs(p)
		if err == nil {
			if real, err := filepath.EvalSymlinks(key); err == nil {
				key = real
			}
		}
		if seen[key] {
			return
		}
		seen[key] = true
		r, err := read(p, scope, scoped)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			problems = append(problems, err)
		case strings.TrimSpace(r.Text) != "":
			out = append(out, r)
		}
	}
	if userDir != "" {
		for _, name := range instructionFiles {
			add(filepath.Join(userDir, name), "user", false)
		}
	}
	for _, dir := range projectDirs(workspace) {
		for _, name := range instructionFiles {
			add(filepath.Join(dir, name), "project", false)
		}
	}
	for _, d := range []struct{ dir, scope string }{{filepath.Join(userDir, "rules"), "user"}, {filepath.Join(workspace, ".agentkernel", "rules"), "project"}} {
		if d.dir == "rules" { // no userDir
			continue
		}
		files, _ := filepath.Glob(filepath.Join(d.dir, "*.md"))
		slices.Sort(files)
		for _, f := range files {
			add(f, d.scope, true)
		}
	}
	return out, problems
}

// projectDirs are the workspace and its parents up to the repository's
// root (the nearest directory holding .git), outermost first; the
// workspace alone outside a repository.
func projectDirs(workspace string) []string {
	dirs := []string{workspace}
	for d := workspace; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			slices.Reverse(dirs)
			return dirs
		}
		parent := filepath.Dir(d)
		if parent == d {
			return []string{workspace}
		}
		d = parent
		dirs = append(dirs, d)
	}
}

// read reads one file; a scoped one may have front matter.
func read(p, scope string, scoped bool) (Rule, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return Rule{}, err
	}
	text := string(b)
	if len(text) > MaxBytes {
		text = text[:MaxBytes] + "\n[cut: the file is over 64 KiB]"
	}
	r := Rule{Path: p, Scope: scope, Text: text}
	if !scoped {
		return r, nil
	}
	front, body, ok := frontMatter(text)
	if !ok {
		return r, nil
	}
	r.Text = body
	err = eachKey(p, front, func(k, v string) error {
		vals := list(v)
		switch k {
		case "kernels", "kernel", "languages", "language":
			r.Kernels = append(r.Kernels, vals...)
		case "modes", "mode":
			r.Modes = append(r.Modes, vals...)
		case "paths", "globs", "files":
			for _, g := range vals {
				if _, err := path.Match(g, ""); err != nil {
					return fmt.Errorf("paths: %q: %w", g, err)
				}
			}
			r.Paths = append(r.Paths, vals...)
		case "description", "name":
		default:
			return fmt.Errorf("front matter: unknown key %q (want kernels, modes or paths)", k)
		}
		return nil
	})
	if err != nil {
		return Rule{}, err
	}
	return r, nil
}

// eachKey calls set with each "key: value" line of the front matter of
// the file p (blank lines and # comments skipped); an error names p.
func eachKey(p, front string, set func(key, value string) error) error {
	for i, line := range strings.Split(front, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return fmt.Errorf("%s: front matter line %d: want key: value", p, i+2)
		}
		if err := set(strings.TrimSpace(k), v); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// frontMatter splits text into its front matter (between --- lines at its
// start) and the rest.
func frontMatter(text string) (front, body string, ok bool) {
	t := strings.TrimLeft(text, "\ufeff")
	if !strings.HasPrefix(t, "---\n") && !strings.HasPrefix(t, "---\r\n") {
		return "", text, false
	}
	_, rest, _ := strings.Cut(t, "\n")
	i := strings.Index(rest, "\n---")
	if i < 0 {
		return "", text, false
	}
	front = strings.ReplaceAll(rest[:i], "\r", "")
	body = rest[i+len("\n---"):]
	if _, after, ok := strings.Cut(body, "\n"); ok {
		body = after
	} else {
		body = ""
	}
	return front, strings.TrimLeft(body, "\n"), true
}

// list parses "a, b", "[a, b]" or "a".
func list(v string) []string {
	v = strings.Trim(strings.TrimSpace(v), "[]")
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.Trim(strings.TrimSpace(s), `"'`); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Applies reports whether r applies in c.
func (r Rule) Applies(c Context) bool {
	if len(r.Kernels) > 0 && !slices.ContainsFunc(r.Kernels, func(k string) bool {
		return strings.EqualFold(k, c.Language) || kernelNamed(c.Kernel, k)
	}) {
		return false
	}
	if len(r.Modes) > 0 && !slices.ContainsFunc(r.Modes, func(m string) bool {
		return strings.EqualFold(m, c.Mode) || (c.AgentMode != "" && strings.EqualFold(m, c.AgentMode))
	}) {
		return false
	}
	if len(r.Paths) > 0 && !slices.ContainsFunc(r.Paths, func(g string) bool {
		ok, _ := path.Match(g, filepath.ToSlash(c.Notebook))
		return ok
	}) {
		return false
	}
	return true
}

// kernelNamed reports whether the kernelspec name is name, or name with a
// version after it ("python3", "julia-1.10" for python and julia): before
// the kernel has started its language is not known.
func kernelNamed(spec, name string) bool {
	spec, name = strings.ToLower(spec), strings.ToLower(name)
	if name == "" || !strings.HasPrefix(spec, name) {
		return false
	}
	rest := spec[len(name):]
	return rest == "" || strings.IndexAny(rest[:1], "0123456789-_.") == 0
}

// Applying returns the rules of rs that apply in c, in order.
func Applying(rs []Rule, c Context) []Rule {
	var out []Rule
	for _, r := range rs {
		if r.Applies(c) {
			out = append(out, r)
		}
	}
	return out
}

// Prompt is the system prompt base with the rules' instructions after it,
// each under the file it came from.
func Prompt(base string, rs []Rule) string {
	if len(rs) == 0 {
		return base
	}
	var b strings.Builder
	b.WriteString(base)
	b.WriteString("\n\nThe user's instructions follow; they take precedence over the guidance above.")
	for _, r := range rs {
		fmt.Fprintf(&b, "\n\n# Instructions from %s\n\n%s", r.Path, strings.TrimSpace(r.Text))
	}
	return b.String()
}
