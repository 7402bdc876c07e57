package bridge

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/rules"
)

func TestFormatRules(t *testing.T) {
	agents := rules.Rule{Path: "/w/AGENTS.md", Scope: "project", Text: "x"}
	r := rules.Rule{Path: "/w/.agentkernel/rules/r.md", Scope: "project", Kernels: []string{"ir"}, Text: "y"}
	out := formatRules([]rules.Rule{agents}, []rules.Rule{agents, r}, rules.Context{Language: "python", Mode: "plan"},
		[]error{errors.New("/w/.agentkernel/rules/bad.md: front matter: unknown key")})
	for _, want := range []string{"kernel python, mode plan", "  /w/AGENTS.md (project)\n", "Not applying here:\n  /w/.agentkernel/rules/r.md (project; kernels: ir)",
		"Problem: /w/.agentkernel/rules/bad.md"} {
		if !strings.Contains(out, want) {
			t.Errorf("%%agent rules lacks %q:\n%s", want, out)
		}
	}
	if out := formatRules(nil, nil, rules.Context{}, nil); !strings.Contains(out, "Write instructions in AGENTS.md") {
		t.Errorf("with no rules: %s", out)
	}
}
