package agent

import (
	"strings"
	"testing"
)

func TestExternalRules(t *testing.T) {
	tb := testToolbox(t, ToolboxOptions{})
	tests := []struct {
		rule    string
		matches []string
		misses  []string
		err     string
	}{
		{rule: "mcp__github", matches: []string{"mcp__github__create_issue", "mcp__github__x"}, misses: []string{"mcp__githubx__y", "mcp__gitlab__x"}},
		{rule: "mcp__github__*", matches: []string{"mcp__github__create_issue"}, misses: []string{"mcp__other__create_issue"}},
		{rule: "mcp__github__get_*", matches: []string{"mcp__github__get_issue"}, misses: []string{"mcp__github__create_issue"}},
		{rule: "mcp__*__read", matches: []string{"mcp__a__read", "mcp__b-c__read"}, misses: []string{"mcp__a__write"}},
		{rule: "mcp__everything__get-env", matches: []string{"mcp__everything__get-env"}, misses: []string{"mcp__everything__get-envx"}},
		{rule: "mcp__", err: "want mcp__SERVER"},
		{rule: "mcp__a__b__c", err: "want mcp__SERVER"},
		{rule: "mcp__github(x)", err: "MCP tools take no pattern"},
		{rule: "mcp__git hub", err: "bad tool name"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			r, err := tb.compileRule(tt.rule, true)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tt.matches {
				if !r.name.MatchString(n) {
					t.Errorf("%s does not match %s", tt.rule, n)
				}
			}
			for _, n := range tt.misses {
				if r.name.MatchString(n) {
					t.Errorf("%s matches %s", tt.rule, n)
				}
			}
		})
	}
}
