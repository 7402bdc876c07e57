package openai

import (
	"github.com/agentkernel/agentkernel/agent/provider"
)

// knownModels is the price table (USD per million tokens) and the limits of
// well-known OpenAI models, as published by OpenAI. It is read-only: use
// KnownModel, or Config.Info to override.
var knownModels = provider.PriceTable{
	"gpt-4.1":      {ContextWindow: 1_047_576, MaxOutput: 32_768, InputPrice: 2.00, OutputPrice: 8.00, CacheRead: 0.50, Vision: true},
	"gpt-4.1-mini": {ContextWindow: 1_047_576, MaxOutput: 32_768, InputPrice: 0.40, OutputPrice: 1.60, CacheRead: 0.10, Vision: true},
	"gpt-4.1-nano": {ContextWindow: 1_047_576, MaxOutput: 32_768, InputPrice: 0.10, OutputPrice: 0.40, CacheRead: 0.025, Vision: true},
	"gpt-4o":       {ContextWindow: 128_000, MaxOutput: 16_384, InputPrice: 2.50, OutputPrice: 10.00, CacheRead: 1.25, Vision: true},
	"gpt-4o-mini":  {ContextWindow: 128_000, MaxOutput: 16_384, InputPrice: 0.15, OutputPrice: 0.60, CacheRead: 0.075, Vision: true},
	"gpt-5":        {ContextWindow: 400_000, MaxOutput: 128_000, InputPrice: 1.25, OutputPrice: 10.00, CacheRead: 0.125, Vision: true},
	"gpt-5-mini":   {ContextWindow: 400_000, MaxOutput: 128_000, InputPrice: 0.25, OutputPrice: 2.00, CacheRead: 0.025, Vision: true},
	"gpt-5-nano":   {ContextWindow: 400_000, MaxOutput: 128_000, InputPrice: 0.05, OutputPrice: 0.40, CacheRead: 0.005, Vision: true},
	"o3":           {ContextWindow: 200_000, MaxOutput: 100_000, InputPrice: 2.00, OutputPrice: 8.00, CacheRead: 0.50, Vision: true},
	"o3-pro":       {ContextWindow: 200_000, MaxOutput: 100_000, InputPrice: 20.00, OutputPrice: 80.00, Vision: true},
	"o3-mini":      {ContextWindow: 200_000, MaxOutput: 100_000, InputPrice: 1.10, OutputPrice: 4.40, CacheRead: 0.55},
	"o4-mini":      {ContextWindow: 200_000, MaxOutput: 100_000, InputPrice: 1.10, OutputPrice: 4.40, CacheRead: 0.275, Vision: true},
}

// KnownModel returns the price table entry for id (see
// provider.PriceTable.Lookup: a dated snapshot matches its family).
func KnownModel(id string) (provider.ModelInfo, bool) { return knownModels.Lookup(id) }
