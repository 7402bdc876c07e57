package session

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/models"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestOllamaWindowCondenses: a local model the tables do not know gets its
// context window from Ollama's /api/show, and a session on it condenses
// its history when the window fills.
func TestOllamaWindowCondenses(t *testing.T) {
	srv := scripted.New(t)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/show", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"parameters":"","model_info":{"general.architecture":"llama","llama.context_length":4000}}`))
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
		scripted.Reply(scripted.Text(strings.Repeat("x", 8000))),
		scripted.Reply(scripted.Text("the summary")), // the condense request
		scripted.Reply(scripted.Text("short answer")),
	)
	h := newHost(t, Config{Store: openStore(t), OpenModel: open, Model: "ollama:llama3.2"})
	ctx := context.Background()
	for _, p := range []string{"first", "second"} {
		if _, err := h.Submit(ctx, p, Follow{}); err != nil {
			t.Fatal(err)
		}
	}
	condensed := false
	for _, m := range h.Conversation().UI() {
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

// scriptedEnv opens models as models.Open does with the scripted server as
// both APIs' base URL.
func scriptedEnv(srv *scripted.Server) ModelOpener {
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.OpenAIURL(),
		"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": srv.AnthropicURL()}
	return func(spec string) (provider.Provider, error) {
		return models.Open(spec, models.Options{Getenv: func(k string) string { return env[k] }})
	}
}

// TestUnknownWindowCondensesAtTheDefault: a model that neither the tables,
// the config nor its server state a window for (an OpenAI-compatible
// server without /models) is given the conservative default, and a
// history past it is condensed instead of growing without end.
func TestUnknownWindowCondensesAtTheDefault(t *testing.T) {
	srv := scripted.New(t)
	srv.Enqueue(
		scripted.Reply(scripted.Text(strings.Repeat("long answer ", 12_000))), // ~36k tokens
		scripted.Reply(scripted.Text("the summary")),                          // the condense request
		scripted.Reply(scripted.Text("short answer")),
	)
	h := newHost(t, Config{Store: openStore(t), OpenModel: scriptedEnv(srv), Model: "openai:my-local-model"})
	ctx := context.Background()
	for _, p := range []string{"first", "second"} {
		if _, err := h.Submit(ctx, p, Follow{}); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(kindsOf(h.Conversation().UI()), string(messages.SayCondenseContext)) {
		t.Fatalf("no condense: %s", kindsOf(h.Conversation().UI()))
	}
	reqs := srv.Requests()
	if last := string(reqs[len(reqs)-1].Raw); !strings.Contains(last, "the summary") || strings.Contains(last, "long answer long answer") {
		t.Fatal("the request after the condense does not start from the summary")
	}
}

// TestContextExceededCondensesAndRetries: when the model's server refuses
// a request as longer than its context window (in OpenAI's and Anthropic's
// own words), the task condenses the history, says so, and asks again with
// a smaller request; the turn does not fail for size.
func TestContextExceededCondensesAndRetries(t *testing.T) {
	for _, model := range []string{"openai:gpt-4.1", "anthropic:claude-sonnet-4-5"} {
		t.Run(model, func(t *testing.T) {
			srv := scripted.New(t)
			srv.Enqueue(
				scripted.Reply(scripted.Text(strings.Repeat("earlier work ", 2000))),
				scripted.ContextExceeded(),
				scripted.Reply(scripted.Text("the summary")), // the condense request
				scripted.Reply(scripted.Text("It fits now.")),
			)
			h := newHost(t, Config{Store: openStore(t), OpenModel: scriptedEnv(srv), Model: model})
			ctx := context.Background()
			if _, err := h.Submit(ctx, "first", Follow{}); err != nil {
				t.Fatal(err)
			}
			res, err := h.Submit(ctx, "second", Follow{})
			if err != nil {
				t.Fatalf("the turn failed for size: %v", err)
			}
			if !strings.Contains(res.Text, "It fits now.") {
				t.Errorf("answer %q", res.Text)
			}
			reqs := srv.Requests()
			refused, retried := reqs[1], reqs[len(reqs)-1]
			if len(retried.Raw) >= len(refused.Raw) || !strings.Contains(string(retried.Raw), "the summary") {
				t.Errorf("the retried request (%d bytes) is not the condensed history (the refused one: %d bytes)", len(retried.Raw), len(refused.Raw))
			}
			told := false
			for _, m := range h.Conversation().UI() {
				told = told || m.Say == messages.SayAPIReqRetryDelayed && strings.Contains(m.Text, "longer than the model's context window")
			}
			if !told {
				t.Errorf("the user was not told: %s", kindsOf(h.Conversation().UI()))
			}
		})
	}
}

func kindsOf(ui []messages.UIMessage) string {
	var ks []string
	for _, m := range ui {
		k := string(m.Say)
		if m.Type == messages.TypeAsk {
			k = string(m.Ask)
		}
		ks = append(ks, k)
	}
	return strings.Join(ks, ",")
}

// TestCondenseAfterToolsOnBothWires: a history that holds tool calls and
// their results condenses on both wire formats. Anthropic's API refuses a
// request with tool_use or tool_result blocks that defines no tools, and
// the scripted server refuses it as the API does: the summary request
// gives the calls and results to the model as text.
func TestCondenseAfterToolsOnBothWires(t *testing.T) {
	for _, model := range []string{"openai:gpt-4.1", "anthropic:claude-sonnet-4-5"} {
		t.Run(model, func(t *testing.T) {
			srv := scripted.New(t)
			srv.Enqueue(
				scripted.Reply(scripted.ToolCall("toolu_1", "list_files", `{"path":"."}`)),
				scripted.Reply(scripted.Text(strings.Repeat("earlier work ", 2000))),
				scripted.ContextExceeded(),
				scripted.Reply(scripted.Text("the summary")), // the condense request
				scripted.Reply(scripted.Text("It fits now.")),
			)
			h := newHost(t, Config{Store: openStore(t), OpenModel: scriptedEnv(srv), Model: model})
			ctx := context.Background()
			if _, err := h.Submit(ctx, "first", Follow{}); err != nil {
				t.Fatal(err)
			}
			res, err := h.Submit(ctx, "second", Follow{})
			if err != nil {
				t.Fatal(err)
			}
			ui := h.Conversation().UI()
			if k := kindsOf(ui); !strings.Contains(k, string(messages.SayCondenseContext)) || strings.Contains(k, string(messages.SayCondenseContextError)) {
				for _, m := range ui {
					if m.Say == messages.SayCondenseContextError {
						t.Log(m.Text)
					}
				}
				t.Fatalf("no clean condense: %s", k)
			}
			if !strings.Contains(res.Text, "It fits now.") {
				t.Errorf("answer %q", res.Text)
			}
			reqs := srv.Requests()
			summary := string(reqs[3].Raw)
			if !strings.Contains(summary, "list_files") {
				t.Errorf("the summary request does not show the tool call: %s", summary)
			}
		})
	}
}
