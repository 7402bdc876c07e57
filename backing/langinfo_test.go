package backing

import (
	"encoding/json"
	"testing"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// TestInfoCachePerEnvironment: the disk cache kernel_info answers from
// before the backing kernel is up is the cache of that kernelspec, not of
// its name — Debian's python3 (ipykernel 6, no subshells) once answered
// for a venv's python3 (ipykernel 7), and JupyterLab was told the kernel
// had no subshells.
func TestInfoCachePerEnvironment(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	system := &client.Spec{Name: "python3", Dir: "/usr/share/jupyter/kernels/python3", Argv: []string{"/usr/bin/python3", "-m", "ipykernel_launcher"}}
	venv := &client.Spec{Name: "python3", Dir: "/venv/share/jupyter/kernels/python3", Argv: []string{"/venv/bin/python", "-m", "ipykernel_launcher"}}
	content, _ := json.Marshal(map[string]any{"language_info": map[string]string{"name": "python", "version": "3.11"},
		"supported_features": []string{"kernel subshells"}})
	if err := newInfoCache(infoKey("python3", venv)).learn(&wire.Message{Content: content}, venv); err != nil {
		t.Fatal(err)
	}
	if got := newInfoCache(infoKey("python3", venv)).get(); !got.subshells() || got.LanguageInfo == nil {
		t.Errorf("the venv's kernel_info was not kept for it: %+v", got)
	}
	if got := newInfoCache(infoKey("python3", system)).get(); got.LanguageInfo != nil || got.subshells() {
		t.Errorf("Debian's python3 answers with the venv's kernel_info: %+v", got)
	}
	if infoKey("python3", nil) != "python3" {
		t.Errorf("a kernelspec not found is cached by its name: %q", infoKey("python3", nil))
	}
}
