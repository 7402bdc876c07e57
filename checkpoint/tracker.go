// Package checkpoint keeps what a rewind needs to put a workspace's files
// back: a Tracker scans the workspace (by size and modification time, so a
// scan of an unchanged workspace reads no file), keeps the content of every
// file it has seen in a content-addressed blob store (a file that did not
// change costs nothing more), and reports what changed between two scans.
// The session host scans around every step that may change the workspace
// (a file tool, the code the agent runs) and records the changes; Restore
// turns recorded changes back, refusing files changed by someone else since
// (conflicts) unless forced.
//
// Limits, all in Options: files larger than MaxFileSize and files past
// MaxFiles are tracked by size and time only (a rewind reports them as not
// restorable); .git, node_modules, caches and virtual environments, and
// what the workspace's top-level .gitignore names are not tracked at all;
// symbolic links are neither followed nor restored.
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Blobs stores file contents by hash (the session store does).
type Blobs interface {
	PutBlob(ctx context.Context, data []byte) (string, error)
	Blob(ctx context.Context, hash string) ([]byte, error)
}

// Options configure a Tracker. The zero value of each field has the
// default documented there.
type Options struct {
	// MaxFileSize is the largest file whose content is kept. Default 50 MiB.
	MaxFileSize int64
	// MaxFiles is how many files are tracked with their content; the rest
	// by size and time only. Default 20,000.
	MaxFiles int
	// Ignore lists more patterns to leave out, as .gitignore lines.
	Ignore []string
}

func (o Options) withDefaults() Options {
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = 50 << 20
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = 20000
	}
	return o
}

// defaultIgnore is never tracked: version control, dependencies, caches.
var defaultIgnore = []string{".git/", ".hg/", ".svn/", "node_modules/", "__pycache__/", ".ipynb_checkpoints/",
	".venv/", "venv/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/", ".tox/", "*.pyc", ".DS_Store"}

// Unkept is the hash recorded for a file whose content was not kept (over
// the limits): a change from or to it cannot be turned back.
const Unkept = "-"

// Change is what happened to one file between two scans; a hash of ""
// means the file did not exist.
type Change struct {
	Path          string // slash-separated, relative to the workspace
	Before, After string
}

// Kind says what the change did: "created", "changed" or "removed".
func (c Change) Kind() string {
	switch {
	case c.Before == "":
		return "created"
	case c.After == "":
		return "removed"
	}
	return "changed"
}

// entry is what the index knows of a file.
type entry struct {
	size  int64
	mtime int64 // ns
	hash  string
}

// Tracker follows one workspace. It is not safe for concurrent use: the
// host calls it from one turn at a time.
type Tracker struct {
	root   string
	opts   Options
	blobs  Blobs
	ignore []pattern
	index  map[string]entry // nil until the first Sync
}

// New returns a Tracker of the workspace at root. It reads nothing yet.
func New(root string, blobs Blobs, opts Options) (*Tracker, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: workspace: %w", err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("checkpoint: workspace: %w", err)
	}
	opts = opts.withDefaults()
	t := &Tracker{root: abs, opts: opts, blobs: blobs}
	lines := append(append([]string(nil), defaultIgnore...), opts.Ignore...)
	if b, err := os.ReadFile(filepath.Join(abs, ".gitignore")); err == nil {
		lines = append(lines, strings.Split(string(b), "\n")...)
	}
	for _, l := range lines {
		if p, ok := parsePattern(l); ok {
			t.ignore = append(t.ignore, p)
		}
	}
	return t, nil
}

// Root returns the workspace's absolute path.
func (t *Tracker) Root() string { return t.root }

// Report says what a scan could not do.
type Report struct {
	// Unreadable are paths the scan could not read (permissions).
	Unreadable []string
	// Unkept are files tracked without their content (over the limits).
	Unkept []string
}

// Sync scans the workspace, keeps the content of files that are new or
// changed since the last scan, and returns the changes. The first Sync
// returns none: it only learns the workspace.
func (t *Tracker) Sync(ctx context.Context) ([]Change, Report, error) {
	var rep Report
	files, unreadable, err := t.walk(ctx)
	if err != nil {
		return nil, rep, fmt.Errorf("checkpoint: scan %s: %w", t.root, err)
	}
	rep.Unreadable = unreadable
	seen := make(map[string]entry, len(files))
	kept := 0
	for _, f := range files {
		e := entry{size: f.size, mtime: f.mtime}
		if old, ok := t.index[f.rel]; ok && old.size == e.size && old.mtime == e.mtime {
			e.hash = old.hash // unchanged by size and time: not read again
		} else if e.size > t.opts.MaxFileSize || kept >= t.opts.MaxFiles {
			e.hash = Unkept
		} else {
			data, err := os.ReadFile(filepath.Join(t.root, filepath.FromSlash(f.rel)))
			if err != nil {
				rep.Unreadable = append(rep.Unreadable, f.rel)
				continue
			}
			if e.hash, err = t.blobs.PutBlob(ctx, data); err != nil {
				return nil, rep, fmt.Errorf("checkpoint: keep %s: %w", f.rel, err)
			}
		}
		if e.hash == Unkept {
			rep.Unkept = append(rep.Unkept, f.rel)
		} else {
			kept++
		}
		seen[f.rel] = e
	}
	var changes []Change
	if t.index != nil {
		for p, e := range seen {
			if old, ok := t.index[p]; !ok {
				changes = append(changes, Change{Path: p, After: e.hash})
			} else if old.hash != e.hash || old.hash == Unkept && (old.size != e.size || old.mtime != e.mtime) {
				changes = append(changes, Change{Path: p, Before: old.hash, After: e.hash})
			}
		}
		for p, old := range t.index {
			if _, ok := seen[p]; !ok {
				changes = append(changes, Change{Path: p, Before: old.hash})
			}
		}
		sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	}
	t.index = seen
	return changes, rep, nil
}

// RestoreReport says what Restore did.
type RestoreReport struct {
	Restored []string // written back with their earlier content
	Removed  []string // created after the point, removed
	// Conflicts were changed by someone else since the agent's last change
	// to them: left as they are (Restore with force overwrites them).
	Conflicts []string
	// Unrestorable had no kept content (over the limits), or could not be
	// written; each with the reason.
	Unrestorable []string
}

// Restore turns changes back (oldest first, as recorded): each file gets
// the content it had before the first of its changes, or is removed if it
// did not exist then. A file whose current content is not what the last of
// its changes left is a conflict, kept as it is unless force. The index is
// brought up to date afterwards, so the restore itself is no change.
func (t *Tracker) Restore(ctx context.Context, changes []Change, force bool) (RestoreReport, error) {
	var rep RestoreReport
	first := map[string]Change{}
	last := map[string]Change{}
	var order []string
	for _, c := range changes {
		if _, ok := first[c.Path]; !ok {
			first[c.Path] = c
			order = append(order, c.Path)
		}
		last[c.Path] = c
	}
	sort.Strings(order)
	for _, p := range order {
		want, left := first[p].Before, last[p].After
		abs, err := t.abs(p)
		if err != nil {
			rep.Unrestorable = append(rep.Unrestorable, p+": "+err.Error())
			continue
		}
		cur, err := t.currentHash(ctx, abs)
		if err != nil {
			rep.Unrestorable = append(rep.Unrestorable, p+": "+err.Error())
			continue
		}
		if cur == want {
			continue // already as it was
		}
		if !force && cur != left && left != Unkept {
			rep.Conflicts = append(rep.Conflicts, p)
			continue
		}
		switch want {
		case Unkept:
			rep.Unrestorable = append(rep.Unrestorable, p+": its content was not kept (over the size or file limits)")
		case "":
			if err := os.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
				rep.Unrestorable = append(rep.Unrestorable, p+": "+err.Error())
				continue
			}
			rep.Removed = append(rep.Removed, p)
		default:
			data, err := t.blobs.Blob(ctx, want)
			if err != nil {
				rep.Unrestorable = append(rep.Unrestorable, p+": "+err.Error())
				continue
			}
			if err := writeFile(abs, data); err != nil {
				rep.Unrestorable = append(rep.Unrestorable, p+": "+err.Error())
				continue
			}
			rep.Restored = append(rep.Restored, p)
		}
	}
	_, _, err := t.Sync(ctx)
	return rep, err
}

// abs returns the absolute path of a workspace path, refusing anything
// that leaves the workspace or goes through a symbolic link.
func (t *Tracker) abs(rel string) (string, error) {
	clean := path.Clean(rel)
	if clean == "." || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("not a workspace path")
	}
	abs := filepath.Join(t.root, filepath.FromSlash(clean))
	dir := t.root
	parts := strings.Split(clean, "/")
	for _, part := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, part)
		if fi, err := os.Lstat(dir); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return "", fmt.Errorf("goes through a symbolic link")
		}
	}
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return "", fmt.Errorf("is a symbolic link")
	}
	return abs, nil
}

// currentHash is the hash of the file's content now ("" if it does not
// exist), stored so that a forced restore can be turned back too.
func (t *Tracker) currentHash(ctx context.Context, abs string) (string, error) {
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if fi.Size() > t.opts.MaxFileSize {
		return Unkept, nil
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", err
	}
	return t.blobs.PutBlob(ctx, data)
}

// writeFile replaces abs with data, creating its directory.
func writeFile(abs string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(abs); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(abs), ".agentkernel-restore-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), abs)
}
