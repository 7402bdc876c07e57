package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/hooks"
)

func TestConfigHooksAndEventLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	t.Setenv("AGENTKERNEL_CONFIG", path)
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"hooks": {"PreToolUse": [{"matcher": "execute_code", "hooks": [{"type": "command", "command": "true"}]}]}, "logRetentionDays": 7}`)
	c, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Hooks[hooks.PreToolUse]) != 1 {
		t.Errorf("hooks %+v", c.Hooks)
	}
	l := c.eventLog(dir, hclog.NewNullLogger())
	if l == nil || l.Dir() != filepath.Join(dir, "logs") {
		t.Fatalf("event log %v", l)
	}
	l.Close()
	write(`{"logRetentionDays": 0}`)
	if c, err = loadConfig(); err != nil || c.eventLog(dir, hclog.NewNullLogger()) != nil {
		t.Errorf("logRetentionDays 0 keeps a log (%v)", err)
	}
	// A broken hooks object is an error naming the file and the fault.
	write(`{"hooks": {"PreToolUse": [{"matcher": "(", "hooks": [{"type": "command", "command": "x"}]}]}}`)
	if _, err := loadConfig(); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "matcher") {
		t.Errorf("broken hooks: %v", err)
	}
}
