package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// Sync scans the workspace, keeps the content of files that are new or
// changed since the last scan, and returns the changes. The first scan
// (the baseline, unless Baseline ran) returns none: it only learns the
// workspace.
func (t *Tracker) Sync(ctx context.Context) ([]Change, Report, error) {
	t.scan.Lock()
	defer t.scan.Unlock()
	if !t.learned {
		rep, err := t.learn(ctx, false)
		return nil, rep, err
	}
	return t.sync(ctx)
}

// sync is a scan after the baseline: of the paths inotify named (and the
// racy ones), or of everything when it cannot tell.
func (t *Tracker) sync(ctx context.Context) ([]Change, Report, error) {
	var rep Report
	cand := map[string]*fileStat{} // nil: stat it
	var ev changed
	watched := false
	if t.watch != nil {
		ev, watched = t.watch.drain()
	}
	if !watched {
		files, unreadable, err := t.walk(ctx, "", t.opts.Workers)
		if err != nil {
			return nil, rep, fmt.Errorf("checkpoint: scan %s: %w", t.root, err)
		}
		rep.Unreadable = unreadable
		for i := range files {
			cand[files[i].rel] = &files[i].fileStat
		}
		t.mu.Lock()
		for p, e := range t.files {
			if _, ok := cand[p]; !ok && !e.extra {
				cand[p] = nil // gone, or unreadable now
			}
		}
		t.mu.Unlock()
	} else {
		for p := range ev.files {
			if !t.ignored(p, false) {
				cand[p] = nil
			}
		}
		for _, d := range ev.newDirs {
			if t.ignored(d, true) {
				continue
			}
			files, unreadable, err := t.walk(ctx, d, 1)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				rep.Unreadable = append(rep.Unreadable, d)
			}
			rep.Unreadable = append(rep.Unreadable, unreadable...)
			for i := range files {
				cand[files[i].rel] = &files[i].fileStat
			}
		}
		t.mu.Lock()
		for p := range t.racy {
			cand[p] = nil
		}
		if len(ev.oldDirs) > 0 {
			for p, e := range t.files {
				for _, d := range ev.oldDirs {
					if strings.HasPrefix(p, d+"/") && !e.extra {
						cand[p] = nil
					}
				}
			}
		}
		t.mu.Unlock()
	}
	unreadable := map[string]bool{}
	for _, p := range rep.Unreadable {
		unreadable[p] = true
	}
	var changes []Change
	var put []IndexEntry
	var del []string
	type prior struct {
		e     entry
		known bool
	}
	olds := map[string]prior{} // what was known of the files read
	gone := func(p string, old entry) {
		if old.hash != "" {
			changes = append(changes, Change{Path: p, Before: old.hash})
		}
		t.forget(p)
		del = append(del, p)
	}
	// learnt records a file read (its content kept) and its change.
	learnt := func(p string, e entry) error {
		o := olds[p]
		t.mu.Lock()
		t.setLocked(p, e)
		t.mu.Unlock()
		if !e.extra {
			put = append(put, e.indexEntry(p))
		}
		if e.hash == Unkept {
			rep.Unkept = append(rep.Unkept, p)
		}
		switch {
		case !o.known:
			changes = append(changes, Change{Path: p, After: e.hash})
		case o.e.hash != e.hash || !o.e.hasContent() && o.e.fileStat != e.fileStat:
			changes = append(changes, Change{Path: p, Before: o.e.hash, After: e.hash})
		}
		return nil
	}
	batch := batcher{t: t, done: learnt}
	for p, st := range cand {
		if st == nil {
			s, regular, _, err := lstat(filepath.Join(t.root, filepath.FromSlash(p)))
			switch {
			case err == nil && regular:
				st = &s
			case err != nil && !errors.Is(err, fs.ErrNotExist):
				rep.Unreadable = append(rep.Unreadable, p)
				continue
			}
		}
		t.mu.Lock()
		old, known := t.files[p]
		t.mu.Unlock()
		if st == nil { // gone (or no longer a regular file)
			if known && !unreadable[p] {
				gone(p, old)
			}
			continue
		}
		if known && old.fileStat == *st && !old.racy {
			continue
		}
		e, data, err := t.load(p, *st, !known && t.keptCount()+len(batch.items) >= t.opts.MaxFiles, &t.buf)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if known {
				gone(p, old)
			}
			continue
		case err != nil:
			rep.Unreadable = append(rep.Unreadable, p)
			continue
		}
		e.extra = known && old.extra
		olds[p] = prior{old, known}
		if e.hash != "" { // not to be kept
			if err := learnt(p, e); err != nil {
				return nil, rep, err
			}
			continue
		}
		if err := batch.add(ctx, p, e, data); err != nil {
			return nil, rep, err
		}
	}
	if err := batch.flush(ctx); err != nil {
		return nil, rep, err
	}
	shrink(&t.buf)
	if t.index != nil && len(put)+len(del) > 0 {
		if err := t.index.SaveIndex(context.WithoutCancel(ctx), t.root, put, del); err != nil {
			return nil, rep, fmt.Errorf("checkpoint: write the index: %w", err)
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	sort.Strings(rep.Unkept)
	return changes, rep, nil
}
