package hostagent_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/surface/webview"
	"github.com/agentkernel/agentkernel/surface/webview/hostagent"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestFirstPromptNamesTheHeader: the first prompt names the session, and
// the mirror reports the title in a settings event (read by its follower,
// off the turn's goroutine); after remove returns, nothing more is
// reported, a change of mode included.
func TestFirstPromptNamesTheHeader(t *testing.T) {
	h := surfacetest.NewHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	titles := make(chan string, 64)
	remove := hostagent.New(h.Host).Mirror.Subscribe(ctx, func(e webview.Event) {
		if e.Kind == webview.EventSettings {
			titles <- e.Title
		}
	})
	h.Script.Enqueue(scripted.Reply(scripted.Text("Done.")))
	if _, err := h.StartPrompt(ctx, agent.Prompt{Text: "Quarterly numbers for the board"}); err != nil {
		t.Fatal(err)
	}
	for named := false; !named; {
		select {
		case title := <-titles:
			named = title != ""
		case <-ctx.Done():
			t.Fatal("no settings event with the session's title")
		}
	}
	remove()
	for len(titles) > 0 {
		<-titles
	}
	if err := h.Modes().SetPermission(ctx, agent.PermissionAcceptEdits); err != nil {
		t.Fatal(err)
	}
	select {
	case title := <-titles:
		t.Fatalf("a settings event (%q) after remove", title)
	case <-time.After(200 * time.Millisecond):
	}
}
