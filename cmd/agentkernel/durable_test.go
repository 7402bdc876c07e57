package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/internal/workspacegen"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestAskPromptSurvivesKill: the user's prompt is stored before anything
// else happens, the workspace's baseline included. An ask in a workspace
// whose first scan takes seconds is SIGKILLed once its prompt is stored,
// or after 2.5 s (as the user who found the defect did), while it runs;
// the prompt is in the store.
func TestAskPromptSurvivesKill(t *testing.T) {
	c := newCLI(t)
	ws := t.TempDir()
	// Files the baseline reads (by the limits before and after the fix):
	// seconds of reading and hashing.
	if err := workspacegen.Write(ws, workspacegen.Spec{Binaries: 8, BinaryBytes: 40 << 20, SmallFiles: 4000}); err != nil {
		t.Fatal(err)
	}
	srv := scripted.New(t)
	srv.Enqueue(scripted.Reply(scripted.Stall())) // the model never answers
	const prompt = "Summarise the measurements in data/"
	cmd := c.cmd([]string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.OpenAIURL()},
		"ask", "--model", askModel, "--approve", "all", prompt)
	cmd.Dir = ws
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	ctx := context.Background()
	stored := func() bool {
		if _, err := os.Stat(filepath.Join(c.data, store.FileName)); err != nil {
			return false
		}
		st, err := store.Open(context.Background(), store.Options{Dir: c.data})
		if err != nil {
			return false
		}
		defer st.Close()
		list, err := st.ListSessions(ctx, store.ListOptions{})
		if err != nil {
			return false
		}
		for _, s := range list {
			h, err := st.Load(ctx, s.ID)
			if err != nil {
				continue
			}
			for _, m := range h.UI {
				if strings.Contains(m.Text, prompt) {
					return true
				}
			}
		}
		return false
	}
	deadline := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(deadline) && !stored() {
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case err := <-exited:
		exited <- err
		t.Fatalf("the ask ended before it was killed: %v", err)
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	exited <- nil
	if !stored() {
		t.Fatal("the prompt is not in the store after a SIGKILL: it was not stored before the workspace scan")
	}
}
