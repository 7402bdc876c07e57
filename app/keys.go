package app

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/acpagent"
	"github.com/agentkernel/agentkernel/agent/provider/anthropic"
	"github.com/agentkernel/agentkernel/agent/provider/models"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/internal/keys"
)

// Models, their keys and servers: a model string is opened with the
// environment's variables, where a provider's key or base URL variable
// (OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENAI_BASE_URL, ANTHROPIC_BASE_URL,
// OLLAMA_HOST) that is not set is what the user saved in the settings view
// (package keys). The environment wins: it is what an
// administrator or a kernelspec set, as the config file loses to it.

// openModel opens spec as models.Open does, with the keys of kf behind the
// environment. A missing key's error says where a key can be given.
func openModel(spec string, kf *keys.File, o models.Options) (provider.Provider, error) {
	var keyErr error
	o.Getenv = func(name string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		v, err := kf.Lookup(name)
		if err != nil {
			keyErr = err
		}
		return v
	}
	p, err := models.Open(spec, o)
	if err == nil {
		return p, nil
	}
	if keyErr != nil {
		return nil, fmt.Errorf("%w (the saved keys are not used: %v)", err, keyErr)
	}
	name, _, _ := models.Parse(spec)
	for _, kp := range keys.Providers {
		if kp.Name == name && os.Getenv(kp.Env) == "" && strings.Contains(err.Error(), kp.Env) {
			return nil, fmt.Errorf("%w; or save a key (or a local server's base URL) for %s in the Agent sidebar's settings", err, name)
		}
	}
	return nil, err
}

// modelChoices are the model strings a settings view offers: those the
// configuration names (the model, the completion model, the config file's
// models), then those the built-in tables know, each once.
func (c Config) modelChoices() []string {
	var out []string
	add := func(spec string) {
		spec = strings.TrimSpace(spec)
		name, id, err := models.Parse(spec)
		if err != nil || id == "" || name == "replay" {
			return
		}
		switch name {
		case "openai", "anthropic", "ollama", acpagent.Name:
		default:
			return // an id the config file describes whose provider is not known
		}
		if s := name + ":" + id; !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	add(c.Model)
	add(c.File.Model)
	add(cmp.Or(os.Getenv(EnvCompletionModel), c.File.CompletionModel))
	for _, m := range [](map[string]ModelEntry){c.File.Models, c.File.Prices} {
		ids := make([]string, 0, len(m))
		for id := range m {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			add(id)
		}
	}
	for _, id := range openai.ModelIDs() {
		add("openai:" + id)
	}
	for _, id := range anthropic.ModelIDs() {
		add("anthropic:" + id)
	}
	return out
}
