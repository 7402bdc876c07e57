package app

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/store"
)

// env isolates a test from the machine's configuration: its config file is
// path (written with body when not empty) and its data directory data.
func env(t *testing.T, body string) (data string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	if body != "" {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data = filepath.Join(dir, "data")
	t.Setenv(EnvConfig, path)
	t.Setenv(store.EnvDataDir, data)
	for _, k := range []string{EnvModel, EnvApprove, EnvPermissionMode, EnvRecord, EnvEventSource, store.EnvStore} {
		t.Setenv(k, "")
	}
	return data
}

// TestLoadPrecedence: flags win over the environment, which wins over the
// config file.
func TestLoadPrecedence(t *testing.T) {
	env(t, `{"model": "openai:from-file", "approve": "read-only", "mode": "plan", "store": "postgres://file/db"}`)
	c := Load(Flags{}, nil)
	if c.Model != "openai:from-file" || c.Approve != agent.ApproveReadOnly || c.PermissionMode != agent.PermissionPlan ||
		c.StoreURL != "postgres://file/db" || c.Err() != nil {
		t.Errorf("from the file: %+v", c)
	}
	t.Setenv(EnvModel, "openai:from-env")
	t.Setenv(EnvApprove, "all")
	t.Setenv(store.EnvStore, "postgres://env/db")
	c = Load(Flags{}, nil)
	if c.Model != "openai:from-env" || c.Approve != agent.ApproveAll || c.StoreURL != "postgres://env/db" {
		t.Errorf("the environment over the file: %+v", c)
	}
	c = Load(Flags{Model: "openai:from-flag", Store: "postgres://flag/db", Record: "x.jsonl"}, nil)
	if c.Model != "openai:from-flag" || c.StoreURL != "postgres://flag/db" || c.Record != "x.jsonl" {
		t.Errorf("the flags over both: %+v", c)
	}
}

// TestLoadProblems: what cannot be used is a listed problem at its
// default, never a crash; Err joins them for the commands that refuse.
func TestLoadProblems(t *testing.T) {
	env(t, `{"model": "openai:m",`)
	t.Setenv(EnvApprove, "sometimes")
	c := Load(Flags{}, nil)
	if len(c.Problems) != 2 || c.Approve != agent.ApproveNone || c.Model != "" {
		t.Fatalf("problems %q, approve %q, model %q", c.Problems, c.Approve, c.Model)
	}
	err := c.Err()
	if err == nil || !strings.Contains(err.Error(), "config.json:1:") || !strings.Contains(err.Error(), "sometimes") {
		t.Errorf("Err() = %v", err)
	}
}

// TestOpen: a command's store, runner and host open once, over the same
// store and workspace, and close in one call; a second Close is
// net.ErrClosed.
func TestOpen(t *testing.T) {
	data := env(t, "")
	ws := t.TempDir()
	ctx := context.Background()
	a, err := Open(ctx, Load(Flags{}, nil), Surface{Kind: "ask", Workspace: ws, StoreNow: true,
		Backing: &backing.Options{Kernel: "no-such-kernel"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Store == nil || a.Runner == nil || a.Host == nil {
		t.Fatalf("opened %+v", a)
	}
	if _, err := os.Stat(filepath.Join(data, "agentkernel.db")); err != nil {
		t.Errorf("the store is not in the data directory: %v", err)
	}
	info, err := a.Host.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.Host.Store(context.Background())
	if err != nil || st != a.Store {
		t.Fatalf("the host uses another store (%v)", err)
	}
	// A workspace of its own shares the store: it sees the session.
	w, err := a.OpenWorkspace(ws, "acp")
	if err != nil {
		t.Fatal(err)
	}
	if list, err := w.Host.Sessions(ctx, "", 10, false); err != nil || len(list) != 1 || list[0].ID != info.ID {
		t.Errorf("the workspace's host lists %+v (%v)", list, err)
	}
	if w.Runner == nil || w.Runner == a.Runner {
		t.Error("a workspace has a runner of its own")
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close = %v, want net.ErrClosed", err)
	}
}
