package session

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/anthropic"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestEffortReachesBothWireFormats: the configured effort, and one set
// with SetEffort, reach OpenAI's reasoning_effort and Anthropic's thinking
// budget (with max_tokens above it); off sends neither.
func TestEffortReachesBothWireFormats(t *testing.T) {
	srv := scripted.New(t)
	open := func(spec string) (provider.Provider, error) {
		name, model, _ := strings.Cut(spec, ":")
		if name == "anthropic" {
			return anthropic.New(anthropic.Config{APIKey: "k", BaseURL: srv.AnthropicURL(), Model: model})
		}
		return openai.New(openai.Config{APIKey: "k", BaseURL: srv.OpenAIURL(), Model: model})
	}
	h := newHost(t, Config{Store: openStore(t), Model: "openai:o4-mini", OpenModel: open, Effort: provider.EffortLow})
	ctx := context.Background()
	say := func(text string) map[string]any {
		t.Helper()
		srv.Enqueue(scripted.Reply(scripted.Text("ok")))
		if _, err := h.Submit(ctx, text, Follow{}); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		return reqs[len(reqs)-1].Body
	}
	if b := say("configured"); b["reasoning_effort"] != "low" {
		t.Errorf("the configured effort: reasoning_effort %v", b["reasoning_effort"])
	}
	if err := h.Models().SetEffort(ctx, provider.EffortHigh); err != nil {
		t.Fatal(err)
	}
	if b := say("high"); b["reasoning_effort"] != "high" {
		t.Errorf("effort high: reasoning_effort %v", b["reasoning_effort"])
	}
	if err := h.Models().Set(ctx, "anthropic:claude-sonnet-4-5"); err != nil {
		t.Fatal(err)
	}
	b := say("on claude")
	thinking, _ := b["thinking"].(map[string]any)
	num := func(v any) int64 {
		n, _ := v.(json.Number).Int64()
		return n
	}
	budget, maxTokens := num(thinking["budget_tokens"]), num(b["max_tokens"])
	if thinking["type"] != "enabled" || budget != int64(provider.EffortBudget(provider.EffortHigh)) || maxTokens <= budget {
		t.Errorf("effort high on Anthropic: thinking %v, max_tokens %v", thinking, maxTokens)
	}
	if err := h.Models().SetEffort(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if b := say("off"); b["thinking"] != nil {
		t.Errorf("effort off still thinks: %v", b["thinking"])
	}
	if h.Models().Effort() != "" {
		t.Errorf("Effort() = %q after off", h.Models().Effort())
	}
}
