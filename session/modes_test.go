package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/rules"
	"github.com/agentkernel/agentkernel/tests/scripted"
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
		PermissionMode: agent.PermissionBypass,
		Modes:          map[string]rules.AgentMode{"cautious": {Description: "asks first", PermissionMode: "default"}}})
	ctx := context.Background()
	if _, err := h.Modes().SetAgent(ctx, "reviewer"); err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("c1", "execute_code", `{"code":"print(1)"}`)),
		scripted.Reply(scripted.Text("I may not run code here.")),
	)
	if _, err := h.Submit(ctx, "review please", Follow{}); err != nil {
		t.Fatal(err)
	}
	req := srv.Requests()[0].Body
	var tools []string
	for _, tl := range req["tools"].([]any) {
		fn := tl.(map[string]any)["function"].(map[string]any)
		tools = append(tools, fn["name"].(string))
	}
	slices.Sort(tools)
	if want := []string{"attempt_completion", "inspect_variable", "list_files", "list_variables", "read_file", "search_files"}; !slices.Equal(tools, want) {
		t.Errorf("reviewer mode offered %v, want %v", tools, want)
	}
	msgs := req["messages"].([]any)
	if sys, _ := msgs[0].(map[string]any)["content"].(string); !strings.Contains(sys, "# Mode: reviewer") || !strings.Contains(sys, "list the problems") {
		t.Errorf("the system prompt lacks the mode's instructions:\n%s", sys)
	}
	if len(r.code) != 0 {
		t.Errorf("code ran in reviewer mode: %q", r.code)
	}
	if hist := texts(h.Conversation().UI()); !strings.Contains(hist, "execute_code is not available in reviewer mode") {
		t.Errorf("the refusal is not in the history:\n%s", hist)
	}

	if _, err := h.Modes().SetAgent(ctx, "cautious"); err != nil {
		t.Fatal(err)
	}
	if h.Modes().Permission() != agent.PermissionDefault || h.Modes().Agent().Name != "cautious" {
		t.Errorf("after the cautious mode: permission mode %s, mode %s", h.Modes().Permission(), h.Modes().Agent().Name)
	}
	if _, err := h.Modes().SetAgent(ctx, "code"); err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(scripted.Reply(scripted.Text("ok")))
	if _, err := h.Submit(ctx, "back to code", Follow{}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if n := len(reqs[len(reqs)-1].Body["tools"].([]any)); n < 8 {
		t.Errorf("code mode offered %d tools", n)
	}
	if _, err := h.Modes().SetAgent(ctx, "nonsense"); err == nil || !strings.Contains(err.Error(), "architect") {
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

// TestRestrictedModesPrompt: the system prompt describes only the tools a
// request offers. In ask and architect (read and interact tools) it does
// not invite code or file changes, and says they cannot be done; in plan mode the tools it would refuse are not offered and the
// prompt says why; in code mode everything is offered and described.
func TestRestrictedModesPrompt(t *testing.T) {
	srv, open := scriptedModels(t)
	h := newHost(t, Config{Store: openStore(t), Workspace: t.TempDir(), Runner: &fakeRunner{}, Model: "openai:m", OpenModel: open})
	ctx := context.Background()
	type sent struct {
		system string
		tools  []string
	}
	ask := func(prompt string) sent {
		t.Helper()
		srv.Enqueue(scripted.Reply(scripted.Text("ok")))
		if _, err := h.Submit(ctx, prompt, Follow{}); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		req := reqs[len(reqs)-1].Body
		var s sent
		for _, tl := range req["tools"].([]any) {
			s.tools = append(s.tools, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
		}
		s.system, _ = req["messages"].([]any)[0].(map[string]any)["content"].(string)
		return s
	}
	forbidden := []string{"execute_code", "write_file", "edit_file", "change them"}
	for _, mode := range []string{"ask", "architect"} {
		if _, err := h.Modes().SetAgent(ctx, mode); err != nil {
			t.Fatal(err)
		}
		s := ask("explain " + mode)
		for _, w := range forbidden {
			if strings.Contains(s.system, w) || slices.Contains(s.tools, w) {
				t.Errorf("%s mode: %q offered or named:\n%s\ntools %v", mode, w, s.system, s.tools)
			}
		}
		if !strings.Contains(s.system, "read_file") || !strings.Contains(s.system, "neither run code nor change files") {
			t.Errorf("%s mode: the prompt does not say what it can and cannot do:\n%s", mode, s.system)
		}
	}
	if _, err := h.Modes().SetAgent(ctx, "code"); err != nil {
		t.Fatal(err)
	}
	if err := h.Modes().SetPermission(ctx, agent.PermissionPlan); err != nil {
		t.Fatal(err)
	}
	s := ask("plan it")
	for _, w := range []string{"execute_code", "write_file", "edit_file"} {
		if slices.Contains(s.tools, w) {
			t.Errorf("plan mode offers %s, which it refuses: %v", w, s.tools)
		}
	}
	if !strings.Contains(s.system, "permission mode is plan") || strings.Contains(s.system, "execute_code") {
		t.Errorf("plan mode's prompt:\n%s", s.system)
	}
	if err := h.Modes().SetPermission(ctx, agent.PermissionDefault); err != nil {
		t.Fatal(err)
	}
	s = ask("now do it")
	for _, w := range []string{"execute_code", "write_file", "edit_file", "propose_cell", "read_file"} {
		if !strings.Contains(s.system, w) || !slices.Contains(s.tools, w) {
			t.Errorf("code mode: %s not offered and described:\n%s\ntools %v", w, s.system, s.tools)
		}
	}
}
