package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Workspace confines the file tools to one directory tree: the notebook's
// directory. Every path a tool touches goes through [Workspace.Resolve].
//
// A Workspace is immutable after NewWorkspace and safe for concurrent use.
//
// Confinement is checked when a path is resolved; a symlink created or
// swapped between Resolve and the file operation (by code the agent runs in
// the backing kernel, say) is not caught. The file tools are a convenience
// boundary for the model, not a sandbox: execute_code runs arbitrary code.
type Workspace struct {
	root string // absolute, cleaned, symlinks evaluated
}

// NewWorkspace returns a Workspace rooted at dir, which must be an existing
// directory. Symlinks in dir itself are resolved, so the root is the real
// directory.
func NewWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("agent: workspace %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("agent: workspace %q: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("agent: workspace %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("agent: workspace %q: not a directory", dir)
	}
	return &Workspace{root: real}, nil
}

// Root returns the workspace's root: an absolute path with symlinks resolved.
func (w *Workspace) Root() string { return w.root }

// ErrOutsideWorkspace is wrapped by every *[PathError] that Resolve returns
// for a path leading out of the workspace.
var ErrOutsideWorkspace = errors.New("outside the workspace")

// PathError is a path that Resolve refused. Path is the path as given,
// Reason says why. It unwraps to [ErrOutsideWorkspace] when the path leads
// out of the workspace, and to the file system error otherwise.
type PathError struct {
	Path   string
	Reason string
	Err    error
}

func (e *PathError) Error() string {
	return fmt.Sprintf("path %q: %s", e.Path, e.Reason)
}

func (e *PathError) Unwrap() error { return e.Err }

// Resolve returns the real absolute path that path names inside the
// workspace, or a *[PathError]. A relative path is taken relative to the
// root; an absolute path must lie inside the root.
//
// Resolve rejects: an empty path, a path that leaves the root lexically
// (through "..", or an absolute path elsewhere), and a path whose existing
// part leads out of the root through a symlink, of a file or of any parent
// directory. For a path that does not exist yet (a file about to be
// written), the longest existing prefix is resolved and checked; the rest
// cannot contain a symlink because it does not exist. A dangling symlink on
// the way is refused, since writing through it would create its target
// wherever it points.
//
// The returned path has its symlinks resolved; [Workspace.Rel] turns it back
// into a workspace-relative one.
func (w *Workspace) Resolve(path string) (string, error) {
	if strings.TrimSpace(path) == "" {
		return "", &PathError{Path: path, Reason: "empty path"}
	}
	if strings.ContainsRune(path, 0) {
		return "", &PathError{Path: path, Reason: "contains a NUL byte"}
	}
	p := path
	if !filepath.IsAbs(p) {
		p = filepath.Join(w.root, p)
	}
	p = filepath.Clean(p)
	if !w.contains(p) {
		reason := "absolute path outside the workspace " + w.root
		if !filepath.IsAbs(path) {
			reason = "escapes the workspace through \"..\""
		}
		return "", &PathError{Path: path, Reason: reason, Err: ErrOutsideWorkspace}
	}

	// Find the longest prefix of p that exists (without following a final
	// symlink), resolve its symlinks and re-check.
	existing, rest := p, ""
	for {
		_, err := os.Lstat(existing)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !isNotDir(err) {
			return "", &PathError{Path: path, Reason: err.Error(), Err: err}
		}
		parent := filepath.Dir(existing)
		if parent == existing { // cannot happen: the root exists
			return "", &PathError{Path: path, Reason: "no existing parent directory", Err: err}
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", &PathError{Path: path, Reason: "leads through a dangling symlink", Err: err}
		}
		return "", &PathError{Path: path, Reason: err.Error(), Err: err}
	}
	if !w.contains(real) {
		return "", &PathError{
			Path:   path,
			Reason: fmt.Sprintf("a symlink leads outside the workspace (to %s)", real),
			Err:    ErrOutsideWorkspace,
		}
	}
	if rest != "" {
		real = filepath.Join(real, rest)
	}
	return real, nil
}

// Rel returns abs relative to the root, with forward slashes ("." for the
// root itself). abs should come from Resolve.
func (w *Workspace) Rel(abs string) string {
	rel, err := filepath.Rel(w.root, abs)
	if err != nil {
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(rel)
}

// contains reports whether the clean absolute path p is the root or below it.
func (w *Workspace) contains(p string) bool {
	if p == w.root {
		return true
	}
	prefix := w.root
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return strings.HasPrefix(p, prefix)
}

// isNotDir reports an ENOTDIR error: a path component is a file.
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
