package bridge

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/messages"
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

func TestHistoryMagic(t *testing.T) {
	ui := []messages.UIMessage{
		{TS: 10, Type: messages.TypeSay, Say: messages.SayText, Text: "first question"},
		{TS: 11, Type: messages.TypeSay, Say: messages.SayAPIReqStarted, Text: "{}"},
		{TS: 12, Type: messages.TypeSay, Say: messages.SayText, Text: "an answer"},
		{TS: 13, Type: messages.TypeSay, Say: messages.SayUserFeedback, Text: "second question"},
		{TS: 14, Type: messages.TypeSay, Say: messages.SayCommandOutput, Text: "42"},
		{TS: 15, Type: messages.TypeSay, Say: messages.SayText, Text: "last answer"},
		{TS: 16, Type: messages.TypeSay, Say: messages.SayAPIReqFinished,
			Text: `{"model":"gpt-x","tokensIn":120,"tokensOut":30,"cost":0.0012,"latencyMs":520,"durationMs":3100}`},
	}
	out, err := historyMagic(ui, []string{"--role", "user"})
	if err != nil || !strings.Contains(out, "#0 ") || !strings.Contains(out, "#3 ") || strings.Contains(out, "answer") {
		t.Errorf("--role user: %v\n%s", err, out)
	}
	out, err = historyMagic(ui, []string{"--last", "2"})
	if err != nil || !strings.Contains(out, "#5 ") || !strings.Contains(out, "#6 ") || strings.Contains(out, "#4 ") {
		t.Errorf("--last 2: %v\n%s", err, out)
	}
	out, _ = historyMagic(ui, []string{"--role", "assistant", "--last", "1"})
	if !strings.Contains(out, "#5 ") || strings.Contains(out, "#2 ") {
		t.Errorf("--role assistant --last 1:\n%s", out)
	}
	if _, err := historyMagic(ui, []string{"--role", "robot"}); err == nil {
		t.Error("a bad role was taken")
	}
	out, _ = historyMagic(ui, nil)
	if strings.Count(out, "\n") != len(ui) || !strings.Contains(out, "gpt-x: 120 in, 30 out, $0.0012, first token 0.52 s, 3.1 s") {
		t.Errorf("the whole history, with the request's metadata:\n%s", out)
	}
}
