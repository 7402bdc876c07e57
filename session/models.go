package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/models"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/internal/keys"
	"github.com/agentkernel/agentkernel/store"
)

// Models are the model and the reasoning effort of a host's sessions, and
// the providers opened for their models: each opened once per host (a
// recording provider must not be re-created: it would start its cassette
// again), closed by the host's Close.
type Models struct {
	set       modelSettings
	host      sessions
	openStore storeOf
	lis       *agent.Listeners
	log       hclog.Logger
	quiet     *backing.Quiet // the namespace reads of completions (nil: no kernel)

	mu        sync.Mutex // guards what follows; never held across a call out
	providers map[string]provider.Provider
	closed    bool
	explicit  string // the model set with Set: wins over a resumed session's
	effort    provider.Effort
	effortSet bool // SetEffort was called: effort wins over Config.Effort
}

// modelSettings are the configuration's models (Config).
type modelSettings struct {
	model, completion string
	models            []string
	effort            provider.Effort
	open              ModelOpener
	keys              *keys.File
}

// Model returns the current session's model ("" for none). Without a
// session yet it is what a new one would get.
func (m *Models) Model() string {
	if c := m.host.active(); c != nil {
		return c.modelName()
	}
	return m.next("")
}

// next is the model of a session that opens now: the one Set chose, else
// stored (a resumed session's), else the configuration's.
func (m *Models) next(stored string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return cmp.Or(m.explicit, stored, m.set.model)
}

// Set switches the current session (and those the host opens later) to
// model: it wins over a resumed session's model and the default. It is
// recorded on the session; the next model request uses it.
func (m *Models) Set(ctx context.Context, model string) error {
	model = strings.TrimSpace(model)
	if model == "" {
		return errors.New("session: no model given")
	}
	if m.set.open == nil {
		return errors.New("session: models cannot be changed here")
	}
	p, err := m.provider(model)
	if err != nil {
		return err
	}
	c, err := m.host.session(ctx)
	if err != nil {
		return err
	}
	m.host.logCommand(ctx, c, "model", model)
	c.task.SetProvider(p)
	m.mu.Lock()
	m.explicit = model
	m.mu.Unlock()
	c.setModel(model)
	st, err := m.openStore(ctx)
	if err != nil {
		return err
	}
	providerName, _, _ := strings.Cut(model, ":")
	if err := st.UpdateSession(ctx, c.id, store.SessionUpdate{Model: &model, Provider: &providerName}); err != nil {
		return fmt.Errorf("session: record the model: %w", err)
	}
	m.lis.Emit(agent.Event{Kind: EventSettingsChanged})
	return nil
}

// SetEffort sets how hard the model thinks, from the next request on, in
// the current session and those the host opens later: low, medium, high
// ("" is the provider's default). Anthropic's extended thinking budget,
// OpenAI's reasoning_effort.
func (m *Models) SetEffort(ctx context.Context, e provider.Effort) error {
	c, err := m.host.session(ctx)
	if err != nil {
		return err
	}
	m.host.logCommand(ctx, c, "effort", string(e))
	m.mu.Lock()
	m.effort, m.effortSet = e, true
	m.mu.Unlock()
	c.task.SetEffort(e)
	m.lis.Emit(agent.Event{Kind: EventSettingsChanged})
	return nil
}

// Effort returns the reasoning effort of the next request.
func (m *Models) Effort() provider.Effort {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.effortSet {
		return m.effort
	}
	return m.set.effort
}

// provider returns the provider for a model string, opening it once.
// "" is no model.
func (m *Models) provider(model string) (provider.Provider, error) {
	open := m.set.open
	if model == "" || open == nil {
		return nil, nil
	}
	m.mu.Lock()
	p, ok := m.providers[model]
	m.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := open(model)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	prev, ok := m.providers[model]
	closed := m.closed
	if !ok && !closed {
		if m.providers == nil {
			m.providers = map[string]provider.Provider{}
		}
		m.providers[model] = p
	}
	m.mu.Unlock()
	switch {
	case ok:
		closeProvider(p)
		return prev, nil
	case closed:
		closeProvider(p)
		return nil, ErrClosed
	}
	return p, nil
}

// forget drops the cached providers of models of providerName that can be
// opened again (SetKey): a provider that must be closed (a recording one:
// opening it again would start its cassette again; an external agent) is
// kept as it is.
func (m *Models) forget(providerName string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for model, p := range m.providers {
		if name, _, err := models.Parse(model); err == nil && name == providerName {
			if _, closer := p.(io.Closer); !closer {
				delete(m.providers, model)
			}
		}
	}
}

// close closes the providers (the host's Close); none opens after.
func (m *Models) close() error {
	m.mu.Lock()
	provs := m.providers
	m.providers, m.closed = nil, true
	m.mu.Unlock()
	var errs []error
	for _, p := range provs {
		errs = append(errs, closeProvider(p))
	}
	return errors.Join(errs...)
}

func closeProvider(p provider.Provider) error {
	if c, ok := p.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
