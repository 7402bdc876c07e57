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
	cand, err := t.candidates(ctx, &rep)
	if err != nil {
		return nil, rep, err
	}
	s := newRescan(t, &rep)
	for p, st := range cand {
		if err := s.visit(ctx, p, st); err != nil {
			return nil, rep, err
		}
	}
	if err := s.batch.flush(ctx); err != nil {
		return nil, rep, err
	}
	shrink(&t.buf)
	if t.index != nil && len(s.put)+len(s.del) > 0 {
		if err := t.index.SaveIndex(context.WithoutCancel(ctx), t.root, s.put, s.del); err != nil {
			return nil, rep, fmt.Errorf("checkpoint: write the index: %w", err)
		}
	}
	sort.Slice(s.changes, func(i, j int) bool { return s.changes[i].Path < s.changes[j].Path })
	sort.Strings(rep.Unkept)
	return s.changes, rep, nil
}

// candidates are the paths a scan after the baseline looks at, each with
// the stat the walk took (nil: stat it): the paths inotify named and the
// racy ones, or every path when inotify cannot tell. The paths it could not
// read go to rep.Unreadable.
func (t *Tracker) candidates(ctx context.Context, rep *Report) (map[string]*fileStat, error) {
	if t.watch != nil {
		if ev, watched := t.watch.drain(); watched {
			return t.watchedCandidates(ctx, ev, rep), nil
		}
	}
	return t.walkedCandidates(ctx, rep)
}

// walkedCandidates walks the whole workspace: every file it lists, and
// every file the tracker knew that it did not list (gone, or unreadable
// now), except those outside what scans see.
func (t *Tracker) walkedCandidates(ctx context.Context, rep *Report) (map[string]*fileStat, error) {
	files, unreadable, err := t.walk(ctx, "", t.opts.Workers)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: scan %s: %w", t.root, err)
	}
	rep.Unreadable = unreadable
	cand := map[string]*fileStat{}
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
	return cand, nil
}

// watchedCandidates are what inotify's events ev name: the files not
// ignored, what the new directories hold (walked), the files known under
// the removed directories, and the racy files.
func (t *Tracker) watchedCandidates(ctx context.Context, ev changed, rep *Report) map[string]*fileStat {
	cand := map[string]*fileStat{}
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
	return cand
}

// rescan is one scan after the baseline in progress: the changes it found
// and the index entries to write (put) and remove (del).
type rescan struct {
	t   *Tracker
	rep *Report
	// unreadable are the paths the candidates' walk could not read: not
	// gone, though the scan does not see them.
	unreadable map[string]bool
	olds       map[string]prior // what was known of the files read
	batch      batcher
	changes    []Change
	put        []IndexEntry
	del        []string
}

// prior is what the tracker knew of a file before a scan read it.
type prior struct {
	e     entry
	known bool
}

func newRescan(t *Tracker, rep *Report) *rescan {
	s := &rescan{t: t, rep: rep, unreadable: map[string]bool{}, olds: map[string]prior{}}
	for _, p := range rep.Unreadable {
		s.unreadable[p] = true
	}
	s.batch = batcher{t: t, done: s.learnt}
	return s
}

// visit looks at the candidate p, whose stat st the walk took (nil: stat
// it now): a file that is gone is forgotten, one whose stat changed (or
// that is racy) is read, and its content kept in the batch.
func (s *rescan) visit(ctx context.Context, p string, st *fileStat) error {
	t := s.t
	if st == nil {
		now, regular, _, err := lstat(filepath.Join(t.root, filepath.FromSlash(p)))
		switch {
		case err == nil && regular:
			st = &now
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			s.rep.Unreadable = append(s.rep.Unreadable, p)
			return nil
		}
	}
	t.mu.Lock()
	old, known := t.files[p]
	t.mu.Unlock()
	if st == nil { // gone (or no longer a regular file)
		if known && !s.unreadable[p] {
			s.gone(p, old)
		}
		return nil
	}
	if known && old.fileStat == *st && !old.racy {
		return nil
	}
	e, data, err := t.load(p, *st, !known && t.keptCount()+len(s.batch.items) >= t.opts.MaxFiles, &t.buf)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if known {
			s.gone(p, old)
		}
		return nil
	case err != nil:
		s.rep.Unreadable = append(s.rep.Unreadable, p)
		return nil
	}
	e.extra = known && old.extra
	s.olds[p] = prior{old, known}
	if e.hash != "" { // not to be kept
		return s.learnt(p, e)
	}
	return s.batch.add(ctx, p, e, data)
}

// gone forgets the file p, which the tracker knew as old: a removal.
func (s *rescan) gone(p string, old entry) {
	if old.hash != "" {
		s.changes = append(s.changes, Change{Path: p, Before: old.hash})
	}
	s.t.forget(p)
	s.del = append(s.del, p)
}

// learnt records a file read (its content kept) and its change.
func (s *rescan) learnt(p string, e entry) error {
	o := s.olds[p]
	s.t.mu.Lock()
	s.t.setLocked(p, e)
	s.t.mu.Unlock()
	if !e.extra {
		s.put = append(s.put, e.indexEntry(p))
	}
	if e.hash == Unkept {
		s.rep.Unkept = append(s.rep.Unkept, p)
	}
	switch {
	case !o.known:
		s.changes = append(s.changes, Change{Path: p, After: e.hash})
	case o.e.hash != e.hash || !o.e.hasContent() && o.e.fileStat != e.fileStat:
		s.changes = append(s.changes, Change{Path: p, Before: o.e.hash, After: e.hash})
	}
	return nil
}
