package app

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
	c, err := ReadFile()
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
	if c, err = ReadFile(); err != nil || c.eventLog(dir, hclog.NewNullLogger()) != nil {
		t.Errorf("logRetentionDays 0 keeps a log (%v)", err)
	}
	// A broken hooks object is an error naming the file and the fault.
	write(`{"hooks": {"PreToolUse": [{"matcher": "(", "hooks": [{"type": "command", "command": "x"}]}]}}`)
	if _, err := ReadFile(); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "matcher") {
		t.Errorf("broken hooks: %v", err)
	}
}

// TestConfigModels: the models section is laid over the built-in tables
// (a field left out keeps the table's value); prices, its older form,
// replaces an entry whole and is still read.
func TestConfigModels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	t.Setenv("AGENTKERNEL_CONFIG", path)
	cfg := `{
  "models": {"gpt-4.1": {"vision": false}, "llava:13b": {"vision": true, "contextWindow": 4096}},
  "prices": {"my-local": {"input": 0.5, "output": 1, "contextWindow": 8192}, "llava:13b": {"input": 9}}
}`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ReadFile()
	if err != nil {
		t.Fatal(err)
	}
	got := c.prices()
	if m := got["gpt-4.1"]; m.Vision || m.InputPrice != 2 || m.ContextWindow != 1_047_576 {
		t.Errorf("gpt-4.1 = %+v, want the table's prices and window, vision off", m)
	}
	if m := got["llava:13b"]; !m.Vision || m.ContextWindow != 4096 || m.InputPrice != 9 {
		t.Errorf("llava:13b = %+v", m)
	}
	if m := got["my-local"]; m.Vision || m.InputPrice != 0.5 || m.OutputPrice != 1 || m.ContextWindow != 8192 {
		t.Errorf("my-local = %+v", m)
	}
	if m := knownModel("claude-sonnet-4-5-20250929"); !m.Vision {
		t.Errorf("the table's Claude Sonnet 4.5 takes images: %+v", m)
	}
}
