package session

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/backing"
)

// ErrNoCompletions is returned by Complete when no model is configured:
// completions are off.
var ErrNoCompletions = errors.New("session: no model for completions")

// namespaceWait bounds how long a completion waits for the kernel's
// namespace: a kernel busy with a cell answers after it, and the
// completion goes without.
const namespaceWait = 300 * time.Millisecond

// Complete returns what the user's cell goes on with at the cursor (inline
// completion): the completion model (Config.CompletionModel, else the
// session's), told the cell, the cells around it and the live kernel's
// namespace, asked quietly. Nothing reaches the history; the cost is
// counted in the current session's totals when there is one. ctx ends it
// (the user typed on).
func (m *Models) Complete(ctx context.Context, r agent.CompletionRequest) (string, error) {
	model := cmp.Or(strings.TrimSpace(m.set.completion), m.Model())
	prov, err := m.provider(model)
	if err != nil {
		return "", err
	}
	if prov == nil {
		return "", ErrNoCompletions
	}
	if run := m.quiet; run != nil && run.Running() {
		nctx, cancel := context.WithTimeout(ctx, namespaceWait)
		vars, err := backing.Namespace(nctx, run)
		cancel()
		if err == nil {
			for _, v := range vars {
				r.Namespace = append(r.Namespace, v.Describe())
			}
		}
		var li struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(run.LanguageInfo(ctx), &li) == nil && r.Language == "" {
			r.Language = li.Name
		}
	}
	text, u, err := agent.Complete(ctx, prov, r)
	if u != (provider.Usage{}) {
		c := m.host.active()
		if c != nil {
			c.task.Charge(context.WithoutCancel(ctx), u, prov.Model().Cost(u))
		}
	}
	return text, err
}
