package hostagent

import (
	"context"

	"github.com/agentkernel/agentkernel/surface/webview"
)

// CompleteMention implements webview.MentionCompleter: the host's
// completions (session.Host.CompleteMention), already bounded and clean.
func (p mentions) CompleteMention(ctx context.Context, prefix string, limit int) ([]webview.MentionCompletion, error) {
	list := p.h.CompleteMention(ctx, prefix, limit)
	out := make([]webview.MentionCompletion, len(list))
	for i, c := range list {
		out[i] = webview.MentionCompletion{Mention: c.Mention, Kind: c.Kind, Detail: c.Detail}
	}
	return out, nil
}

var _ webview.MentionCompleter = mentions{}
