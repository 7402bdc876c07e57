package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent/provider/acpagent"
)

// TestInstallAgentSpellings: install --agent and kernel --agent take the
// agent with or without "acp:" and write the same model; install refuses
// an agent it cannot find, saying how to install an alias's agent.
func TestInstallAgentSpellings(t *testing.T) {
	t.Setenv("PATH", "/usr/bin:/bin") // no claude-agent-acp here
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	prefix := t.TempDir()
	modelOf := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(prefix, "share", "jupyter", "kernels", name, "kernel.json"))
		if err != nil {
			t.Fatal(err)
		}
		var ks struct{ Env map[string]string }
		if err := json.Unmarshal(b, &ks); err != nil {
			t.Fatal(err)
		}
		return ks.Env["AGENTKERNEL_MODEL"]
	}
	install := func(name, agent string) error {
		var out, errOut bytes.Buffer
		err := run([]string{"install", "--prefix", prefix, "--name", name, "--mode", "prompt", "--probe=false", "--agent", agent}, &out, &errOut)
		if err != nil {
			t.Logf("install --agent %q: %v\n%s", agent, err, errOut.String())
		}
		return err
	}
	for name, agent := range map[string]string{"bare": exe + " acp", "prefixed": "acp:" + exe + " acp", "spaced": "acp: " + exe + " acp"} {
		if err := install(name, agent); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, want := modelOf(name), "acp:"+exe+" acp"; got != want {
			t.Errorf("install --agent %q wrote AGENTKERNEL_MODEL %q, want %q", agent, got, want)
		}
	}
	if err := install("missing", "no-such-agent-xyz --flag"); err == nil || !strings.Contains(err.Error(), `"no-such-agent-xyz" is not installed`) {
		t.Errorf("an agent that cannot be found: %v", err)
	}
	if err := install("claude", "acp:claude"); err == nil || !strings.Contains(err.Error(), "npm install -g @zed-industries/claude-agent-acp") {
		t.Errorf("a missing alias's agent: %v", err)
	}
	if _, err := os.Stat(filepath.Join(prefix, "share", "jupyter", "kernels", "missing")); err == nil {
		t.Error("a refused install wrote its kernelspec")
	}
	for _, agent := range []string{"claude", "acp:claude"} {
		k, err := parseKernel([]string{"-f", "cf.json", "--agent", agent}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if k.model != "acp:claude" {
			t.Errorf("kernel --agent %q: model %q, want acp:claude", agent, k.model)
		}
	}
	// A kernelspec an earlier install wrote as acp:acp:CMD still runs CMD.
	if got := acpagent.Command("acp:" + exe + " acp"); len(got) != 2 || got[0] != exe {
		t.Errorf("Command of an acp:acp: model's agent = %q", got)
	}
}
