// Package agentstore adapts *store.Store to the agent's Store interface
// (agent.Store): the agent defines what it needs from persistence in its own
// terms and does not import the store; this package is the seam.
package agentstore

import (
	"context"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/rewind"
	"github.com/agentkernel/agentkernel/store"
)

// Adapter is a *store.Store seen as an agent.Store.
type Adapter struct{ *store.Store }

// New returns s as an agent.Store.
func New(s *store.Store) Adapter { return Adapter{s} }

// ApplyRewind stores a rewind of the histories oldUI/oldAPI.
func (a Adapter) ApplyRewind(ctx context.Context, sessionID string, oldUI []messages.UIMessage, oldAPI []messages.APIMessage, res rewind.Result) error {
	return a.Store.ApplyRewind(ctx, sessionID, store.Histories{UI: oldUI, API: oldAPI}, res)
}

// RewriteAPI replaces the API history and appends announce.
func (a Adapter) RewriteAPI(ctx context.Context, sessionID string, oldUI []messages.UIMessage, oldAPI []messages.APIMessage,
	newAPI []messages.APIMessage, announce messages.UIMessage) error {
	return a.Store.RewriteAPI(ctx, sessionID, store.Histories{UI: oldUI, API: oldAPI}, newAPI, announce)
}

// AddUsage adds one request's tokens and cost to the session's totals.
func (a Adapter) AddUsage(ctx context.Context, sessionID string, u provider.Usage, cost float64) error {
	return a.Store.AddUsage(ctx, sessionID, store.Usage{
		TokensIn: int64(u.InputTokens), TokensOut: int64(u.OutputTokens),
		CacheReads: int64(u.CacheReadTokens), CacheWrites: int64(u.CacheWriteTokens), Cost: cost,
	})
}
