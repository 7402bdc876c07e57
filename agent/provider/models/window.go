package models

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// A model that neither the tables nor the config file know (a local
// model behind Ollama or an OpenAI-compatible server) has no context
// window, and without one the task would never condense its history.
// Such servers can say it: probed asks once, the first time Model is
// called; a server that cannot say, or a provider with no server to ask,
// gets provider.DefaultContextWindow, marked as a guess.

// probeTimeout bounds the one question to the server.
const probeTimeout = 5 * time.Second

// probed is a provider whose context window comes from its server.
type probed struct {
	provider.Provider
	probe func(ctx context.Context) (int, error)
	guess int // the window when the server cannot say

	once sync.Once
	info provider.ModelInfo
}

// withWindow wraps p so that its context window is asked of the server
// (probe; nil: no server to ask) when neither the tables nor the config
// gave one, and guessed when the server cannot say.
func withWindow(p provider.Provider, probe func(ctx context.Context) (int, error), guess int) provider.Provider {
	if p.Model().ContextWindow > 0 {
		return p
	}
	return &probed{Provider: p, probe: probe, guess: guess}
}

// Model returns the provider's model info, with the context window the
// server reported (asked on the first call; a server that cannot say
// leaves it unknown).
func (p *probed) Model() provider.ModelInfo {
	p.once.Do(func() {
		p.info = p.Provider.Model()
		if p.probe != nil {
			ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
			defer cancel()
			if n, err := p.probe(ctx); err == nil && n > 0 {
				p.info.ContextWindow = n
				return
			}
		}
		p.info.ContextWindow, p.info.WindowGuessed = p.guess, true
	})
	return p.info
}

// ollamaWindow asks Ollama (POST /api/show) for model's context window:
// num_ctx when its parameters set one (what the server runs it with),
// else the model's own "<architecture>.context_length".
func ollamaWindow(client *http.Client, host, model string) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		body, _ := json.Marshal(map[string]string{"model": model})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, host+"/api/show", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		var show struct {
			Parameters string                     `json:"parameters"`
			ModelInfo  map[string]json.RawMessage `json:"model_info"`
		}
		if err := getJSON(client, req, &show); err != nil {
			return 0, err
		}
		for _, line := range strings.Split(show.Parameters, "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "num_ctx" {
				if n, err := strconv.Atoi(f[1]); err == nil && n > 0 {
					return n, nil
				}
			}
		}
		var arch string
		if err := json.Unmarshal(show.ModelInfo["general.architecture"], &arch); err != nil || arch == "" {
			return 0, fmt.Errorf("models: ollama: %s: no general.architecture in model_info", model)
		}
		var n int
		if err := json.Unmarshal(show.ModelInfo[arch+".context_length"], &n); err != nil {
			return 0, fmt.Errorf("models: ollama: %s: no %s.context_length in model_info", model, arch)
		}
		return n, nil
	}
}

// openAIWindow asks an OpenAI-compatible server (GET /models) for model's
// context window, where it lists one: vLLM's max_model_len, the LiteLLM
// proxy's max_input_tokens, and the context_length (or
// max_context_length, context_window) of other servers and routers.
func openAIWindow(client *http.Client, base, key, model string) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/models", nil)
		if err != nil {
			return 0, err
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		var list struct {
			Data []struct {
				ID               string `json:"id"`
				MaxModelLen      int    `json:"max_model_len"`
				MaxInputTokens   int    `json:"max_input_tokens"`
				ContextLength    int    `json:"context_length"`
				MaxContextLength int    `json:"max_context_length"`
				ContextWindow    int    `json:"context_window"`
			} `json:"data"`
		}
		if err := getJSON(client, req, &list); err != nil {
			return 0, err
		}
		for _, m := range list.Data {
			if m.ID != model {
				continue
			}
			for _, n := range []int{m.MaxModelLen, m.MaxInputTokens, m.ContextLength, m.MaxContextLength, m.ContextWindow} {
				if n > 0 {
					return n, nil
				}
			}
		}
		return 0, fmt.Errorf("models: %s lists no context window for %s", base, model)
	}
}

// getJSON sends req and decodes a 200 answer of at most 4 MiB into v.
// Errors name the URL, never the key.
func getJSON(client *http.Client, req *http.Request, v any) error {
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("models: %s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("models: %s %s: %s", req.Method, req.URL.Redacted(), resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(v); err != nil {
		return fmt.Errorf("models: %s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	return nil
}
