package hooks_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentkernel/agentkernel/hooks"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script writes an executable sh script into dir and returns its path.
func script(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func config(t testing.TB, js string) hooks.Config {
	t.Helper()
	var c hooks.Config
	if err := json.Unmarshal([]byte(js), &c); err != nil {
		t.Fatalf("config %s: %v", js, err)
	}
	return c
}

// one returns a config with one hook for ev.
func one(t testing.TB, ev hooks.Event, matcher, command string, timeout float64) hooks.Config {
	t.Helper()
	b, _ := json.Marshal(map[hooks.Event]any{ev: []any{map[string]any{
		"matcher": matcher, "hooks": []any{map[string]any{"type": "command", "command": command, "timeout": timeout}}}}})
	return config(t, string(b))
}

func preTool(name string) hooks.Input {
	return hooks.Input{Event: hooks.PreToolUse, SessionID: "s1", CWD: "/w", PermissionMode: "default",
		ToolName: name, ToolInput: json.RawMessage(`{"code":"print(1)"}`), ToolUseID: "call_1"}
}

func TestInputOnStdinAndExitZero(t *testing.T) {
	dir := t.TempDir()
	got := filepath.Join(dir, "got.json")
	cmd := script(t, dir, "save.sh", `cat > "`+got+`"; echo "$AGENTKERNEL_PROJECT_DIR" > "`+got+`.dir"; pwd > "`+got+`.pwd"`)
	r := hooks.New(hooks.Options{Config: one(t, hooks.PostToolUse, "", cmd, 0), Workspace: dir})
	in := preTool("execute_code")
	in.Event, in.ToolResponse = hooks.PostToolUse, map[string]any{"output": "1\n", "is_error": false}
	out := r.Run(context.Background(), in)
	if out.Decision != hooks.Continue || out.Ran != 1 || len(out.Problems) != 0 {
		t.Fatalf("outcome %+v", out)
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("stdin %q: %v", b, err)
	}
	want := map[string]any{"session_id": "s1", "cwd": "/w", "permission_mode": "default", "hook_event_name": "PostToolUse",
		"tool_name": "execute_code", "tool_input": map[string]any{"code": "print(1)"}, "tool_use_id": "call_1",
		"tool_response": map[string]any{"output": "1\n", "is_error": false}}
	gb, _ := json.Marshal(m)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Fatalf("stdin\n got %s\nwant %s", gb, wb)
	}
	for _, f := range []string{got + ".dir", got + ".pwd"} {
		if b, _ := os.ReadFile(f); strings.TrimSpace(string(b)) != dir {
			t.Errorf("%s = %q, want %q", filepath.Ext(f), b, dir)
		}
	}
}

func TestEventFields(t *testing.T) {
	for _, tc := range []struct {
		in   hooks.Input
		want []string
		not  []string
	}{
		{hooks.Input{Event: hooks.SessionStart, Source: "resume"}, []string{`"source":"resume"`}, []string{"tool_name", "prompt"}},
		{hooks.Input{Event: hooks.UserPromptSubmit, Prompt: "hi"}, []string{`"prompt":"hi"`}, []string{"tool_name"}},
		{hooks.Input{Event: hooks.Stop, StopHookActive: false}, []string{`"stop_hook_active":false`}, []string{"prompt"}},
		{hooks.Input{Event: hooks.PreToolUse, ToolName: "x", ToolInput: json.RawMessage("not json")}, []string{`"tool_input":{}`}, []string{"tool_response"}},
	} {
		b, err := json.Marshal(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range append(tc.want, `"hook_event_name":"`+string(tc.in.Event)+`"`) {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: %s lacks %s", tc.in.Event, b, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(string(b), n) {
				t.Errorf("%s: %s has %s", tc.in.Event, b, n)
			}
		}
	}
}

func TestDecisions(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body string
		ev         hooks.Event
		decision   hooks.Decision
		reason     string
		context    string
		problem    string
	}{
		{"exit 2 blocks with stderr", `echo "no code on Fridays" >&2; exit 2`, hooks.PreToolUse, hooks.Block, "no code on Fridays", "", ""},
		{"exit 2 without stderr", `exit 2`, hooks.PreToolUse, hooks.Block, "blocked by the hook", "", ""},
		{"json block", `echo '{"decision": "block", "reason": "policy says no"}'`, hooks.PreToolUse, hooks.Block, "policy says no", "", ""},
		{"json approve", `echo '{"decision": "approve", "reason": "fine"}'`, hooks.PreToolUse, hooks.Approve, "", "", ""},
		{"approve means nothing after the call", `echo '{"decision": "approve"}'`, hooks.PostToolUse, hooks.Continue, "", "", ""},
		{"hookSpecificOutput deny", `echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "nope"}}'`, hooks.PreToolUse, hooks.Block, "nope", "", ""},
		{"exit 1 is a problem, not a block", `echo oops >&2; exit 1`, hooks.PreToolUse, hooks.Continue, "", "", "exited with status 1: oops"},
		{"a crash is a problem", `kill -9 $$`, hooks.PreToolUse, hooks.Continue, "", "", "status 137"},
		{"a missing command is a problem", `/nonexistent/hook`, hooks.PreToolUse, hooks.Continue, "", "", "status 127"},
		{"unknown decision", `echo '{"decision": "maybe"}'`, hooks.PreToolUse, hooks.Continue, "", "", `unknown decision "maybe"`},
		{"plain stdout is context for a prompt", `echo "branch: main"`, hooks.UserPromptSubmit, hooks.Continue, "", "branch: main", ""},
		{"additionalContext", `echo '{"hookSpecificOutput": {"additionalContext": "today is Monday"}}'`, hooks.UserPromptSubmit, hooks.Continue, "", "today is Monday", ""},
		{"plain stdout is not context for a tool", `echo hello`, hooks.PreToolUse, hooks.Continue, "", "", ""},
		{"session start cannot block", `echo no >&2; exit 2`, hooks.SessionStart, hooks.Continue, "", "", "cannot block"},
		{"a key in stderr is scrubbed", `echo "the key sk-abcdefghijklmnop is bad" >&2; exit 2`, hooks.PreToolUse, hooks.Block, "the key [REDACTED] is bad", "", ""},
		{"a key in a problem is scrubbed", `echo "api_key=abcdefghijkl" >&2; exit 3`, hooks.PreToolUse, hooks.Continue, "", "", "api_key=[REDACTED]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := script(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".sh", tc.body)
			r := hooks.New(hooks.Options{Config: one(t, tc.ev, "", cmd, 0), Workspace: dir})
			in := preTool("execute_code")
			in.Event = tc.ev
			out := r.Run(context.Background(), in)
			if out.Decision != tc.decision || !strings.Contains(out.Reason, tc.reason) || out.Context != tc.context {
				t.Errorf("outcome %+v, want %q %q %q", out, tc.decision, tc.reason, tc.context)
			}
			if tc.problem == "" && len(out.Problems) != 0 {
				t.Errorf("problems %v", out.Problems)
			}
			if tc.problem != "" && (len(out.Problems) != 1 || !strings.Contains(out.Problems[0].Error(), tc.problem)) {
				t.Errorf("problems %v, want %q", out.Problems, tc.problem)
			}
		})
	}
}

func TestMatchers(t *testing.T) {
	dir := t.TempDir()
	cmd := script(t, dir, "block.sh", `echo blocked >&2; exit 2`)
	for _, tc := range []struct {
		matcher string
		tools   map[string]bool
	}{
		{"", map[string]bool{"execute_code": true, "read_file": true}},
		{"*", map[string]bool{"execute_code": true, "mcp__github__create_issue": true}},
		{"execute_code|write_file", map[string]bool{"execute_code": true, "write_file": true, "read_file": false}},
		{"execute", map[string]bool{"execute_code": false}}, // the whole name must match
		{"mcp__github__.*", map[string]bool{"mcp__github__create_issue": true, "mcp__jira__x": false}},
	} {
		r := hooks.New(hooks.Options{Config: one(t, hooks.PreToolUse, tc.matcher, cmd, 0), Workspace: dir})
		for tool, want := range tc.tools {
			if got := r.Run(context.Background(), preTool(tool)).Decision == hooks.Block; got != want {
				t.Errorf("matcher %q on %s: ran %v, want %v", tc.matcher, tool, got, want)
			}
		}
	}
	// Events without tools ignore the matcher.
	r := hooks.New(hooks.Options{Config: one(t, hooks.UserPromptSubmit, "execute_code", cmd, 0), Workspace: dir})
	if out := r.Run(context.Background(), hooks.Input{Event: hooks.UserPromptSubmit, Prompt: "x"}); out.Decision != hooks.Block {
		t.Errorf("UserPromptSubmit with a matcher: %+v", out)
	}
}

func TestBadConfig(t *testing.T) {
	for js, want := range map[string]string{
		`{"PreToolCall": [{"hooks": [{"type": "command", "command": "x"}]}]}`:                `unknown event "PreToolCall"`,
		`{"PreToolUse": [{"matcher": "(", "hooks": [{"type": "command", "command": "x"}]}]}`: "matcher",
		`{"PreToolUse": [{"hooks": [{"type": "prompt", "command": "x"}]}]}`:                  `only "command" hooks`,
		`{"PreToolUse": [{"hooks": [{"type": "command", "command": " "}]}]}`:                 "empty command",
		`{"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}`:  "negative timeout",
		`{"PreToolUse": [{"matcher": "x"}]}`:                                                 `no "hooks"`,
		`{"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeot": 1}]}]}`:    "unknown field",
		`{"PreToolUse": {"hooks": []}}`:                                                      "cannot unmarshal",
	} {
		var c hooks.Config
		err := json.Unmarshal([]byte(js), &c)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", js, err, want)
		}
	}
}

func TestTimeoutKillsTheHookAndWhatItStarted(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	cmd := script(t, dir, "hang.sh", `sleep 30 & echo $! > "`+pidFile+`"; wait`)
	r := hooks.New(hooks.Options{Config: one(t, hooks.PreToolUse, "", cmd, 0.3), Workspace: dir})
	out := r.Run(context.Background(), preTool("execute_code"))
	if out.Decision != hooks.Continue || len(out.Problems) != 1 || !strings.Contains(out.Problems[0].Error(), "timed out after 300ms") {
		t.Fatalf("outcome %+v", out)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	// The sleep was in the hook's process group: it is gone too (a zombie
	// of init at most).
	if err := exec.Command("sh", "-c", "ps -o stat= -p "+strings.TrimSpace(string(b))+" | grep -qv Z").Run(); err == nil {
		t.Errorf("the hook's child %s survived the timeout", b)
	}
}

func TestCancelKillsHooks(t *testing.T) {
	dir := t.TempDir()
	cmd := script(t, dir, "hang.sh", `sleep 30`)
	r := hooks.New(hooks.Options{Config: one(t, hooks.PreToolUse, "", cmd, 0), Workspace: dir})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if out := r.Run(ctx, preTool("execute_code")); out.Decision != hooks.Continue || len(out.Problems) != 0 {
		t.Fatalf("outcome %+v", out)
	}
}

func TestProjectSettingsAndUserConfigBothRun(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	user := script(t, dir, "user.sh", `echo user >> "`+log+`"`)
	proj := script(t, dir, "proj.sh", `echo project >> "`+log+`"; echo "project says no" >&2; exit 2`)
	r := hooks.New(hooks.Options{Config: one(t, hooks.PreToolUse, "", user, 0), Workspace: dir})
	if out := r.Run(context.Background(), preTool("execute_code")); out.Decision != hooks.Continue || out.Ran != 1 {
		t.Fatalf("without settings: %+v", out)
	}
	settings := filepath.Join(dir, ".agentkernel", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(settings, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		// A later mtime, as an editor's save would give.
		later := time.Now().Add(time.Duration(len(s)) * time.Millisecond)
		if err := os.Chtimes(settings, later, later); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"hooks": {"PreToolUse": [{"matcher": "execute_code", "hooks": [{"type": "command", "command": "` + proj + `"}]}]}, "other": 1}`)
	if !r.Has(hooks.PreToolUse) || r.Has(hooks.Stop) {
		t.Errorf("Has: %v %v", r.Has(hooks.PreToolUse), r.Has(hooks.Stop))
	}
	out := r.Run(context.Background(), preTool("execute_code"))
	if out.Decision != hooks.Block || out.Reason != "project says no" || out.Ran != 2 {
		t.Fatalf("with settings: %+v", out)
	}
	if b, _ := os.ReadFile(log); len(strings.Fields(string(b))) != 3 {
		t.Errorf("runs: %q", b)
	}
	// A broken file is reported once, and its hooks are off; the user's run.
	write(`{"hooks": {"PreToolUse": [`)
	out = r.Run(context.Background(), preTool("execute_code"))
	if out.Decision != hooks.Continue || out.Ran != 1 || len(out.Problems) != 1 || !strings.Contains(out.Problems[0].Error(), "settings.json") {
		t.Fatalf("broken settings: %+v", out)
	}
	if out = r.Run(context.Background(), preTool("execute_code")); len(out.Problems) != 0 {
		t.Fatalf("reported twice: %+v", out)
	}
	// Fixed: the hooks are back.
	write(`{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "` + proj + `"}]}]}}`)
	if out = r.Run(context.Background(), preTool("read_file")); out.Decision != hooks.Block {
		t.Fatalf("fixed settings: %+v", out)
	}
}

func TestSameCommandRunsOnce(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	cmd := script(t, dir, "count.sh", `echo x >> "`+log+`"`)
	c := config(t, `{"PreToolUse": [{"matcher": "execute_code", "hooks": [{"type": "command", "command": "`+cmd+`"}]},
		{"hooks": [{"type": "command", "command": "`+cmd+`"}]}]}`)
	r := hooks.New(hooks.Options{Config: c, Workspace: dir})
	if out := r.Run(context.Background(), preTool("execute_code")); out.Ran != 1 {
		t.Fatalf("ran %d", out.Ran)
	}
}

func TestNilRunner(t *testing.T) {
	var r *hooks.Runner
	if out := r.Run(context.Background(), preTool("x")); out.Ran != 0 || r.Has(hooks.PreToolUse) {
		t.Fatalf("nil runner: %+v", out)
	}
}

// BenchmarkHook and BenchmarkBareExec compare a hook invocation with a
// bare exec of the same command: the difference is the runner's cost.
func BenchmarkHook(b *testing.B) {
	dir := b.TempDir()
	r := hooks.New(hooks.Options{Config: one(b, hooks.PreToolUse, "execute_code|write_file", "cat >/dev/null", 0), Workspace: dir})
	in := preTool("execute_code")
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if out := r.Run(ctx, in); out.Ran != 1 || len(out.Problems) != 0 {
			b.Fatalf("outcome %+v", out)
		}
	}
}

func BenchmarkBareExec(b *testing.B) {
	dir := b.TempDir()
	payload, _ := json.Marshal(preTool("execute_code"))
	for b.Loop() {
		cmd := exec.Command("/bin/sh", "-c", "cat >/dev/null")
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(string(payload))
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHookOverhead runs a bare exec and a hook invocation of the same
// command in turn, so that both see the same machine load, and reports
// the medians of each and of their paired difference (the runner's cost:
// matching, the JSON input, the process group, reading the outputs).
func BenchmarkHookOverhead(b *testing.B) {
	dir := b.TempDir()
	const command = "cat >/dev/null"
	r := hooks.New(hooks.Options{Config: one(b, hooks.PreToolUse, "execute_code|write_file", command, 0), Workspace: dir})
	in := preTool("execute_code")
	payload, _ := json.Marshal(in)
	ctx := context.Background()
	var bare, hook, diff []float64
	for b.Loop() {
		t0 := time.Now()
		cmd := exec.Command("/bin/sh", "-c", command)
		cmd.Dir, cmd.Stdin = dir, strings.NewReader(string(payload))
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if out := r.Run(ctx, in); out.Ran != 1 || len(out.Problems) != 0 {
			b.Fatalf("outcome %+v", out)
		}
		t2 := time.Now()
		bare = append(bare, float64(t1.Sub(t0).Microseconds()))
		hook = append(hook, float64(t2.Sub(t1).Microseconds()))
		diff = append(diff, float64(t2.Sub(t1)-t1.Sub(t0))/1e3)
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(median(bare)/1e3, "bare-ms")
	b.ReportMetric(median(hook)/1e3, "hook-ms")
	b.ReportMetric(median(diff)/1e3, "overhead-ms")
}
