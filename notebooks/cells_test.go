package notebooks

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPromptMode: a notebook is of agentkernel's prompt mode when its
// kernelspec, installed here, is an agentkernel one in prompt mode; one
// that is not installed here is told by the language the notebook gives
// it (markdown: prompt mode); any other kernel's notebook is not.
func TestPromptMode(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("JUPYTER_PATH", dir)
	spec := func(name, json string) {
		d := filepath.Join(dir, "kernels", name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "kernel.json"), []byte(json), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec("ak-prompt-test", `{"argv": ["agentkernel", "kernel", "-f", "{connection_file}", "--mode", "prompt"], "display_name": "Agent",
		"language": "markdown", "metadata": {"agentkernel": {"mode": "prompt"}}}`)
	spec("ak-code-test", `{"argv": ["agentkernel", "kernel", "-f", "{connection_file}", "--mode", "code"], "display_name": "Agent (code)",
		"language": "python", "metadata": {"agentkernel": {"mode": "code"}}}`)
	spec("py-test", `{"argv": ["python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "Python",
		"language": "python"}`)
	for _, tt := range []struct {
		name, language string
		want           bool
	}{
		{"ak-prompt-test", "markdown", true},
		{"ak-prompt-test", "python", true}, // the installed kernelspec says
		{"ak-code-test", "markdown", false},
		{"py-test", "markdown", false},
		{"ak-not-installed-test", "markdown", true},
		{"ak-not-installed-test", "python", false},
		{"", "", false},
	} {
		nb := New()
		if tt.name != "" {
			_ = nb.Metadata.Set("kernelspec", map[string]string{"name": tt.name, "display_name": "x", "language": tt.language})
		}
		if got := PromptMode(nb); got != tt.want {
			t.Errorf("kernelspec %q (language %q): prompt mode %v, want %v", tt.name, tt.language, got, tt.want)
		}
	}
}
