package acp

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/store"
)

// TestNoModel: with no model configured, a prompt's answer is how to
// configure one, and the turn ends as any other (no JSON-RPC error, which
// a client such as Jupyter AI's chat shows as a failure with a traceback).
func TestNoModel(t *testing.T) {
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	h := session.New(session.Config{Store: st, Runner: &surfacetest.Runner{}, Workspace: t.TempDir(), Kind: "test"})
	t.Cleanup(func() {
		h.Close()
		st.Close()
	})
	e := &editor{open: func(string) (*session.Host, func() error, error) { return h, func() error { return nil }, nil },
		cwd: t.TempDir()}
	ctx := context.Background()
	if err := e.connect(ctx, func(c *sdk.ClientSideConnection) error {
		resp, err := c.NewSession(ctx, sdk.NewSessionRequest{Cwd: e.cwd, McpServers: []sdk.McpServer{}})
		e.sid = resp.SessionId
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	turn, err := e.Prompt(ctx, "hello?")
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	if !strings.Contains(turn.Text, agent.NoModelHelp) {
		t.Fatalf("the answer %q does not say how to configure a model", turn.Text)
	}
}
