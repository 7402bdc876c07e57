package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// Track reads the named files (workspace-relative, slash-separated) now
// and returns how they changed since the tracker last knew them; a file
// it did not know is learnt, with no change. The agent's file tools call
// it before and after they write: the write is recorded even when no scan
// has run (it does not wait for the baseline), and for files the scans
// leave out.
func (t *Tracker) Track(ctx context.Context, paths ...string) ([]Change, error) {
	var changes []Change
	var put []IndexEntry
	var buf bytes.Buffer
	for _, p := range paths {
		if _, err := t.abs(p); err != nil {
			return nil, fmt.Errorf("checkpoint: %s: %w", p, err)
		}
		t.mu.Lock()
		old, known := t.files[p]
		t.mu.Unlock()
		s, regular, _, err := lstat(filepath.Join(t.root, filepath.FromSlash(p)))
		var e entry
		exists := err == nil && regular
		switch {
		case exists:
			if e, err = t.read(ctx, p, s, false, &buf); errors.Is(err, fs.ErrNotExist) {
				exists = false
			} else if err != nil {
				return nil, fmt.Errorf("checkpoint: %s: %w", p, err)
			}
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("checkpoint: %s: %w", p, err)
		}
		if !exists {
			if known && old.hash != "" {
				changes = append(changes, Change{Path: p, Before: old.hash})
			}
			// A file that does not exist is known not to: its creation is a
			// change. Kept as an entry with no hash until the next scan.
			t.mu.Lock()
			t.setLocked(p, entry{hash: "", tracked: true, extra: t.ignored(p, false), fileStat: fileStat{size: -1}})
			t.mu.Unlock()
			continue
		}
		e.tracked, e.extra = true, t.ignored(p, false)
		t.mu.Lock()
		t.setLocked(p, e)
		t.mu.Unlock()
		if !e.extra {
			put = append(put, e.indexEntry(p))
		}
		if known && old.hash != e.hash {
			changes = append(changes, Change{Path: p, Before: old.hash, After: e.hash})
		}
	}
	if t.index != nil && len(put) > 0 {
		if err := t.index.SaveIndex(context.WithoutCancel(ctx), t.root, put, nil); err != nil {
			return nil, fmt.Errorf("checkpoint: write the index: %w", err)
		}
	}
	return changes, nil
}
