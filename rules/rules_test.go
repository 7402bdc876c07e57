package rules

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoad: the user's files, then the repository's from its root in to
// the workspace, then the scoped rule files; a directory above the
// repository is not read; a broken front matter is a problem of its file
// alone.
func TestLoad(t *testing.T) {
	root := t.TempDir()
	above, repo := root, filepath.Join(root, "repo")
	ws := filepath.Join(repo, "project", "nb")
	user := filepath.Join(root, "config")
	write(t, filepath.Join(above, "AGENTS.md"), "not ours: above the repository")
	write(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main")
	write(t, filepath.Join(repo, "AGENTS.md"), "repo rule")
	write(t, filepath.Join(repo, "project", "CLAUDE.md"), "project rule")
	write(t, filepath.Join(ws, "AGENTS.md"), "workspace rule")
	write(t, filepath.Join(user, "AGENTS.md"), "user rule")
	write(t, filepath.Join(ws, ".agentkernel", "rules", "r.md"), "---\nkernels: ir, julia\nmodes: [plan]\npaths: analysis/*.ipynb\n---\nscoped rule\n")
	write(t, filepath.Join(ws, ".agentkernel", "rules", "broken.md"), "---\ncolour: red\n---\nbroken rule\n")
	write(t, filepath.Join(user, "rules", "py.md"), "---\nkernels: python\n---\nuse polars\n")

	rs, problems := Load(ws, user)
	var texts []string
	for _, r := range rs {
		texts = append(texts, strings.TrimSpace(r.Text))
	}
	want := "user rule|repo rule|project rule|workspace rule|use polars|scoped rule"
	if got := strings.Join(texts, "|"); got != want {
		t.Errorf("loaded %q, want %q", got, want)
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "broken.md") || !strings.Contains(problems[0].Error(), "colour") {
		t.Errorf("problems %v, want the broken front matter's", problems)
	}
	scoped := rs[len(rs)-1]
	if strings.Join(scoped.Kernels, ",") != "ir,julia" || strings.Join(scoped.Modes, ",") != "plan" || scoped.Paths[0] != "analysis/*.ipynb" {
		t.Errorf("scoped rule %+v", scoped)
	}

	// Outside a repository, the workspace alone.
	lone := filepath.Join(t.TempDir(), "ws")
	write(t, filepath.Join(lone, "AGENTS.md"), "lone")
	if rs, _ := Load(lone, ""); len(rs) != 1 || rs[0].Text != "lone" {
		t.Errorf("outside a repository: %+v", rs)
	}
}

func TestApplies(t *testing.T) {
	r := Rule{Kernels: []string{"ir"}, Modes: []string{"plan"}, Paths: []string{"analysis/*.ipynb"}}
	for _, tc := range []struct {
		c    Context
		want bool
	}{
		{Context{Language: "R", Mode: "plan", Notebook: "analysis/a.ipynb"}, false},
		{Context{Language: "r", Kernel: "ir", Mode: "plan", Notebook: "analysis/a.ipynb"}, true},
		{Context{Kernel: "ir", Mode: "default", Notebook: "analysis/a.ipynb"}, false},
		{Context{Kernel: "ir", Mode: "plan", Notebook: "other/a.ipynb"}, false},
	} {
		if got := r.Applies(tc.c); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.c, got, tc.want)
		}
	}
	py := Rule{Kernels: []string{"python", "julia"}}
	for spec, want := range map[string]bool{"python3": true, "julia-1.10": true, "pythonista": false, "ir": false} {
		if got := py.Applies(Context{Kernel: spec}); got != want {
			t.Errorf("kernels python, julia on the kernelspec %s before it started: %v, want %v", spec, got, want)
		}
	}
	if !(Rule{}).Applies(Context{}) {
		t.Error("a rule without scope must always apply")
	}
	p := Prompt("BASE", []Rule{{Path: "/w/AGENTS.md", Text: "Be brief.\n"}})
	if !strings.HasPrefix(p, "BASE\n\n") || !strings.Contains(p, "# Instructions from /w/AGENTS.md\n\nBe brief.") {
		t.Errorf("prompt %q", p)
	}
	if Prompt("BASE", nil) != "BASE" {
		t.Error("no rules must leave the prompt alone")
	}
}

// TestLoadModes: the built-in modes, the config file's, and a workspace
// file's (front matter and instructions); a broken one is a problem.
func TestLoadModes(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, ".agentkernel", "modes", "reviewer.md"),
		"---\ndescription: \"reviews\"\ntools: read, attempt_completion\npermissionMode: plan\n---\nList the problems.\n")
	write(t, filepath.Join(ws, ".agentkernel", "modes", "bad.md"), "---\ncolour: red\n---\nx\n")
	ms, problems := LoadModes(ws, map[string]AgentMode{"ask": {Description: "my ask", Tools: []string{"read"}}, "bad name": {}})
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	if got := strings.Join(names, ","); got != "code,ask,architect,debug,reviewer" {
		t.Errorf("modes %s", got)
	}
	if ask, _ := FindMode(ms, "ask"); ask.Description != "my ask" || ask.Source != "config" {
		t.Errorf("the config's ask replaces the built-in: %+v", ask)
	}
	r, _ := FindMode(ms, "reviewer")
	if r.Description != "reviews" || r.PermissionMode != "plan" || r.Instructions != "List the problems." ||
		!r.Allows("read_file", "read") || r.Allows("execute_code", "execute") || !r.Allows("attempt_completion", "interact") {
		t.Errorf("reviewer %+v", r)
	}
	if len(problems) != 2 || !strings.Contains(fmt.Sprint(problems), "colour") || !strings.Contains(fmt.Sprint(problems), "bad name") {
		t.Errorf("problems %v", problems)
	}
}
