package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider/scripted"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/rules"
)

// TestUserModeToolList: a user-defined mode (a workspace file) is offered
// only its tools, its instructions reach the system prompt, and a call of
// another tool is refused without running; a config file's mode sets its
// permission mode; code mode has every tool again.
func TestUserModeToolList(t *testing.T) {
	srv, open := scriptedModels(t)
	ws := t.TempDir()
	p := filepath.Join(ws, ".agentkernel", "modes", "reviewer.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("---\ndescription: reviews, never runs\ntools: read, attempt_completion\n---\nReview the code and list the problems.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &fakeRunner{}
	h := newHost(t, Config{Store: openStore(t), Workspace: ws, Runner: r, Model: "openai:m", OpenModel: open,
		PermissionMode: agent.ModeBypassPermissions,
		Modes:          map[string]rules.Mode{"cautious": {Description: "asks first", PermissionMode: "default"}}})
	ctx := context.Background()
	if _, err := h.SetAgentMode(ctx, "reviewer"); err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("c1", "execute_code", `{"code":"print(1)"}`)),
		scripted.Reply(scripted.Text("I may not run code here.")),
	)
	if _, err := h.Submit(ctx, "review please", Turn{}); err != nil {
		t.Fatal(err)
	}
	req := srv.Requests()[0].Body
	var tools []string
	for _, tl := range req["tools"].([]any) {
		fn := tl.(map[string]any)["function"].(map[string]any)
		tools = append(tools, fn["name"].(string))
	}
	slices.Sort(tools)
	if want := []string{"attempt_completion", "list_files", "read_file", "search_files"}; !slices.Equal(tools, want) {
		t.Errorf("reviewer mode offered %v, want %v", tools, want)
	}
	msgs := req["messages"].([]any)
	if sys, _ := msgs[0].(map[string]any)["content"].(string); !strings.Contains(sys, "# Mode: reviewer") || !strings.Contains(sys, "list the problems") {
		t.Errorf("the system prompt lacks the mode's instructions:\n%s", sys)
	}
	if len(r.code) != 0 {
		t.Errorf("code ran in reviewer mode: %q", r.code)
	}
	if hist := texts(h.History()); !strings.Contains(hist, "execute_code is not available in reviewer mode") {
		t.Errorf("the refusal is not in the history:\n%s", hist)
	}

	if _, err := h.SetAgentMode(ctx, "cautious"); err != nil {
		t.Fatal(err)
	}
	if h.Mode() != agent.ModeDefault || h.AgentMode().Name != "cautious" {
		t.Errorf("after the cautious mode: permission mode %s, mode %s", h.Mode(), h.AgentMode().Name)
	}
	if _, err := h.SetAgentMode(ctx, "code"); err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(scripted.Reply(scripted.Text("ok")))
	if _, err := h.Submit(ctx, "back to code", Turn{}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if n := len(reqs[len(reqs)-1].Body["tools"].([]any)); n < 8 {
		t.Errorf("code mode offered %d tools", n)
	}
	if _, err := h.SetAgentMode(ctx, "nonsense"); err == nil || !strings.Contains(err.Error(), "architect") {
		t.Errorf("an unknown mode: %v", err)
	}
}

func texts(ui []messages.UIMessage) string {
	var b strings.Builder
	for _, m := range ui {
		b.WriteString(m.Text + "\n")
	}
	return b.String()
}
