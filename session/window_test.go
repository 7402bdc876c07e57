package session

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/models"
	"github.com/agentkernel/agentkernel/agent/provider/scripted"
	"github.com/agentkernel/agentkernel/messages"
)

// TestOllamaWindowCondenses: a local model the tables do not know gets its
// context window from Ollama's /api/show, and a session on it condenses
// its history when the window fills.
func TestOllamaWindowCondenses(t *testing.T) {
	srv := scripted.New(t)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/show", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"parameters":"","model_info":{"general.architecture":"llama","llama.context_length":1500}}`))
	})
	mux.Handle("/", srv) // /v1/chat/completions: the scripted model
	ollama := httptest.NewServer(mux)
	t.Cleanup(ollama.Close)
	open := func(spec string) (provider.Provider, error) {
		return models.Open(spec, models.Options{Getenv: func(k string) string {
			if k == "OLLAMA_HOST" {
				return ollama.URL
			}
			return ""
		}})
	}
	srv.Enqueue(
		scripted.Reply(scripted.Text(strings.Repeat("x", 4000))),
		scripted.Reply(scripted.Text("the summary")), // the condense request
		scripted.Reply(scripted.Text("short answer")),
	)
	h := newHost(t, Config{Store: openStore(t), OpenModel: open, Model: "ollama:llama3.2"})
	ctx := context.Background()
	for _, p := range []string{"first", "second"} {
		if _, err := h.Submit(ctx, p, Turn{}); err != nil {
			t.Fatal(err)
		}
	}
	condensed := false
	for _, m := range h.History() {
		condensed = condensed || m.Say == messages.SayCondenseContext
	}
	if !condensed {
		t.Fatal("no condense_context message: the window was not known")
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || !strings.Contains(string(reqs[2].Raw), "the summary") || strings.Contains(string(reqs[2].Raw), "xxxx") {
		t.Fatalf("the request after the condense does not start from the summary: %d requests", len(reqs))
	}
}
