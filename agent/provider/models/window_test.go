package models

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// ollamaServer answers POST /api/show as Ollama does, with the model_info
// and parameters given, and counts the questions it was asked.
func ollamaServer(t *testing.T, modelInfo map[string]any, parameters string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/show" {
			http.NotFound(w, r)
			return
		}
		asked.Add(1)
		var req struct{ Model string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "qwen2.5-coder:7b" {
			http.Error(w, `{"error":"model not found"}`, http.StatusNotFound)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"modelfile": "FROM qwen", "parameters": parameters,
			"details": map[string]any{"family": "qwen2"}, "model_info": modelInfo})
	}))
	t.Cleanup(srv.Close)
	return srv, &asked
}

func TestOllamaContextWindow(t *testing.T) {
	info := map[string]any{"general.architecture": "qwen2", "qwen2.context_length": 32768, "qwen2.embedding_length": 3584}
	for _, tc := range []struct {
		name       string
		info       map[string]any
		parameters string
		prices     map[string]provider.ModelInfo
		model      string
		want       int
		asks       int32
	}{
		{name: "model_info", info: info, model: "qwen2.5-coder:7b", want: 32768, asks: 1},
		{name: "num_ctx wins", info: info, parameters: "num_ctx 8192\nstop \"<|im_end|>\"", model: "qwen2.5-coder:7b", want: 8192, asks: 1},
		{name: "the config wins", info: info, model: "qwen2.5-coder:7b", want: 4096, asks: 0,
			prices: map[string]provider.ModelInfo{"qwen2.5-coder:7b": {ContextWindow: 4096}}},
		// The server cannot say: a guess, marked as one.
		{name: "unknown model", info: info, model: "nosuch", want: provider.DefaultContextWindow, asks: 1},
		{name: "no architecture", info: map[string]any{"qwen2.context_length": 32768}, model: "qwen2.5-coder:7b", want: provider.DefaultContextWindow, asks: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, asked := ollamaServer(t, tc.info, tc.parameters)
			p, err := Open("ollama:"+tc.model, Options{Getenv: env(map[string]string{"OLLAMA_HOST": srv.URL}), Prices: tc.prices})
			if err != nil {
				t.Fatal(err)
			}
			if asked.Load() != 0 {
				t.Fatal("the server was asked before the window was needed")
			}
			for range 3 {
				if got := p.Model().ContextWindow; got != tc.want {
					t.Fatalf("ContextWindow = %d, want %d", got, tc.want)
				}
			}
			if guessed := p.Model().WindowGuessed; guessed != (tc.want == provider.DefaultContextWindow && tc.name != "model_info") {
				t.Errorf("WindowGuessed = %v", guessed)
			}
			if got := asked.Load(); got != tc.asks {
				t.Fatalf("the server was asked %d times, want %d", got, tc.asks)
			}
			if p.Name() != "ollama" || p.Model().ID != tc.model {
				t.Fatalf("provider %s, model %+v", p.Name(), p.Model())
			}
		})
	}
}

// TestOllamaDownGuessesTheWindow: with no server to ask, the window is the
// conservative default, marked as a guess, so that the history is still
// condensed before it outgrows the model.
func TestOllamaDownGuessesTheWindow(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	p, err := Open("ollama:qwen2.5-coder:7b", Options{Getenv: env(map[string]string{"OLLAMA_HOST": url})})
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Model(); m.ContextWindow != provider.DefaultContextWindow || !m.WindowGuessed {
		t.Fatalf("model %+v with no server: want the default window, guessed", m)
	}
}

func TestOpenAICompatibleContextWindow(t *testing.T) {
	var auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		auth.Store(r.Header.Get("Authorization"))
		w.Write([]byte(`{"object":"list","data":[{"id":"other","max_model_len":1},` +
			`{"id":"Qwen/Qwen2.5-7B-Instruct","object":"model","owned_by":"vllm","max_model_len":16384},` +
			// The LiteLLM proxy's answer.
			`{"id":"team-llama","object":"model","owned_by":"openai","max_input_tokens":131072,"max_output_tokens":8192}]}`))
	}))
	t.Cleanup(srv.Close)
	p, err := Open("openai:Qwen/Qwen2.5-7B-Instruct", Options{Getenv: env(map[string]string{
		"OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": "sk-local"})})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Model().ContextWindow; got != 16384 {
		t.Fatalf("ContextWindow = %d, want vLLM's max_model_len 16384", got)
	}
	if got, _ := auth.Load().(string); got != "Bearer sk-local" {
		t.Fatalf("Authorization %q", got)
	}
	p, err = Open("openai:team-llama", Options{Getenv: env(map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"})})
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Model(); m.ContextWindow != 131072 || m.WindowGuessed {
		t.Fatalf("LiteLLM's model: %+v, want max_input_tokens 131072", m)
	}
	// A model the server does not list: the default, a guess.
	p, err = Open("openai:unlisted", Options{Getenv: env(map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"})})
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Model(); m.ContextWindow != provider.DefaultContextWindow || !m.WindowGuessed {
		t.Fatalf("an unlisted model: %+v", m)
	}
	// A model the table knows is not asked about.
	p, err = Open("openai:gpt-4.1", Options{Getenv: env(map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"})})
	if err != nil || p.Model().ContextWindow != 1_047_576 {
		t.Fatalf("gpt-4.1: %v %+v", err, p.Model())
	}
}
