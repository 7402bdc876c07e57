package session

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/models"
	"github.com/agentkernel/agentkernel/internal/keys"
)

// ModelSettings is what a settings view shows: the model and the models
// the configuration knows, the completion model, the effort, and each
// provider's key as a mask — never a key — and its base URL.
type ModelSettings struct {
	// Model is the current session's (or the next one's) model.
	Model string
	// CompletionModel is the model of inline completions ("": Model).
	CompletionModel string
	// Models are the model strings the configuration names and the
	// built-in tables know, for a picker.
	Models []string
	// Effort is the reasoning effort of the next request.
	Effort provider.Effort
	// Keys are the providers' keys and base URLs: where each comes from,
	// the key's mask, the URL.
	Keys []keys.Status
	// KeysFile is where saved keys are kept; "" when keys cannot be
	// saved here (Config.Keys is nil).
	KeysFile string
	// KeysProblem is why the keys file cannot be used ("": it can).
	KeysProblem string
}

// Settings returns what a settings view shows.
func (m *Models) Settings() ModelSettings {
	s := ModelSettings{Model: m.Model(), CompletionModel: m.set.completion, Models: m.set.models, Effort: m.Effort()}
	if f := m.set.keys; f != nil {
		s.KeysFile = f.Path
		var err error
		if s.Keys, err = f.Statuses(os.Getenv); err != nil {
			s.KeysProblem = err.Error()
		}
	}
	return s
}

// SetKey saves key as provider's API key ("" removes the saved one) in
// Config.Keys, and the next request of a model of that provider uses it —
// the current session's, a completion's — without a restart: the providers
// the host opened for it are opened again. The key is neither logged nor
// recorded; the settings event tells the surfaces (and the completers that
// were told completions are off) to look again. An environment variable
// of the provider still wins, as it does at start.
func (m *Models) SetKey(ctx context.Context, providerName, key string) error {
	f := m.set.keys
	if f == nil {
		return errors.New("session: keys cannot be saved here")
	}
	if err := f.Set(providerName, strings.TrimSpace(key)); err != nil {
		return err
	}
	m.log.Info("API key saved", "provider", providerName, "removed", key == "")
	m.reopen(providerName)
	m.lis.Emit(agent.Event{Kind: EventSettingsChanged})
	return nil
}

// SetBaseURL saves u as the base URL of provider's server ("" removes
// the saved one: the provider's default server, or the environment's) in
// Config.Keys, beside the keys and as private; the next request of a model
// of that provider goes there, without a restart, as after SetKey. The URL
// is not logged (it may name a host the user keeps to themselves). An
// environment variable of the provider (OPENAI_BASE_URL,
// ANTHROPIC_BASE_URL, OLLAMA_HOST) still wins.
func (m *Models) SetBaseURL(ctx context.Context, providerName, u string) error {
	f := m.set.keys
	if f == nil {
		return errors.New("session: base URLs cannot be saved here")
	}
	if err := f.SetURL(providerName, strings.TrimSpace(u)); err != nil {
		return err
	}
	m.log.Info("base URL saved", "provider", providerName, "removed", strings.TrimSpace(u) == "")
	m.reopen(providerName)
	m.lis.Emit(agent.Event{Kind: EventSettingsChanged})
	return nil
}

// reopen drops the cached providers of models of providerName (forget)
// and gives the current session its model's provider anew. A provider
// that must be closed is kept as it is, with its old key.
func (m *Models) reopen(providerName string) {
	m.forget(providerName)
	c := m.host.active()
	if c == nil {
		return
	}
	model := c.modelName()
	if name, _, err := models.Parse(model); err != nil || name != providerName {
		return
	}
	p, err := m.provider(model)
	if err != nil {
		// The key was removed, say: the session keeps the provider it
		// has until a model is set; the next open says what is missing.
		m.log.Warn("model not available", "model", model, "error", err)
		return
	}
	if p != nil {
		c.task.SetProvider(p)
	}
}
