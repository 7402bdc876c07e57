package anthropic

import (
	"github.com/agentkernel/agentkernel/agent/provider"
)

// knownModels is the price table (USD per million tokens; cache writes at
// the 5-minute rate) and the limits of Anthropic's models, as published by
// Anthropic. It is read-only: use KnownModel, or
// Config.Info to override.
var knownModels = provider.PriceTable{
	"claude-opus-4-5":   {ContextWindow: 200_000, MaxOutput: 64_000, InputPrice: 5, OutputPrice: 25, CacheRead: 0.50, CacheWrite: 6.25, Vision: true},
	"claude-opus-4-1":   {ContextWindow: 200_000, MaxOutput: 32_000, InputPrice: 15, OutputPrice: 75, CacheRead: 1.50, CacheWrite: 18.75, Vision: true},
	"claude-opus-4":     {ContextWindow: 200_000, MaxOutput: 32_000, InputPrice: 15, OutputPrice: 75, CacheRead: 1.50, CacheWrite: 18.75, Vision: true},
	"claude-opus-4-0":   {ContextWindow: 200_000, MaxOutput: 32_000, InputPrice: 15, OutputPrice: 75, CacheRead: 1.50, CacheWrite: 18.75, Vision: true},
	"claude-sonnet-4-5": {ContextWindow: 200_000, MaxOutput: 64_000, InputPrice: 3, OutputPrice: 15, CacheRead: 0.30, CacheWrite: 3.75, Vision: true},
	"claude-sonnet-4":   {ContextWindow: 200_000, MaxOutput: 64_000, InputPrice: 3, OutputPrice: 15, CacheRead: 0.30, CacheWrite: 3.75, Vision: true},
	"claude-sonnet-4-0": {ContextWindow: 200_000, MaxOutput: 64_000, InputPrice: 3, OutputPrice: 15, CacheRead: 0.30, CacheWrite: 3.75, Vision: true},
	"claude-3-7-sonnet": {ContextWindow: 200_000, MaxOutput: 64_000, InputPrice: 3, OutputPrice: 15, CacheRead: 0.30, CacheWrite: 3.75, Vision: true},
	"claude-haiku-4-5":  {ContextWindow: 200_000, MaxOutput: 64_000, InputPrice: 1, OutputPrice: 5, CacheRead: 0.10, CacheWrite: 1.25, Vision: true},
	"claude-3-5-haiku":  {ContextWindow: 200_000, MaxOutput: 8_192, InputPrice: 0.80, OutputPrice: 4, CacheRead: 0.08, CacheWrite: 1},
}

// KnownModel returns the price table entry for id (see
// provider.PriceTable.Lookup: a dated snapshot matches its family).
func KnownModel(id string) (provider.ModelInfo, bool) { return knownModels.Lookup(id) }
