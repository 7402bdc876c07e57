package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentkernel/agentkernel/rules"
)

// TestRulesReadOnceWhateverTheConfigDir: however the configuration
// directory is given — a relative $XDG_CONFIG_HOME, no $HOME (a gateway's
// kernel), a relative $AGENTKERNEL_CONFIG — it is never "." by accident,
// and the workspace's AGENTS.md and CLAUDE.md reach the rules once each.
func TestRulesReadOnceWhateverTheConfigDir(t *testing.T) {
	ws := t.TempDir()
	for _, name := range []string{"AGENTS.md", "CLAUDE.md"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte("Use pandas.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(ws)
	elsewhere := t.TempDir()
	for _, tt := range []struct {
		name string
		env  map[string]string
	}{
		{"relative XDG_CONFIG_HOME", map[string]string{"XDG_CONFIG_HOME": "cfg", "HOME": elsewhere, "AGENTKERNEL_CONFIG": ""}},
		{"no HOME", map[string]string{"XDG_CONFIG_HOME": "", "HOME": "", "AGENTKERNEL_CONFIG": ""}},
		{"relative AGENTKERNEL_CONFIG", map[string]string{"AGENTKERNEL_CONFIG": "config.json", "HOME": elsewhere}},
		{"AGENTKERNEL_CONFIG in a subdirectory", map[string]string{"AGENTKERNEL_CONFIG": "conf/config.json", "HOME": elsewhere}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			dir := Config{}.UserDir()
			if dir != "" && !filepath.IsAbs(dir) {
				t.Fatalf("UserDir() = %q: not absolute", dir)
			}
			got, problems := rules.Load(ws, dir)
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			count := map[string]int{}
			for _, r := range got {
				count[filepath.Base(r.Path)]++
			}
			if count["AGENTS.md"] != 1 || count["CLAUDE.md"] != 1 || len(got) != 2 {
				t.Errorf("UserDir() = %q; rules %+v: want AGENTS.md and CLAUDE.md once each", dir, got)
			}
		})
	}
}
