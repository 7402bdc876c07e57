package client

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/internal/pyenv"
)

func writeSpec(t *testing.T, dataDir, name, displayName string) {
	t.Helper()
	dir := filepath.Join(dataDir, "kernels", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	js := `{"argv": ["python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "` + displayName + `", "language": "python"}`
	if err := os.WriteFile(filepath.Join(dir, "kernel.json"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDataDirs(t *testing.T) {
	tmp := t.TempDir()
	a, b, user := filepath.Join(tmp, "a"), filepath.Join(tmp, "b"), filepath.Join(tmp, "user")
	home := filepath.Join(tmp, "home")
	t.Setenv("HOME", home)
	t.Setenv("JUPYTER_PATH", a+string(os.PathListSeparator)+b+"/")
	t.Setenv("JUPYTER_DATA_DIR", user)
	t.Setenv("JUPYTER_PREFER_ENV_PATH", "")
	got := DataDirs()
	want := []string{a, b, user, filepath.Join(home, ".local", "share", "jupyter"), "/usr/local/share/jupyter", "/usr/share/jupyter"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DataDirs:\n got %q\nwant %q", got, want)
	}
}

func TestFindSpec(t *testing.T) {
	tmp := t.TempDir()
	first, second, user := filepath.Join(tmp, "first"), filepath.Join(tmp, "second"), filepath.Join(tmp, "user")
	t.Setenv("HOME", filepath.Join(tmp, "home"))
	t.Setenv("JUPYTER_PATH", first+string(os.PathListSeparator)+second)
	t.Setenv("JUPYTER_DATA_DIR", user)
	writeSpec(t, second, "both", "from second")
	writeSpec(t, first, "both", "from first")
	writeSpec(t, user, "useronly", "from user")
	writeSpec(t, second, "Mixed", "mixed case")
	// An entry in JUPYTER_PATH shadows the system python3 spec.
	writeSpec(t, second, "python3", "shadowed python3")

	tests := []struct {
		name, want, wantDir string
	}{
		{"both", "from first", filepath.Join(first, "kernels", "both")},
		{"useronly", "from user", filepath.Join(user, "kernels", "useronly")},
		{"mixed", "mixed case", filepath.Join(second, "kernels", "Mixed")},
		{"MIXED", "mixed case", filepath.Join(second, "kernels", "Mixed")},
		{"python3", "shadowed python3", filepath.Join(second, "kernels", "python3")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := FindSpec(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if s.DisplayName != tt.want || s.Dir != tt.wantDir || s.Name != strings.ToLower(tt.name) {
				t.Fatalf("got %q in %s named %q, want %q in %s", s.DisplayName, s.Dir, s.Name, tt.want, tt.wantDir)
			}
		})
	}

	_, err := FindSpec("nosuchkernel")
	if !errors.Is(err, ErrNoSpec) || !strings.Contains(err.Error(), filepath.Join(first, "kernels")) ||
		!strings.Contains(err.Error(), "/usr/share/jupyter/kernels") {
		t.Fatalf("missing spec: got %v, want ErrNoSpec listing the dirs", err)
	}

}

func TestReadSpecErrors(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{"malformed", `{"argv": [`, "parse kernelspec"},
		{"noargv", `{"display_name": "x"}`, "empty argv"},
		{"badmode", `{"argv": ["x"], "interrupt_mode": "telepathy"}`, "interrupt_mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tt.name)
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "kernel.json"), []byte(tt.json), 0o644)
			if _, err := ReadSpec(dir); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func TestStartFailures(t *testing.T) {
	tests := []struct {
		name    string
		argv    []string
		wantErr error
	}{
		{"exits at once", []string{"/bin/sh", "-c", "echo boom >&2; exit 3", "{connection_file}"}, ErrDead},
		{"no such binary", []string{"/nonexistent/kernel", "-f", "{connection_file}"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			k, err := Start(testCtx(t), &Spec{Name: "bad", Argv: tt.argv}, Options{Logger: testLogger(), ConnectionDir: dir})
			if err == nil {
				k.Shutdown(testCtx(t))
				t.Fatal("Start succeeded")
			}
			t.Log(err)
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("connection dir not cleaned: %v", left)
			}
		})
	}
}

// TestPythonOfTheSpecsEnvironment: a kernelspec that says "python", as
// pip's ipykernel writes it, runs the Python of the environment it is
// installed in, as jupyter_client runs its own: not whatever python PATH
// finds first (here none).
func TestPythonOfTheSpecsEnvironment(t *testing.T) {
	python3Spec(t) // skips without Debian's ipykernel
	prefix := t.TempDir()
	bin := filepath.Join(prefix, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/bin/python3", filepath.Join(bin, "python")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(prefix, "share", "jupyter", "kernels", "venvpy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	js := `{"argv": ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "venv", "language": "python"}`
	if err := os.WriteFile(filepath.Join(dir, "kernel.json"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ arg0, dir, want string }{
		{"python", dir, filepath.Join(bin, "python")},
		{"python3.11", dir, filepath.Join(bin, "python")}, // no python3.11 there: its python
		{"/opt/py/bin/python", dir, "/opt/py/bin/python"},
		{"R", dir, "R"},
		{"python", t.TempDir(), "python"}, // not in a kernels directory
	} {
		if got := resolvePython(tt.arg0, tt.dir); got != tt.want {
			t.Errorf("resolvePython(%q, %q) = %q, want %q", tt.arg0, tt.dir, got, tt.want)
		}
	}
	if p, ok := pyenv.Prefix(bin); !ok || p != prefix {
		t.Errorf("pyenv.Prefix(%q) = %q, %v", bin, p, ok)
	}
	spec, err := ReadSpec(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	k := startKernel(t, spec, Options{})
	ctx := testCtx(t)
	c, err := Dial(ctx, k.ConnectionInfo(), Options{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.KernelInfo(ctx); err != nil {
		t.Fatalf("the kernel of the environment's python does not answer: %v", err)
	}
}
