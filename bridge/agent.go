package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/agentstore"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/headless"
	"github.com/agentkernel/agentkernel/store"
)

// ModelOpener turns a model string ("openai:gpt-4.1", "replay:FILE") into a
// provider. cmd wires it to the provider packages; tests to their servers.
type ModelOpener func(spec string) (provider.Provider, error)

// Approve is the headless approval policy: what an ask gets when no
// frontend can answer it (no stdin). AGENTKERNEL_APPROVE sets it.
type Approve = headless.Approve

// The headless policies.
const (
	ApproveNone     = headless.ApproveNone
	ApproveReadOnly = headless.ApproveReadOnly
	ApproveAll      = headless.ApproveAll
)

// session is prompt mode's agent: the store, the current session's task,
// and the code runner its execute_code uses.
type session struct {
	store  *store.Store
	task   *agent.Task
	policy *agent.Policy
	runner *codeRunner
	model  string

	mu    sync.Mutex
	cells []string // %%code cells since the last prompt, given to the model
}

// agentFor returns the current session, opening the store and creating a
// session on first use.
func (b *Bridge) agentFor(ctx context.Context) (*session, error) {
	b.amu.Lock()
	defer b.amu.Unlock()
	if b.sess != nil {
		return b.sess, nil
	}
	return b.newSessionLocked(ctx, "")
}

// openStoreLocked opens the store once.
func (b *Bridge) openStoreLocked() (*store.Store, error) {
	if b.store != nil {
		return b.store, nil
	}
	st, err := store.Open(store.Options{Dir: b.cfg.DataDir})
	if err != nil {
		return nil, fmt.Errorf("bridge: open the session store: %w", err)
	}
	b.store = st
	return st, nil
}

// newSessionLocked closes the current session and starts another: a new
// one (resume == "") or a stored one.
func (b *Bridge) newSessionLocked(ctx context.Context, resume string) (*session, error) {
	st, err := b.openStoreLocked()
	if err != nil {
		return nil, err
	}
	model := b.cfg.Model
	if b.sess != nil {
		model = b.sess.model
		b.sess.task.Close()
		b.sess = nil
	}
	var (
		id      string
		history store.Histories
	)
	if resume != "" {
		sess, err := headless.FindSession(ctx, st, resume)
		if err != nil {
			return nil, err
		}
		id = sess.ID
		if sess.Model != "" && b.cfg.Model == "" {
			model = sess.Model
		}
		if history, err = st.Load(ctx, id); err != nil {
			return nil, err
		}
	} else {
		providerName, _, _ := strings.Cut(model, ":")
		sess, err := st.CreateSession(ctx, store.NewSession{Model: model, Provider: providerName,
			Mode: string(b.cfg.Mode), Workspace: b.workspaceDir()})
		if err != nil {
			return nil, err
		}
		id = sess.ID
	}
	ws, err := agent.NewWorkspace(b.workspaceDir())
	if err != nil {
		return nil, err
	}
	runner := &codeRunner{b: b}
	tb, err := agent.NewToolbox(agent.ToolboxOptions{Workspace: ws, Runner: runner})
	if err != nil {
		return nil, err
	}
	pol, err := agent.NewPolicy(tb, agent.PolicyOptions{Mode: b.cfg.PermissionMode, Allow: b.cfg.Allow, Deny: b.cfg.Deny})
	if err != nil {
		return nil, err
	}
	s := &session{store: st, policy: pol, runner: runner, model: model}
	prov, err := b.openModelLocked(model)
	if err != nil {
		b.log.Warn("model not available", "model", model, "error", err)
		prov = nil
	}
	task, err := agent.New(agent.Config{
		SessionID: id, Store: agentstore.New(st), Toolbox: tb, Provider: prov, Policy: pol,
		Logger: b.log, UI: history.UI, API: history.API, Context: s.takeCells,
	})
	if err != nil {
		return nil, err
	}
	s.task = task
	b.sess = s
	b.panelSessionChanged()
	b.log.Info("agent session", "id", id, "model", model, "resumed", resume != "")
	return s, nil
}

// openModelLocked returns the provider for a model string, opening it once
// per kernel (a recording provider must not be re-created: it would start
// its cassette again). "" is no model.
func (b *Bridge) openModelLocked(model string) (provider.Provider, error) {
	if model == "" || b.cfg.OpenModel == nil {
		return nil, nil
	}
	if p, ok := b.providers[model]; ok {
		return p, nil
	}
	p, err := b.cfg.OpenModel(model)
	if err != nil {
		return nil, err
	}
	if b.providers == nil {
		b.providers = map[string]provider.Provider{}
	}
	b.providers[model] = p
	return p, nil
}

func (b *Bridge) workspaceDir() string {
	if b.cfg.Dir != "" {
		return b.cfg.Dir
	}
	d, err := os.Getwd()
	if err != nil {
		return "."
	}
	return d
}

// addCell remembers a %%code cell for the next prompt's context.
func (s *session) addCell(code, output string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	const maxCells = 20
	entry := "```\n" + strings.TrimSpace(code) + "\n```"
	if output = strings.TrimSpace(output); output != "" {
		entry += "\nOutput:\n```\n" + capText(output, 2000) + "\n```"
	}
	s.cells = append(s.cells, entry)
	if len(s.cells) > maxCells {
		s.cells = s.cells[len(s.cells)-maxCells:]
	}
}

// takeCells returns (and forgets) the cells run since the last prompt.
func (s *session) takeCells() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cells) == 0 {
		return ""
	}
	text := "The user ran these cells in the notebook's kernel since the last message:\n\n" + strings.Join(s.cells, "\n\n")
	s.cells = nil
	return capText(text, 20000)
}

// capText keeps the head and tail of s within n bytes.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := s[:n*2/3], s[len(s)-n/3:]
	return head + fmt.Sprintf("\n[… %d bytes cut …]\n", len(s)-len(head)-len(tail)) + tail
}

// closeAgent closes the session and the store.
func (b *Bridge) closeAgent() error {
	b.amu.Lock()
	defer b.amu.Unlock()
	var errs []error
	if b.sess != nil {
		errs = append(errs, b.sess.task.Close())
		b.sess = nil
	}
	if b.store != nil {
		errs = append(errs, b.store.Close())
		b.store = nil
	}
	for name, p := range b.providers {
		if c, ok := p.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
		delete(b.providers, name)
	}
	return errors.Join(errs...)
}
