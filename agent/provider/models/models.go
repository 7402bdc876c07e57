// Package models turns a model string into a provider.Provider: the one
// place that knows every provider package and the environment variables
// people already have.
//
//	openai:gpt-4.1               OPENAI_API_KEY, OPENAI_BASE_URL (any OpenAI-compatible server)
//	anthropic:claude-sonnet-4-5  ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
//	ollama:qwen2.5-coder         OLLAMA_HOST (default http://localhost:11434)
//	replay:FILE                  a cassette recorded with Options.Record
//	acp:claude                   an external ACP agent (claude, codex, gemini, or a command line): its turns are the model's
//
// A model the tables and Options.Prices do not give a context window gets
// it from its server, asked once when first needed: Ollama's /api/show,
// an OpenAI-compatible server's /models (vLLM's max_model_len).
//
// A model string without a provider ("gpt-4.1") is looked up in the price
// tables. Resolution of which string to use (explicit > session >
// kernelspec env / config > none) is the caller's; Resolve helps.
package models

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/acpagent"
	"github.com/agentkernel/agentkernel/agent/provider/anthropic"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/agent/provider/replay"
)

// Options configures Open. The zero value reads the process environment.
type Options struct {
	// Getenv reads configuration; default os.Getenv.
	Getenv func(string) string
	// HTTPClient makes the API requests; default http.DefaultClient.
	HTTPClient *http.Client
	// Prices override the price tables, by model id.
	Prices map[string]provider.ModelInfo
	// Record, when set, wraps the provider in a recorder writing a
	// cassette to this file (see package replay). Close the returned
	// provider (it is an io.Closer then) to finish the cassette.
	Record string
	// ACP is the template of an external agent's options (acp:…): its
	// workspace, the tools it is given, the logger. Label and Command
	// come from the model string.
	ACP acpagent.Options
}

// Env lists the variables Open reads, for help texts.
var Env = []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_HOST"}

// Open returns the provider for spec.
func Open(spec string, o Options) (provider.Provider, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	name, model, err := Parse(spec)
	if err != nil {
		return nil, err
	}
	var info *provider.ModelInfo
	if p, ok := o.Prices[model]; ok {
		info = &p
	}
	var open func(spec, model string, info *provider.ModelInfo, o Options) (provider.Provider, []string, error)
	switch name {
	case "openai":
		open = openOpenAI
	case "ollama":
		open = openOllama
	case "anthropic":
		open = openAnthropic
	case "acp":
		if o.Record != "" {
			return nil, errors.New("models: an external agent's turns cannot be recorded")
		}
		return openACP(model, o)
	case "replay":
		if o.Record != "" {
			return nil, errors.New("models: cannot record a replay")
		}
		return replay.Open(model)
	default:
		return nil, fmt.Errorf("models: unknown provider %q in %q (want openai, anthropic, ollama, acp or replay)", name, spec)
	}
	p, secrets, err := open(spec, model, info, o)
	if err != nil {
		return nil, err
	}
	if o.Record != "" {
		rec, err := replay.Create(o.Record, p, &replay.RecorderOptions{Secrets: secrets})
		if err != nil {
			return nil, err
		}
		return rec, nil
	}
	return p, nil
}

// openOpenAI opens an OpenAI-compatible API (openai:MODEL), and returns
// the key to scrub from a recording. A server of its own (a base URL) is
// asked for the model's window.
func openOpenAI(spec, model string, info *provider.ModelInfo, o Options) (provider.Provider, []string, error) {
	key, base := o.Getenv("OPENAI_API_KEY"), o.Getenv("OPENAI_BASE_URL")
	if key == "" && base == "" {
		return nil, nil, fmt.Errorf("models: %s needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible server)", spec)
	}
	p, err := openai.New(openai.Config{APIKey: key, BaseURL: base, Model: model, HTTPClient: o.HTTPClient, Info: info})
	if err != nil {
		return nil, nil, err
	}
	var probe func(context.Context) (int, error)
	if base != "" {
		probe = openAIWindow(o.HTTPClient, strings.TrimSuffix(base, "/"), key, model)
	}
	return withWindow(p, probe, provider.DefaultContextWindow), []string{key}, nil
}

// openOllama opens an Ollama server's OpenAI-compatible API
// (ollama:MODEL), free unless the prices say otherwise, and asks it for
// the model's window.
func openOllama(_, model string, info *provider.ModelInfo, o Options) (provider.Provider, []string, error) {
	host := o.Getenv("OLLAMA_HOST")
	if host == "" {
		host = "http://localhost:11434"
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	if info == nil {
		info = &provider.ModelInfo{ID: model}
	}
	host = strings.TrimSuffix(host, "/")
	p, err := openai.New(openai.Config{Name: "ollama", BaseURL: host + "/v1", Model: model,
		HTTPClient: o.HTTPClient, Info: info})
	if err != nil {
		return nil, nil, err
	}
	return withWindow(p, ollamaWindow(o.HTTPClient, host, model), provider.DefaultContextWindow), nil, nil
}

// openAnthropic opens Anthropic's API (anthropic:MODEL), and returns the
// key to scrub from a recording.
func openAnthropic(spec, model string, info *provider.ModelInfo, o Options) (provider.Provider, []string, error) {
	key := o.Getenv("ANTHROPIC_API_KEY")
	base := o.Getenv("ANTHROPIC_BASE_URL")
	if key == "" && base == "" {
		return nil, nil, fmt.Errorf("models: %s needs ANTHROPIC_API_KEY", spec)
	}
	p, err := anthropic.New(anthropic.Config{APIKey: key, BaseURL: base, Model: model, HTTPClient: o.HTTPClient, Info: info})
	if err != nil {
		return nil, nil, err
	}
	// Every Claude model since Claude 2.1 reads 200k tokens; the API does
	// not say.
	return withWindow(p, nil, anthropicWindow), []string{key}, nil
}

// openACP starts an external ACP agent (acp:NAME or acp:COMMAND) from the
// template o.ACP.
func openACP(model string, o Options) (provider.Provider, error) {
	ao := o.ACP
	ao.Command = acpagent.Command(model)
	ao.Label = strings.TrimSpace(strings.TrimPrefix(acpagent.Model(model), acpagent.Name+":"))
	if _, ok := acpagent.Aliases[ao.Label]; !ok && len(ao.Command) > 0 {
		ao.Label = acpagent.Label(ao.Command)
	}
	return acpagent.New(ao)
}

// anthropicWindow is the guessed window of a Claude model the tables do
// not know.
const anthropicWindow = 200_000

// Parse splits "provider:model". A bare model id is looked up in the
// price tables ("gpt-4.1" → openai, "claude-…" → anthropic).
func Parse(spec string) (name, model string, err error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return "", "", provider.ErrNotConfigured
	}
	if n, m, ok := strings.Cut(spec, ":"); ok && n != "" && m != "" && !strings.Contains(n, "/") {
		return strings.ToLower(n), m, nil
	}
	if _, ok := openai.KnownModel(spec); ok {
		return "openai", spec, nil
	}
	if _, ok := anthropic.KnownModel(spec); ok || strings.HasPrefix(spec, "claude") {
		return "anthropic", spec, nil
	}
	return "", "", fmt.Errorf("models: %q: write PROVIDER:MODEL (openai:gpt-4.1, anthropic:claude-sonnet-4-5, ollama:qwen2.5-coder, replay:FILE)", spec)
}

// Resolve picks the model string by precedence: the first non-empty of
// explicit (a flag or %agent model), session (the stored session's model),
// configured (kernelspec env AGENTKERNEL_MODEL or the config file).
func Resolve(explicit, session, configured string) string {
	for _, s := range []string{explicit, session, configured} {
		if strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}
