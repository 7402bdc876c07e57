package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/tests/scripted"
)

// askIn runs ask with --output-format json in dir and returns the
// session it used.
func askIn(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	t.Chdir(dir)
	out, err := ask(t, strings.NewReader(""), append(args, "--output-format", "json")...)
	if err != nil {
		return "", err
	}
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("ask's JSON: %v: %q", err, out)
	}
	return res.SessionID, nil
}

// TestSessionsScopedToTheDirectory: --continue continues the session of
// the directory it runs in, never another's; sessions list shows this
// directory's unless --all; a session resumed in another directory says
// so and its rewind there leaves that directory's files alone.
func TestSessionsScopedToTheDirectory(t *testing.T) {
	srv, _ := askEnv(t)
	a, b := t.TempDir(), t.TempDir()

	srv.Enqueue(scripted.Reply(scripted.ToolCall("c1", "write_file", `{"path": "notes.md", "content": "by the agent"}`)),
		scripted.Reply(scripted.Text("Written.")))
	inA, err := askIn(t, a, "Write notes.md", "--approve", "all")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := askIn(t, b, "Go on", "--continue"); err == nil || !strings.Contains(err.Error(), "no session was started in") {
		t.Fatalf("--continue in a directory without sessions: %v (it must not continue %s's)", err, a)
	}
	srv.Enqueue(scripted.Reply(scripted.Text("B's answer.")))
	inB, err := askIn(t, b, "Hello from b")
	if err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(scripted.Reply(scripted.Text("Still a.")))
	if got, err := askIn(t, a, "Go on", "--continue"); err != nil || got != inA {
		t.Fatalf("--continue in %s continued %s (%v), want %s", a, got, err, inA)
	}

	list := func(dir string, args ...string) string {
		t.Helper()
		t.Chdir(dir)
		var stdout, stderr bytes.Buffer
		if err := runSessions(append([]string{"list"}, args...), strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Fatalf("sessions list: %v\n%s", err, stderr.String())
		}
		return stdout.String()
	}
	if out := list(a); !strings.Contains(out, inA[:8]) || strings.Contains(out, inB[:8]) {
		t.Errorf("sessions list in %s:\n%s", a, out)
	}
	if out := list(a, "--all"); !strings.Contains(out, inA[:8]) || !strings.Contains(out, inB[:8]) || !strings.Contains(out, "WORKSPACE") {
		t.Errorf("sessions list --all:\n%s", out)
	}

	// a's session resumed in b: b has a notes.md of its own, which happens
	// to hold what the agent wrote in a.
	mine := filepath.Join(b, "notes.md")
	if err := os.WriteFile(mine, []byte("by the agent"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(b)
	var stdout, stderr bytes.Buffer
	srv.Enqueue(scripted.Reply(scripted.Text("Rewound.")))
	err = runAsk([]string{"--model", askModel, "--session", inA, "--rewind", "#0", "--approve", "all", "Again"},
		strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatalf("ask --session --rewind: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "was started in") {
		t.Errorf("the resume from another directory did not say so:\n%s", stderr.String())
	}
	if got, err := os.ReadFile(mine); err != nil || string(got) != "by the agent" {
		t.Errorf("the rewind of a's session touched b's notes.md: %q, %v", got, err)
	}
	if got, _ := os.ReadFile(filepath.Join(a, "notes.md")); string(got) != "by the agent" {
		t.Errorf("a's notes.md = %q: a rewind from b must not reach a's files", got)
	}
}
