package anthropic

import (
	"sort"
	"strings"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// knownModels is the price table (USD per million tokens; cache writes at
// the 5-minute rate) and the limits of Anthropic's models, as published by
// Anthropic. It is read-only: use KnownModel and KnownModels, or
// Config.Info to override.
var knownModels = map[string]provider.ModelInfo{
	"claude-opus-4-5":   {ContextWindow: 200_000, MaxOutput: 64_000, InputPrice: 5, OutputPrice: 25, CacheRead: 0.50, CacheWrite: 6.25},
	"claude-opus-4-1":   {ContextWindow: 200_000, MaxOutput: 32_000, InputPrice: 15, OutputPrice: 75, CacheRead: 1.50, CacheWrite: 18.75},
	"claude-opus-4":     {ContextWindow: 200_000, MaxOutput: 32_000, InputPrice: 15, OutputPrice: 75, CacheRead: 1.50, CacheWrite: 18.75},
	"claude-opus-4-0":   {ContextWindow: 200_000, MaxOutput: 32_000, InputPrice: 15, OutputPrice: 75, CacheRead: 1.50, CacheWrite: 18.75},
	"claude-sonnet-4-5": {ContextWindow: 200_000, MaxOutput: 64_000, InputPrice: 3, OutputPrice: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"claude-sonnet-4":   {ContextWindow: 200_000, MaxOutput: 64_000, InputPrice: 3, OutputPrice: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"claude-sonnet-4-0": {ContextWindow: 200_000, MaxOutput: 64_000, InputPrice: 3, OutputPrice: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"claude-3-7-sonnet": {ContextWindow: 200_000, MaxOutput: 64_000, InputPrice: 3, OutputPrice: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"claude-haiku-4-5":  {ContextWindow: 200_000, MaxOutput: 64_000, InputPrice: 1, OutputPrice: 5, CacheRead: 0.10, CacheWrite: 1.25},
	"claude-3-5-haiku":  {ContextWindow: 200_000, MaxOutput: 8_192, InputPrice: 0.80, OutputPrice: 4, CacheRead: 0.08, CacheWrite: 1},
}

// KnownModel returns the table entry for id. A dated snapshot
// ("claude-sonnet-4-5-20250929") or alias ("claude-3-7-sonnet-latest")
// matches its family: the longest table key that equals id or is followed
// in id by "-".
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
