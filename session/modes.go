package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/rules"
)

// Modes are the permission mode of the current session and the agent mode
// of a host's sessions, and the rules that shape their turns.
type Modes struct {
	set  modeSettings
	host sessions
	lis  *agent.Listeners
	log  hclog.Logger

	mu    sync.Mutex
	agent rules.AgentMode // SetAgent's; zero: the default
}

// modeSettings are what the modes and rules are read from (Config).
type modeSettings struct {
	workspace, userDir string
	permission         agent.PermissionMode
	allow, deny        []string // the policies' rules
	modes              map[string]rules.AgentMode
	kernel             string
	runner             backing.Runner // the kernel's language (nil: none)
}

// Permission returns the current session's permission mode.
func (m *Modes) Permission() agent.PermissionMode {
	c := m.host.active()
	if c == nil {
		if m.set.permission != "" {
			return m.set.permission
		}
		return agent.PermissionDefault
	}
	return c.policy.PermissionMode()
}

// policy is the permission policy of a session with toolbox tb: the
// configured mode and rules.
func (m *Modes) policy(tb *agent.Toolbox) (*agent.Policy, error) {
	return agent.NewPolicy(tb, agent.PolicyOptions{Mode: m.set.permission, Allow: m.set.allow, Deny: m.set.deny})
}

// filter is the tool filter of the current agent mode (nil: every tool).
func (m *Modes) filter() *agent.ToolFilter { return toolFilter(m.Agent()) }

// SetPermission switches the current session's permission mode.
func (m *Modes) SetPermission(ctx context.Context, mode agent.PermissionMode) error {
	c, err := m.host.session(ctx)
	if err != nil {
		return err
	}
	m.host.logCommand(ctx, c, "permission_mode", string(mode))
	if err := c.policy.SetPermissionMode(mode); err != nil {
		return err
	}
	m.lis.Emit(agent.Event{Kind: EventSettingsChanged})
	return nil
}

// The user's rules (package rules): AGENTS.md and CLAUDE.md of the
// workspace, its parents up to the repository's root and the user's
// configuration directory, and the scoped rule files. They are read at the
// start of each turn, so an edit applies from the next prompt on, and are
// fixed for the turn.

// turnRules is session c's agent.Config.Rules.
func (m *Modes) turnRules(c *current) func(ctx context.Context) (string, []string) {
	return func(ctx context.Context) (string, []string) {
		applying, _, problems := m.rulesOf(ctx, c)
		for _, err := range problems {
			m.log.Warn("rules", "error", err)
		}
		var files []string
		for _, r := range applying {
			files = append(files, r.Path)
		}
		var mode string
		if am := m.Agent(); am.Instructions != "" {
			mode = "# Mode: " + am.Name + "\n\n" + am.Instructions
		}
		return rules.Prompt(mode, applying), files
	}
}

// AgentModes returns the agent modes (built-in, the config file's, the
// workspace's .agentkernel/modes) and the files that could not be used.
func (m *Modes) AgentModes() ([]rules.AgentMode, []error) {
	return rules.LoadModes(m.set.workspace, m.set.modes)
}

// Agent returns the current agent mode.
func (m *Modes) Agent() rules.AgentMode {
	m.mu.Lock()
	a := m.agent
	m.mu.Unlock()
	if a.Name == "" {
		a, _ = rules.FindMode(rules.Builtin, rules.ModeDefault)
	}
	return a
}

// SetAgent switches to the agent mode called name, from the next
// request on, in the current session and those the host opens later: its
// instructions join the system prompt, the model is offered only its
// tools (and a call of another is refused), and its permission mode, if
// it names one, is set.
func (ms *Modes) SetAgent(ctx context.Context, name string) (rules.AgentMode, error) {
	modes, _ := ms.AgentModes()
	m, ok := rules.FindMode(modes, name)
	if !ok {
		var names []string
		for _, m := range modes {
			names = append(names, m.Name)
		}
		return rules.AgentMode{}, fmt.Errorf("no mode %q (there are %s)", name, strings.Join(names, ", "))
	}
	var pm agent.PermissionMode
	if m.PermissionMode != "" {
		var err error
		if pm, err = agent.ParsePermissionMode(m.PermissionMode); err != nil {
			return rules.AgentMode{}, fmt.Errorf("mode %s: %w", m.Name, err)
		}
	}
	c, err := ms.host.session(ctx)
	if err != nil {
		return rules.AgentMode{}, err
	}
	ms.host.logCommand(ctx, c, "agent_mode", m.Name)
	ms.mu.Lock()
	ms.agent = m
	ms.mu.Unlock()
	c.task.SetToolFilter(toolFilter(m))
	if pm != "" {
		if err := c.policy.SetPermissionMode(pm); err != nil {
			return rules.AgentMode{}, err
		}
	}
	ms.lis.Emit(agent.Event{Kind: EventSettingsChanged})
	return m, nil
}

// toolFilter is mode m's tool list as the task's filter (nil: every tool).
func toolFilter(m rules.AgentMode) *agent.ToolFilter {
	if len(m.Tools) == 0 {
		return nil
	}
	return &agent.ToolFilter{Name: m.Name, Allow: func(tool string, class agent.ToolClass) bool { return m.Allows(tool, class.String()) }}
}

// Rules returns the rules that apply to the current session now, every
// rule file found, and the files that could not be used (%agent rules).
func (m *Modes) Rules(ctx context.Context) (applying, all []rules.Rule, ctxt rules.Context, problems []error) {
	c, err := m.host.session(ctx)
	if err != nil {
		return nil, nil, rules.Context{}, []error{err}
	}
	applying, all, problems = m.rulesOf(ctx, c)
	return applying, all, m.ruleContext(c), problems
}

func (m *Modes) rulesOf(_ context.Context, c *current) (applying, all []rules.Rule, problems []error) {
	all, problems = rules.Load(m.set.workspace, m.set.userDir)
	return rules.Applying(all, m.ruleContext(c)), all, problems
}

// ruleContext is what session c's rules are picked by: the backing
// kernel's language (as far as it is known without waiting for a start)
// and kernelspec, the permission mode, and the notebook Jupyter named.
func (m *Modes) ruleContext(c *current) rules.Context {
	rc := rules.Context{Kernel: m.set.kernel, Notebook: os.Getenv("JPY_SESSION_NAME"), AgentMode: m.Agent().Name}
	if c.policy != nil {
		rc.Mode = string(c.policy.PermissionMode())
	}
	if rc.Notebook != "" && filepath.IsAbs(rc.Notebook) {
		if rel, err := filepath.Rel(m.set.workspace, rc.Notebook); err == nil {
			rc.Notebook = rel
		}
	}
	if r := m.set.runner; r != nil {
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
