package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/rules"
)

// The user's rules (package rules): AGENTS.md and CLAUDE.md of the
// workspace, its parents up to the repository's root and the user's
// configuration directory, and the scoped rule files. They are read at the
// start of each turn, so an edit applies from the next prompt on, and are
// fixed for the turn.

// turnRules is session c's agent.Config.Rules.
func (h *Host) turnRules(c *current) func(ctx context.Context) (string, []string) {
	return func(ctx context.Context) (string, []string) {
		applying, _, problems := h.rulesOf(ctx, c)
		for _, err := range problems {
			h.log.Warn("rules", "error", err)
		}
		var files []string
		for _, r := range applying {
			files = append(files, r.Path)
		}
		return rules.Prompt(agent.DefaultSystemPrompt, applying), files
	}
}

// Rules returns the rules that apply to the current session now, every
// rule file found, and the files that could not be used (%agent rules).
func (h *Host) Rules(ctx context.Context) (applying, all []rules.Rule, ctxt rules.Context, problems []error) {
	c, err := h.session(ctx)
	if err != nil {
		return nil, nil, rules.Context{}, []error{err}
	}
	applying, all, problems = h.rulesOf(ctx, c)
	return applying, all, h.ruleContext(c), problems
}

func (h *Host) rulesOf(_ context.Context, c *current) (applying, all []rules.Rule, problems []error) {
	all, problems = rules.Load(h.cfg.Workspace, h.cfg.MCP.UserDir)
	return rules.Applying(all, h.ruleContext(c)), all, problems
}

// ruleContext is what session c's rules are picked by: the backing
// kernel's language (as far as it is known without waiting for a start)
// and kernelspec, the permission mode, and the notebook Jupyter named.
func (h *Host) ruleContext(c *current) rules.Context {
	rc := rules.Context{Kernel: h.cfg.Kernel, Notebook: os.Getenv("JPY_SESSION_NAME")}
	if c.policy != nil {
		rc.Mode = string(c.policy.Mode())
	}
	if rc.Notebook != "" && filepath.IsAbs(rc.Notebook) {
		if rel, err := filepath.Rel(h.cfg.Workspace, rc.Notebook); err == nil {
			rc.Notebook = rel
		}
	}
	if r := h.cfg.Runner; r != nil {
		now, stop := context.WithCancel(context.Background())
		stop() // the cached language_info only
		var li struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(r.LanguageInfo(now), &li) == nil {
			rc.Language = li.Name
		}
	}
	return rc
}
