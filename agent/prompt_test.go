package agent

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent/provider"
)

var updatePrompts = flag.Bool("update", false, "rewrite testdata/prompts from the prompts written now")

// promptEnv is the environment of the snapshots: every fact known.
func promptEnv(cells CellMode) Environment {
	return Environment{Date: time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC), OS: "Linux", Workspace: "/home/ada/project",
		Language: "python", LanguageVersion: "3.11.2", Notebook: "analysis.ipynb", Cells: cells}
}

// promptCase is one configuration whose system prompt is pinned.
type promptCase struct {
	name  string
	mode  PermissionMode
	env   Environment
	opts  func(*ToolboxOptions)
	allow func(name string, class ToolClass) bool // an agent mode's filter; nil: every tool
}

func promptCases() []promptCase {
	withNotebook := func(o *ToolboxOptions) {
		nb := &memNotebook{}
		o.Notebook = func() Notebook { return nb }
		o.Variables = noVariables{}
	}
	withEverything := func(o *ToolboxOptions) {
		withNotebook(o)
		o.WebFetch = &WebFetch{Allow: []string{"docs.python.org"}}
		o.Source = mcpSource{}
	}
	readsOnly := func(_ string, class ToolClass) bool { return class == ClassRead || class == ClassInteract }
	var out []promptCase
	for _, mode := range Modes {
		out = append(out,
			promptCase{name: "prompt-" + string(mode), mode: mode, env: promptEnv(PromptCells), opts: withNotebook},
			promptCase{name: "code-" + string(mode), mode: mode, env: promptEnv(CodeCells), opts: withNotebook})
	}
	return append(out,
		promptCase{name: "prompt-no-frontend", mode: PermissionDefault, env: promptEnv(PromptCells)},
		promptCase{name: "code-mcp-webfetch", mode: PermissionDefault, env: promptEnv(CodeCells), opts: withEverything},
		promptCase{name: "code-reads-only", mode: PermissionDefault, env: promptEnv(CodeCells), opts: withNotebook, allow: readsOnly},
		promptCase{name: "ask-headless", mode: PermissionDefault, env: Environment{Date: promptEnv("").Date, OS: "Linux",
			Workspace: "/srv/job", Language: "python", LanguageVersion: "3.12.1"}},
		promptCase{name: "acp-client-kernel", mode: PermissionDefault, env: Environment{Date: promptEnv("").Date, OS: "macOS",
			Workspace: "/Users/ada/project"}, opts: func(o *ToolboxOptions) {
			o.Source, o.KernelServers = kernelSource{server: "agentkernel"}, []string{"agentkernel"}
		}},
		promptCase{name: "nothing-known", mode: PermissionDefault},
	)
}

// offer is what a request of case c offers: the toolbox's tools, less
// what the agent mode and plan mode leave out (as Task.offered does).
func (c promptCase) offer(t *testing.T) (*Toolbox, []provider.Tool) {
	t.Helper()
	ws, err := NewWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env := c.env
	o := ToolboxOptions{Workspace: ws, Environment: func() Environment { return env }, PromptCells: env.Cells == PromptCells}
	if c.opts != nil {
		c.opts(&o)
	}
	tb, err := NewToolbox(o)
	if err != nil {
		t.Fatal(err)
	}
	var tools []provider.Tool
	for _, pt := range tb.Tools(context.Background()) {
		tool, _ := tb.Lookup(pt.Name)
		if c.allow != nil && !c.allow(tool.Name(), tool.Class()) || c.mode == PermissionPlan && !tool.ReadOnly() {
			continue
		}
		tools = append(tools, pt)
	}
	return tb, tools
}

// TestPromptSnapshots pins the system prompt of each permission mode and
// cell mode, with and without the notebook's tools, MCP tools and
// web_fetch, an agent mode that reads only, the headless and ACP cases:
// a change to what the model is told is a reviewed diff of
// testdata/prompts (go test ./agent -run TestPromptSnapshots -update).
func TestPromptSnapshots(t *testing.T) {
	for _, c := range promptCases() {
		t.Run(c.name, func(t *testing.T) {
			tb, tools := c.offer(t)
			got := BasePrompt(tb, tools, c.mode) + "\n"
			file := filepath.Join("testdata", "prompts", c.name+".txt")
			if *updatePrompts {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (write it with -update)", err)
			}
			if got != string(want) {
				t.Errorf("the system prompt changed (go test ./agent -run TestPromptSnapshots -update, and review the diff):\n--- got\n%s--- want\n%s", got, want)
			}
		})
	}
}

// TestPromptBudget: the system prompt and the schemas of the tools a
// request offers stay within promptBudget tokens in every pinned case,
// the widest (every tool, every fact) included.
func TestPromptBudget(t *testing.T) {
	widest := 0
	for _, c := range promptCases() {
		tb, tools := c.offer(t)
		n := EstimateTokens(BasePrompt(tb, tools, c.mode), tools, nil)
		if n > promptBudget {
			t.Errorf("%s: the system prompt and tools come to about %d tokens, over the budget of %d", c.name, n, promptBudget)
		}
		widest = max(widest, n)
	}
	t.Logf("the widest request's system prompt and tools: about %d tokens (budget %d)", widest, promptBudget)
}

// TestPromptTellsWhatItOffers: a plan-mode or reads-only prompt never
// invites a call it will refuse, the prompt-mode notebook's says how code
// cells are written, and execute_code's description names the kernel's
// language and the output cap that is applied.
func TestPromptTellsWhatItOffers(t *testing.T) {
	for _, c := range promptCases() {
		tb, tools := c.offer(t)
		p := BasePrompt(tb, tools, c.mode)
		offered := map[string]bool{}
		for _, pt := range tools {
			offered[pt.Name] = true
		}
		for _, name := range []string{ToolExecuteCode, ToolNotebookInsert, ToolNotebookRun, ToolNotebookEdit, ToolWriteFile, ToolEditFile, ToolAttemptCompletion} {
			if !offered[name] && regexp.MustCompile(`(^|[^_a-z])`+name+`($|[^_a-z])`).MatchString(p) {
				t.Errorf("%s: the prompt names %s, which is not offered:\n%s", c.name, name, p)
			}
		}
		if c.env.Cells == PromptCells && !strings.Contains(p, "must start with a %%code line") {
			t.Errorf("%s: a prompt-mode notebook's prompt does not say how code cells are written", c.name)
		}
		for _, pt := range tools {
			if pt.Name != ToolExecuteCode {
				continue
			}
			if c.env.Language == "python" && !strings.HasPrefix(pt.Description, "Run Python code") {
				t.Errorf("%s: execute_code does not name the language: %s", c.name, pt.Description)
			}
			if !strings.Contains(pt.Description, "past 20000 characters") {
				t.Errorf("%s: execute_code does not state its cap: %s", c.name, pt.Description)
			}
		}
	}
}

// mcpSource offers one MCP server tool.
type mcpSource struct{}

func (mcpSource) tool() SourceTool {
	return SourceTool{Spec: provider.Tool{Name: ExternalPrefix + "github__get_issue", Description: "Get an issue.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"number":{"type":"integer"}}}`)}, Server: "github", Tool: "get_issue"}
}
func (s mcpSource) Tools(context.Context) []SourceTool { return []SourceTool{s.tool()} }
func (s mcpSource) Lookup(_ context.Context, name string) (SourceTool, bool) {
	return s.tool(), name == s.tool().Spec.Name
}
func (mcpSource) Call(context.Context, string, json.RawMessage, func(string)) (Result, error) {
	return Result{Text: "issue"}, nil
}

// noVariables is a kernel with no variables.
type noVariables struct{}

func (noVariables) List(context.Context) (string, error) { return "No variables.", nil }
func (noVariables) Inspect(_ context.Context, name string) (string, error) {
	return "", errors.New(name + ": no such variable")
}
