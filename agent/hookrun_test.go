package agent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/hooks"
	"github.com/agentkernel/agentkernel/messages"
)

// withHooks configures hooks from a JSON hooks object in which SCRIPTS
// stands for the test's script directory; the scripts are written there.
func withHooks(t *testing.T, cfgJSON string, scripts map[string]string) (func(*agent.Config), string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var c hooks.Config
	if err := json.Unmarshal([]byte(strings.ReplaceAll(cfgJSON, "SCRIPTS", dir)), &c); err != nil {
		t.Fatal(err)
	}
	return func(cfg *agent.Config) {
		cfg.Hooks = hooks.New(hooks.Options{Config: c, Workspace: cfg.Toolbox.Workspace().Root()})
	}, dir
}

// lastToolResult returns the text of the tool_result the last request
// carried.
func lastToolResult(t *testing.T, req provider.Request) (string, bool) {
	t.Helper()
	last := req.Messages[len(req.Messages)-1]
	for _, b := range last.Content {
		if b.Type == messages.BlockToolResult {
			return b.Content[0].Text, b.IsError
		}
	}
	t.Fatalf("the last message carries no tool_result: %+v", last)
	return "", false
}

func (e *env) eventsOf(kind agent.EventKind) []agent.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []agent.Event
	for _, ev := range e.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

func TestPreToolUseHookBlocks(t *testing.T) {
	cfg, dir := withHooks(t, `{"PreToolUse": [{"matcher": "write_file|execute_code",
		"hooks": [{"type": "command", "command": "SCRIPTS/guard.sh"}]}]}`,
		map[string]string{"guard.sh": `cat > "$(dirname "$0")/input.json"; echo "no writes on Fridays" >&2; exit 2`})
	asked := 0
	e := newEnv(t, setup{
		turns: []turn{
			{events: []provider.Event{call("c1", "write_file", map[string]any{"path": "out.txt", "content": "x"}), done(provider.StopToolUse)}},
			say("ok, I will not"),
		},
		answer: func(*env, messages.UIMessage) { asked++ },
		cfg:    cfg,
	})
	if _, err := e.run("write a file"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "out.txt")); !os.IsNotExist(err) {
		t.Fatalf("the blocked call ran: %v", err)
	}
	if asked != 0 {
		t.Errorf("asked %d times about a blocked call", asked)
	}
	text, isErr := lastToolResult(t, e.model.reqs()[1])
	if !isErr || !strings.Contains(text, "no writes on Fridays") {
		t.Errorf("tool result %q (error %v)", text, isErr)
	}
	var in map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "input.json"))
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatalf("hook input %q: %v", b, err)
	}
	if in["hook_event_name"] != "PreToolUse" || in["tool_name"] != "write_file" || in["session_id"] != e.id ||
		in["tool_use_id"] != "c1" || in["cwd"] != e.dir || in["permission_mode"] != "default" {
		t.Errorf("hook input %s", b)
	}
	if ti, _ := in["tool_input"].(map[string]any); ti["path"] != "out.txt" {
		t.Errorf("tool_input %v", in["tool_input"])
	}
	if n := len(e.eventsOf(agent.EventHookBlocked)); n != 1 {
		t.Errorf("%d hookBlocked events", n)
	}
	if started := e.eventsOf(agent.EventToolStarted); len(started) != 0 {
		t.Errorf("the blocked call started: %+v", started)
	}
	found := false
	for _, m := range e.task.UI() {
		found = found || (m.Say == messages.SayError && m.Decision != nil && strings.Contains(m.Text, "no writes on Fridays"))
	}
	if !found {
		t.Errorf("no denial in the UI history: %s", kinds(e.task.UI()))
	}
	e.checkStored()
}

func TestPreToolUseHookApproves(t *testing.T) {
	cfg, _ := withHooks(t, `{"PreToolUse": [{"hooks": [{"type": "command", "command": "SCRIPTS/ok.sh"}]}]}`,
		map[string]string{"ok.sh": `echo '{"decision": "approve", "reason": "reviewed"}'`})
	asked := 0
	e := newEnv(t, setup{
		turns: []turn{
			{events: []provider.Event{call("c1", "write_file", map[string]any{"path": "out.txt", "content": "x"}),
				call("c2", "write_file", map[string]any{"path": ".env", "content": "KEY=1"}), done(provider.StopToolUse)}},
			say("done"),
		},
		answer: func(*env, messages.UIMessage) { asked++ },
		cfg:    cfg,
	})
	if _, err := e.run("write files"); err != nil {
		t.Fatal(err)
	}
	if asked != 0 {
		t.Errorf("asked %d times about an approved call", asked)
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "out.txt")); err != nil || string(b) != "x" {
		t.Errorf("approved write: %q %v", b, err)
	}
	// An approval does not lift a hard refusal.
	if _, err := os.Stat(filepath.Join(e.dir, ".env")); !os.IsNotExist(err) {
		t.Errorf("the protected file was written: %v", err)
	}
	started, finished := e.eventsOf(agent.EventToolStarted), e.eventsOf(agent.EventToolFinished)
	if len(started) != 1 || len(finished) != 1 || finished[0].Tool != "write_file" || finished[0].ToolID != "c1" || finished[0].Failed {
		t.Errorf("tool events: started %+v finished %+v", started, finished)
	}
}

func TestPostToolUseHookSeesTheResultAndAddsToIt(t *testing.T) {
	cfg, dir := withHooks(t, `{"PostToolUse": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "SCRIPTS/post.sh"}]}]}`,
		map[string]string{"post.sh": `cat > "$(dirname "$0")/input.json"; echo "remember to run the tests" >&2; exit 2`})
	e := newEnv(t, setup{
		mode: agent.PermissionAcceptEdits,
		turns: []turn{
			{events: []provider.Event{call("c1", "write_file", map[string]any{"path": "out.txt", "content": "x"}), done(provider.StopToolUse)}},
			say("ok"),
		},
		cfg: cfg,
	})
	if _, err := e.run("write a file"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "out.txt")); err != nil {
		t.Fatalf("the call did not run: %v", err)
	}
	text, _ := lastToolResult(t, e.model.reqs()[1])
	if !strings.Contains(text, "PostToolUse hook: remember to run the tests") {
		t.Errorf("tool result %q", text)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "input.json"))
	var in struct {
		Event    string `json:"hook_event_name"`
		Response struct {
			Output  string `json:"output"`
			IsError bool   `json:"is_error"`
		} `json:"tool_response"`
	}
	if err := json.Unmarshal(b, &in); err != nil || in.Event != "PostToolUse" || in.Response.Output == "" {
		t.Errorf("hook input %s (%v)", b, err)
	}
}

func TestUserPromptSubmitHook(t *testing.T) {
	cfg, _ := withHooks(t, `{"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "SCRIPTS/prompt.sh"}]}],
		"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "SCRIPTS/start.sh"}]}]}`,
		map[string]string{
			"prompt.sh": `if grep -q password; then echo "prompts must not carry passwords" >&2; exit 2; fi; echo "branch: main"`,
			"start.sh":  `echo "started" >> "$(dirname "$0")/starts"; echo "project: demo"`,
		})
	e := newEnv(t, setup{turns: []turn{say("hi")}, cfg: cfg})
	if _, err := e.run("my password is hunter2"); err != nil {
		t.Fatal(err)
	}
	if n := len(e.model.reqs()); n != 0 {
		t.Fatalf("a blocked prompt reached the model (%d requests)", n)
	}
	ui := e.task.UI()
	if len(e.task.API()) != 0 || len(ui) != 1 || ui[0].Say != messages.SayError || !strings.Contains(ui[0].Text, "prompts must not carry passwords") {
		t.Fatalf("after a blocked prompt: ui %+v api %+v", ui, e.task.API())
	}
	if _, err := e.run("hello"); err != nil {
		t.Fatal(err)
	}
	reqs := e.model.reqs()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	sent := reqs[0].Messages[0].Content[0].Text
	if !strings.HasPrefix(sent, "project: demo\n\nbranch: main\n\n") || !strings.HasSuffix(sent, "hello") {
		t.Errorf("sent %q", sent)
	}
	// The first prompt that went through is the session's first message.
	if ui := e.task.UI(); ui[1].Say != messages.SayText || ui[1].Text != "hello" {
		t.Errorf("ui %s", kinds(ui))
	}
}

func TestStopHookMakesTheModelGoOn(t *testing.T) {
	cfg, dir := withHooks(t, `{"Stop": [{"hooks": [{"type": "command", "command": "SCRIPTS/stop.sh"}]}]}`,
		map[string]string{"stop.sh": `cat >> "$(dirname "$0")/inputs"; echo >> "$(dirname "$0")/inputs"
if [ ! -e "$(dirname "$0")/once" ]; then touch "$(dirname "$0")/once"; echo "the tests were not run" >&2; exit 2; fi`})
	e := newEnv(t, setup{turns: []turn{say("done"), say("ran them, all pass")}, cfg: cfg})
	if _, err := e.run("fix it"); err != nil {
		t.Fatal(err)
	}
	reqs := e.model.reqs()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != messages.RoleUser || !strings.Contains(last.Content[0].Text, "the tests were not run") {
		t.Errorf("second request ends with %+v", last)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "inputs"))
	lines := strings.Fields(strings.ReplaceAll(string(b), " ", ""))
	if len(lines) != 2 || !strings.Contains(lines[0], `"stop_hook_active":false`) || !strings.Contains(lines[1], `"stop_hook_active":true`) {
		t.Errorf("Stop inputs %s", b)
	}
	e.checkStored()
}

func TestStopHookOnCompletion(t *testing.T) {
	cfg, _ := withHooks(t, `{"Stop": [{"hooks": [{"type": "command", "command": "SCRIPTS/stop.sh"}]}]}`,
		map[string]string{"stop.sh": `if [ ! -e "$(dirname "$0")/once" ]; then touch "$(dirname "$0")/once"; echo "check the output first" >&2; exit 2; fi`})
	e := newEnv(t, setup{turns: []turn{
		{events: []provider.Event{call("c1", "attempt_completion", map[string]any{"result": "all done"}), done(provider.StopToolUse)}},
		{events: []provider.Event{call("c2", "attempt_completion", map[string]any{"result": "checked, done"}), done(provider.StopToolUse)}},
	}, cfg: cfg})
	if _, err := e.run("finish"); err != nil {
		t.Fatal(err)
	}
	reqs := e.model.reqs()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if text, isErr := lastToolResult(t, reqs[1]); !isErr || !strings.Contains(text, "check the output first") {
		t.Errorf("completion's result %q", text)
	}
	done := e.eventsOf(agent.EventTaskCompleted)
	if len(done) != 1 || done[0].Text != "checked, done" {
		t.Errorf("completed %+v", done)
	}
}

func TestFailingHookIsReportedNotFatal(t *testing.T) {
	cfg, _ := withHooks(t, `{"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "SCRIPTS/broken.sh"}]}]}`,
		map[string]string{"broken.sh": `echo "jq: not found" >&2; exit 127`})
	e := newEnv(t, setup{turns: []turn{say("hi")}, cfg: cfg})
	if _, err := e.run("hello"); err != nil {
		t.Fatal(err)
	}
	if len(e.model.reqs()) != 1 {
		t.Fatal("the prompt did not reach the model")
	}
	failed := e.eventsOf(agent.EventHookFailed)
	if len(failed) != 1 || !strings.Contains(failed[0].Text, "jq: not found") {
		t.Errorf("hookFailed %+v", failed)
	}
	if ui := e.task.UI(); ui[0].Say != messages.SayError || ui[1].Say != messages.SayText {
		t.Errorf("ui %s", kinds(ui))
	}
}
