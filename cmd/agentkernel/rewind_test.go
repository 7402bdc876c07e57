package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestSessionsRewindRestoresFiles: agentkernel sessions rewind, run where
// no kernel is, restores the files the agent changed after the message and
// leaves the kernel's rebuild for the session's next code run.
func TestSessionsRewindRestoresFiles(t *testing.T) {
	data, ws := t.TempDir(), t.TempDir()
	t.Setenv("AGENTKERNEL_DATA_DIR", data)
	if err := os.WriteFile(filepath.Join(ws, "report.md"), []byte("draft 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := scripted.New(t)
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("c1", "write_file", `{"path": "report.md", "content": "draft 2"}`)),
		scripted.Reply(scripted.ToolCall("c2", "write_file", `{"path": "extra.txt", "content": "new"}`)),
		scripted.Reply(scripted.Text("Done.")),
	)
	st, err := store.Open(context.Background(), store.Options{Dir: data})
	if err != nil {
		t.Fatal(err)
	}
	h := session.New(session.Config{Store: st, Workspace: ws, Model: "openai:m",
		OpenModel: func(string) (provider.Provider, error) {
			return openai.New(openai.Config{APIKey: "k", BaseURL: srv.OpenAIURL(), Model: "m"})
		}})
	ctx := context.Background()
	if _, err := h.Submit(ctx, "Revise the report", session.Follow{Approve: agent.ApproveAll.Approver()}); err != nil {
		t.Fatal(err)
	}
	info, _ := h.Current(ctx)
	h.Close()
	st.Close()
	if b, _ := os.ReadFile(filepath.Join(ws, "report.md")); string(b) != "draft 2" {
		t.Fatalf("the agent did not write: %q", b)
	}

	var stdout, stderr bytes.Buffer
	if err := run([]string{"sessions", "rewind", info.ID[:8], "#0"}, &stdout, &stderr); err != nil {
		t.Fatalf("sessions rewind: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "1 restored, 1 removed") {
		t.Fatalf("output:\n%s", stdout.String())
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "report.md")); string(b) != "draft 1" {
		t.Fatalf("report.md = %q, want the draft from before the prompt", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "extra.txt")); !os.IsNotExist(err) {
		t.Fatalf("extra.txt survived: %v", err)
	}
	stdout.Reset()
	if err := run([]string{"sessions", "show", info.ID}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stdout.String(), "Revise the report") {
		t.Fatalf("the rewound prompt is still in the history:\n%s", stdout.String())
	}
}

// TestAskRewind: ask --continue --rewind #N rewinds the session (its files
// too) before asking, and stream-json reports the rewind and the
// checkpoints of the new turn.
func TestAskRewind(t *testing.T) {
	data, ws := t.TempDir(), t.TempDir()
	t.Setenv("AGENTKERNEL_DATA_DIR", data)
	t.Setenv("AGENTKERNEL_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	srv := scripted.New(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("OPENAI_BASE_URL", srv.OpenAIURL())
	wd, _ := os.Getwd()
	if err := os.Chdir(ws); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("c1", "write_file", `{"path": "plan.md", "content": "first plan"}`)),
		scripted.Reply(scripted.Text("Planned.")),
	)
	var stdout, stderr bytes.Buffer
	if err := run([]string{"ask", "Write a plan", "--model", "openai:m", "--approve", "all"}, &stdout, &stderr); err != nil {
		t.Fatalf("ask: %v\n%s", err, stderr.String())
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "plan.md")); string(b) != "first plan" {
		t.Fatalf("plan.md = %q", b)
	}
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("c2", "write_file", `{"path": "plan.md", "content": "second plan"}`)),
		scripted.Reply(scripted.Text("Replanned.")),
	)
	stdout.Reset()
	if err := run([]string{"ask", "Plan differently", "--continue", "--rewind", "#0", "--model", "openai:m",
		"--approve", "all", "--output-format", "stream-json"}, &stdout, &stderr); err != nil {
		t.Fatalf("ask --rewind: %v\n%s", err, stderr.String())
	}
	var sawRewind, sawCheckpoint bool
	for _, e := range parseEvents(t, stdout.String()) {
		sawRewind = sawRewind || e.kind() == "system/rewind" && e["removed"] != nil
		// plan.md is created anew: the rewind had removed it.
		files, _ := json.Marshal(e["files"])
		sawCheckpoint = sawCheckpoint || e.kind() == "system/checkpoint" &&
			strings.Contains(string(files), `{"change":"created","path":"plan.md"}`)
	}
	if !sawRewind || !sawCheckpoint {
		t.Fatalf("stream-json without rewind (%v) or checkpoint (%v) events:\n%s", sawRewind, sawCheckpoint, stdout.String())
	}
	last, _ := srv.Last()
	if strings.Contains(string(last.Raw), "Write a plan") {
		t.Fatalf("the rewound prompt was sent: %s", last.Raw)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "plan.md")); string(b) != "second plan" {
		t.Fatalf("plan.md = %q", b)
	}
}
