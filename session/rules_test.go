package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/mcp"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestRulesReachTheModel: the workspace's AGENTS.md reaches the system
// prompt; a rule scoped to the backing kernel's language reaches it, one
// scoped to another kernel does not; an edit applies from the next turn;
// and each request's api_req_started names the files it used.
func TestRulesReachTheModel(t *testing.T) {
	srv, open := scriptedModels(t)
	ws := t.TempDir()
	user := t.TempDir()
	write := func(p, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, "AGENTS.md"), "Always answer in French.")
	write(filepath.Join(ws, ".agentkernel", "rules", "py.md"), "---\nkernels: python\n---\nUse polars, not pandas.")
	write(filepath.Join(ws, ".agentkernel", "rules", "r.md"), "---\nkernels: ir\n---\nUse the tidyverse.")
	write(filepath.Join(user, "rules", "plan.md"), "---\nmodes: plan\n---\nOnly plan.")
	h := newHost(t, Config{Store: openStore(t), Workspace: ws, Model: "openai:m", OpenModel: open, MCP: mcp.Options{UserDir: user}})
	ctx := context.Background()
	srv.Enqueue(scripted.Reply(scripted.Text("Oui.")), scripted.Reply(scripted.Text("D'accord.")))
	if _, err := h.Submit(ctx, "hello", Follow{}); err != nil {
		t.Fatal(err)
	}
	system := func(i int) string {
		msgs, _ := srv.Requests()[i].Body["messages"].([]any)
		first, _ := msgs[0].(map[string]any)
		s, _ := first["content"].(string)
		return s
	}
	sys := system(0)
	if !strings.HasPrefix(sys, "You are a coding agent in a Jupyter notebook") || !strings.Contains(sys, "You can run code") || !strings.Contains(sys, "Always answer in French.") ||
		!strings.Contains(sys, "Use polars, not pandas.") {
		t.Errorf("the system prompt lacks the rules:\n%s", sys)
	}
	if strings.Contains(sys, "tidyverse") || strings.Contains(sys, "Only plan.") {
		t.Errorf("rules of another kernel or mode reached it:\n%s", sys)
	}
	var started []string
	for _, m := range h.Conversation().UI() {
		if m.Say == messages.SayAPIReqStarted {
			started = append(started, m.Text)
		}
	}
	var rec struct{ Rules []string }
	if len(started) != 1 || json.Unmarshal([]byte(started[0]), &rec) != nil || len(rec.Rules) != 2 ||
		!strings.HasSuffix(rec.Rules[0], "AGENTS.md") || !strings.HasSuffix(rec.Rules[1], "py.md") {
		t.Errorf("api_req_started %q, want the two rule files", started)
	}

	// In plan mode, with AGENTS.md edited, the next turn has the new set.
	write(filepath.Join(ws, "AGENTS.md"), "Always answer in German.")
	if err := h.Modes().SetPermission(ctx, agent.PermissionPlan); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Submit(ctx, "again", Follow{}); err != nil {
		t.Fatal(err)
	}
	sys = system(1)
	if !strings.Contains(sys, "German") || strings.Contains(sys, "French") || !strings.Contains(sys, "Only plan.") {
		t.Errorf("the second turn's system prompt:\n%s", sys)
	}
	applying, all, rc, problems := h.Modes().Rules(ctx)
	if len(applying) != 3 || len(all) != 4 || rc.Language != "python" || rc.Mode != "plan" || len(problems) != 0 {
		t.Errorf("Rules: %d applying of %d, context %+v, problems %v", len(applying), len(all), rc, problems)
	}
}
