package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mkfiles creates files (path → content) under dir; a path ending in "/"
// is a directory.
func mkfiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks not available: %v", err)
	}
}

// testWorkspace returns a workspace with a few files, symlinks inside and
// out, and the directory outside it that the escaping symlinks point to.
func testWorkspace(t *testing.T) (ws *Workspace, outside string) {
	t.Helper()
	root, outside := t.TempDir(), t.TempDir()
	mkfiles(t, root, map[string]string{
		"notes.md":        "hello\n",
		"src/main.py":     "print(1)\n",
		"data/":           "",
		"config/dev.conf": "x=1\n",
	})
	mkfiles(t, outside, map[string]string{"secret-free.txt": "outside\n", "dir/f.txt": "f\n"})
	symlink(t, filepath.Join(outside, "secret-free.txt"), filepath.Join(root, "out_file"))
	symlink(t, filepath.Join(outside, "dir"), filepath.Join(root, "out_dir"))
	symlink(t, "src", filepath.Join(root, "in_dir"))
	symlink(t, filepath.Join(root, "src", "main.py"), filepath.Join(root, "in_file"))
	symlink(t, filepath.Join(outside, "nothing-here"), filepath.Join(root, "dangling"))
	symlink(t, "config/dev.conf", filepath.Join(root, ".env"))
	symlink(t, ".git/config", filepath.Join(root, "gitcfg"))
	ws, err := NewWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	return ws, outside
}

func TestNewWorkspace(t *testing.T) {
	dir := t.TempDir()
	mkfiles(t, dir, map[string]string{"f": "x"})
	if _, err := NewWorkspace(filepath.Join(dir, "f")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file as root: err = %v, want not a directory", err)
	}
	if _, err := NewWorkspace(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing root: no error")
	}
	link := filepath.Join(t.TempDir(), "link")
	symlink(t, dir, link)
	ws, err := NewWorkspace(link)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if ws.Root() != real {
		t.Errorf("Root() = %q, want the resolved %q", ws.Root(), real)
	}
}

func TestResolve(t *testing.T) {
	ws, outside := testWorkspace(t)
	root := ws.Root()
	tests := []struct {
		name, path string
		want       string // workspace-relative, when allowed
		reason     string // substring of the error, when refused
		outside    bool   // the error wraps ErrOutsideWorkspace
	}{
		{name: "file", path: "notes.md", want: "notes.md"},
		{name: "dot", path: ".", want: "."},
		{name: "nested", path: "src/main.py", want: "src/main.py"},
		{name: "dot segments inside", path: "./src/../notes.md", want: "notes.md"},
		{name: "new file", path: "new.txt", want: "new.txt"},
		{name: "new file in new dirs", path: "a/b/c.txt", want: "a/b/c.txt"},
		{name: "absolute inside", path: filepath.Join(root, "src", "main.py"), want: "src/main.py"},
		{name: "symlink dir inside", path: "in_dir/main.py", want: "src/main.py"},
		{name: "symlink file inside", path: "in_file", want: "src/main.py"},
		{name: "new file in symlinked dir inside", path: "in_dir/new.py", want: "src/new.py"},
		{name: "file under a file", path: "notes.md/x", want: "notes.md/x"},

		{name: "empty", path: "", reason: "empty path"},
		{name: "blank", path: "  ", reason: "empty path"},
		{name: "NUL", path: "a\x00b", reason: "NUL"},
		{name: "dotdot", path: "..", reason: `escapes the workspace through ".."`, outside: true},
		{name: "dotdot file", path: "../x.txt", reason: `escapes the workspace through ".."`, outside: true},
		{name: "dotdot deep", path: "src/../../x", reason: `".."`, outside: true},
		{name: "absolute outside", path: "/etc/passwd", reason: "absolute path outside the workspace", outside: true},
		{name: "absolute sibling prefix", path: root + "-other/x", reason: "absolute path outside", outside: true},
		{name: "symlink file outside", path: "out_file", reason: "a symlink leads outside the workspace", outside: true},
		{name: "symlink dir outside", path: "out_dir", reason: "a symlink leads outside", outside: true},
		{name: "through symlink dir outside", path: "out_dir/f.txt", reason: "a symlink leads outside", outside: true},
		{name: "new file in symlink dir outside", path: "out_dir/new.txt", reason: "a symlink leads outside", outside: true},
		{name: "new dirs in symlink dir outside", path: "out_dir/a/b/new.txt", reason: "a symlink leads outside", outside: true},
		{name: "dangling symlink", path: "dangling", reason: "dangling symlink"},
		{name: "under dangling symlink", path: "dangling/x", reason: "dangling symlink"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ws.Resolve(tt.path)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Resolve(%q): %v", tt.path, err)
				}
				if !filepath.IsAbs(got) {
					t.Errorf("Resolve(%q) = %q, not absolute", tt.path, got)
				}
				if rel := ws.Rel(got); rel != tt.want {
					t.Errorf("Resolve(%q) = %q (rel %q), want rel %q", tt.path, got, rel, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Resolve(%q) = %q, want an error with %q", tt.path, got, tt.reason)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("Resolve(%q) error %q does not say %q", tt.path, err, tt.reason)
			}
			var pe *PathError
			if !errors.As(err, &pe) || pe.Path != tt.path {
				t.Errorf("Resolve(%q) error %v is not a *PathError naming the path", tt.path, err)
			}
			if errors.Is(err, ErrOutsideWorkspace) != tt.outside {
				t.Errorf("Resolve(%q): errors.Is(ErrOutsideWorkspace) = %v, want %v", tt.path, !tt.outside, tt.outside)
			}
			if strings.Contains(err.Error(), outside) && !strings.Contains(tt.reason, "symlink") {
				t.Errorf("unexpected mention of the outside dir: %v", err)
			}
		})
	}
}
