package openai

import (
	"sort"
	"strings"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// knownModels is the price table (USD per million tokens) and the limits of
// well-known OpenAI models, as published by OpenAI. It is read-only: use
// KnownModel and KnownModels, or Config.Info to override.
var knownModels = map[string]provider.ModelInfo{
	"gpt-4.1":      {ContextWindow: 1_047_576, MaxOutput: 32_768, InputPrice: 2.00, OutputPrice: 8.00, CacheRead: 0.50},
	"gpt-4.1-mini": {ContextWindow: 1_047_576, MaxOutput: 32_768, InputPrice: 0.40, OutputPrice: 1.60, CacheRead: 0.10},
	"gpt-4.1-nano": {ContextWindow: 1_047_576, MaxOutput: 32_768, InputPrice: 0.10, OutputPrice: 0.40, CacheRead: 0.025},
	"gpt-4o":       {ContextWindow: 128_000, MaxOutput: 16_384, InputPrice: 2.50, OutputPrice: 10.00, CacheRead: 1.25},
	"gpt-4o-mini":  {ContextWindow: 128_000, MaxOutput: 16_384, InputPrice: 0.15, OutputPrice: 0.60, CacheRead: 0.075},
	"gpt-5":        {ContextWindow: 400_000, MaxOutput: 128_000, InputPrice: 1.25, OutputPrice: 10.00, CacheRead: 0.125},
	"gpt-5-mini":   {ContextWindow: 400_000, MaxOutput: 128_000, InputPrice: 0.25, OutputPrice: 2.00, CacheRead: 0.025},
	"gpt-5-nano":   {ContextWindow: 400_000, MaxOutput: 128_000, InputPrice: 0.05, OutputPrice: 0.40, CacheRead: 0.005},
	"o3":           {ContextWindow: 200_000, MaxOutput: 100_000, InputPrice: 2.00, OutputPrice: 8.00, CacheRead: 0.50},
	"o3-pro":       {ContextWindow: 200_000, MaxOutput: 100_000, InputPrice: 20.00, OutputPrice: 80.00},
	"o3-mini":      {ContextWindow: 200_000, MaxOutput: 100_000, InputPrice: 1.10, OutputPrice: 4.40, CacheRead: 0.55},
	"o4-mini":      {ContextWindow: 200_000, MaxOutput: 100_000, InputPrice: 1.10, OutputPrice: 4.40, CacheRead: 0.275},
}

// KnownModel returns the table entry for id. A dated snapshot
// ("gpt-4.1-2025-04-14") matches its family ("gpt-4.1"): the longest table
// key that equals id or is followed in id by "-". Models served locally
// (Ollama, vLLM, llama.cpp, LM Studio) are not in the table: they cost
// nothing, and their context window is unknown (0).
func KnownModel(id string) (provider.ModelInfo, bool) {
	best := ""
	for k := range knownModels {
		if (id == k || strings.HasPrefix(id, k+"-")) && len(k) > len(best) {
			best = k
		}
	}
	if best == "" {
		return provider.ModelInfo{ID: id}, false
	}
	m := knownModels[best]
	m.ID = id
	return m, true
}

// KnownModels returns a copy of the table, sorted by id.
func KnownModels() []provider.ModelInfo {
	out := make([]provider.ModelInfo, 0, len(knownModels))
	for k, m := range knownModels {
		m.ID = k
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
