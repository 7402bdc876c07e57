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

	"github.com/agentkernel/agentkernel/internal/protect"
)

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
	// Protected may hold secrets, whose content is never kept: left as
	// they are.
	Protected []string
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
		if want == Withheld || left == Withheld || t.withheld(p) {
			rep.Protected = append(rep.Protected, p)
			continue
		}
		abs, err := t.abs(p)
		if err != nil {
			rep.Unrestorable = append(rep.Unrestorable, p+": "+err.Error())
			continue
		}
		cur, err := t.currentHash(ctx, p, abs)
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
	// What the restore wrote is what the tracker knows now, the files the
	// scans leave out included; the scan finds nothing more of it.
	done := append(append([]string(nil), rep.Restored...), rep.Removed...)
	if _, err := t.Track(ctx, done...); err != nil {
		return rep, err
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
// exist), stored so that a forced restore can be turned back too (unless it
// is a secret: Withheld).
func (t *Tracker) currentHash(ctx context.Context, rel, abs string) (string, error) {
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
	if t.withheld(rel) || protect.Content(data) != "" {
		return Withheld, nil
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
