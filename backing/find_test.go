package backing

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/kernel/client"
)

// writeSpec writes DIR/kernels/NAME/kernel.json.
func writeSpec(t *testing.T, dataDir, name string, spec map[string]any) string {
	t.Helper()
	dir := filepath.Join(dataDir, "kernels", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kernel.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func agentSpec(name string) map[string]any {
	return map[string]any{
		"argv":         []string{"/opt/bin/agentkernel", "kernel", "-f", "{connection_file}", "--backing", name},
		"display_name": "Agent (code)", "language": "python",
		"metadata": map[string]any{"agentkernel": map[string]any{"backing": name, "mode": "code"}},
	}
}

func realSpec(display string) map[string]any {
	return map[string]any{
		"argv":         []string{"/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"},
		"display_name": display, "language": "python",
	}
}

// isolate points Jupyter's search path at two fresh directories, ahead of
// the system ones, and returns them.
func isolate(t *testing.T) (first, second string) {
	t.Helper()
	tmp := t.TempDir()
	first, second = filepath.Join(tmp, "first"), filepath.Join(tmp, "second")
	t.Setenv("HOME", filepath.Join(tmp, "home"))
	t.Setenv("JUPYTER_DATA_DIR", filepath.Join(tmp, "user"))
	t.Setenv("JUPYTER_PATH", first+string(os.PathListSeparator)+second)
	return first, second
}

func TestIsAgentKernel(t *testing.T) {
	self := selfPath()
	tests := []struct {
		name string
		spec client.Spec
		want bool
	}{
		{"metadata", client.Spec{Argv: []string{"/somewhere/ak"}, Metadata: map[string]any{"agentkernel": map[string]any{}}}, true},
		{"argv binary", client.Spec{Argv: []string{"/usr/local/bin/agentkernel", "kernel", "-f", "{connection_file}"}}, true},
		{"sh -c script", client.Spec{Argv: []string{"/bin/sh", "-c", "exec /opt/agentkernel kernel -f \"$0\"", "{connection_file}"}}, true},
		{"this binary under another name", client.Spec{Argv: []string{self, "kernel"}}, self != ""},
		{"ipykernel", client.Spec{Argv: []string{"/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"}}, false},
		{"word that merely contains the name", client.Spec{Argv: []string{"/usr/bin/python3", "-m", "agentkernel_tools"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsAgentKernel(&tt.spec); got != tt.want {
				t.Fatalf("IsAgentKernel(%q) = %v, want %v", tt.spec.Argv, got, tt.want)
			}
		})
	}
}

func TestFindSkipsAgentKernel(t *testing.T) {
	first, second := isolate(t)
	writeSpec(t, first, "python3", agentSpec("python3"))
	want := writeSpec(t, second, "python3", realSpec("the real one"))
	s, err := Find("python3")
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir != want || s.DisplayName != "the real one" {
		t.Fatalf("Find(python3) = %s (%s), want the real one in %s", s.Dir, s.DisplayName, want)
	}
}

func TestFindRefusesAgentKernelByName(t *testing.T) {
	first, _ := isolate(t)
	dir := writeSpec(t, first, "agent-code", agentSpec("python3"))
	_, err := Find("agent-code")
	if !errors.Is(err, ErrSelf) {
		t.Fatalf("Find(agent-code) = %v, want ErrSelf", err)
	}
	if msg := err.Error(); !strings.Contains(msg, dir) {
		t.Fatalf("error %q does not name the kernelspec's directory %s", msg, dir)
	}
}

func TestFindUnknown(t *testing.T) {
	isolate(t)
	if _, err := Find("no-such-kernel"); !errors.Is(err, client.ErrNoSpec) {
		t.Fatalf("Find(no-such-kernel) = %v, want ErrNoSpec", err)
	}
}

func TestFindNativePython(t *testing.T) {
	first, _ := isolate(t)
	writeSpec(t, first, "python3", agentSpec("python3"))
	// Only Debian's /usr/bin/python3 has ipykernel on the machines we test
	// on; a bogus AGENTKERNEL_PYTHON must be passed over.
	t.Setenv("AGENTKERNEL_PYTHON", filepath.Join(t.TempDir(), "no-python"))
	if _, err := os.Stat("/usr/share/jupyter/kernels/python3/kernel.json"); err != nil {
		t.Skip("Debian's python3 kernelspec (python3-ipykernel) is not installed")
	}
	// Hide the system python3 kernelspec: the system dirs stay on the path,
	// so look up a name only the native fallback serves.
	s, err := Find("python")
	if err != nil {
		t.Fatal(err)
	}
	if s.Argv[0] != "/usr/bin/python3" || s.Argv[2] != "ipykernel_launcher" || s.Language != "python" {
		t.Fatalf("native spec = %+v", s)
	}
}
