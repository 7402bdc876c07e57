package webview

import (
	"context"
	"testing"
)

// slowMentions is a fakeAgent with completions of a mention that wait
// until release is closed.
type slowMentions struct {
	*fakeAgent
	release chan struct{}
}

func (s slowMentions) CompleteMention(ctx context.Context, prefix string, limit int) ([]MentionCompletion, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return []MentionCompletion{{Mention: prefix + "f", Kind: "variable", Detail: "DataFrame (3, 2)"}}, nil
}

// TestCompleteMentionDoesNotHoldTheClient: a completeMention whose
// answer is slow in coming (a kernel slow to list its names) holds up
// none of the client's next frames: a getState sent after it is answered
// first, and the completions come when the Agent gives them, to that
// client, with the prefix they answer.
func TestCompleteMentionDoesNotHoldTheClient(t *testing.T) {
	a := slowMentions{fakeAgent: newFake(), release: make(chan struct{})}
	parts := a.parts()
	parts.Mentions = a
	s := startServer(t, parts, Options{})
	c := dial(t, s)
	c.until("state")
	c.send(map[string]any{"type": "completeMention", "id": "m1", "prefix": "d"})
	c.send(map[string]any{"type": "getState"})
	c.until("state") // while the completions wait
	close(a.release)
	f := c.until("mentionCompletions")
	list, _ := f["completions"].([]any)
	if f["id"] != "m1" || f["prefix"] != "d" || len(list) != 1 || list[0].(map[string]any)["mention"] != "df" {
		t.Fatalf("mentionCompletions %v", f)
	}
}
