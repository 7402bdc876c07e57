package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
)

// Baseline learns the workspace, if no scan has yet: the files the index
// does not know as they are now are read and their content kept. In the
// background it walks on one goroutine and yields between files, so that
// what the process is serving waits for it as little as possible.
// Cancelled, it keeps what it learnt in the index for the next time.
func (t *Tracker) Baseline(ctx context.Context, background bool) (Report, error) {
	t.scan.Lock()
	defer t.scan.Unlock()
	if t.learned {
		return Report{}, nil
	}
	if !background {
		return t.learn(ctx, false)
	}
	// On a thread of its own at the lowest CPU and I/O priority, with a
	// processor lent to it (Options.Processor): what the process serves
	// keeps its own.
	if lend := t.opts.Processor; lend != nil {
		defer lend()()
	}
	var (
		rep  Report
		err  error
		done = make(chan struct{})
	)
	go func() { // owned by Baseline, which waits for it
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer lowerPriority()()
		rep, err = t.learn(ctx, true)
	}()
	<-done
	return rep, err
}

// Learned reports whether the baseline is done.
func (t *Tracker) Learned() bool {
	if !t.scan.TryLock() {
		return false
	}
	defer t.scan.Unlock()
	return t.learned
}

// learn is the baseline: a walk of the whole workspace compared with the
// index kept in the store.
func (t *Tracker) learn(ctx context.Context, background bool) (Report, error) {
	var rep Report
	prev, err := t.loadIndex(ctx)
	if err != nil {
		return rep, err
	}
	workers := t.opts.Workers
	if background {
		workers = 1
	}
	files, unreadable, err := t.walk(ctx, "", workers)
	if err != nil {
		return rep, fmt.Errorf("checkpoint: scan %s: %w", t.root, err)
	}
	rep.Unreadable = unreadable
	l := newLearning(ctx, t, &rep, prev, len(files))
	for i, f := range files {
		if background && i%256 == 255 {
			runtime.Gosched() // a yield costs two thread switches: not per file
		}
		if err := ctx.Err(); err != nil {
			return rep, errors.Join(err, l.batch.flush(ctx), l.save(ctx))
		}
		if err := l.visit(ctx, f); err != nil {
			return rep, err
		}
	}
	if err := l.batch.flush(ctx); err != nil {
		return rep, err
	}
	shrink(&t.buf)
	if err := l.finish(ctx); err != nil {
		return rep, err
	}
	t.adoptTracked()
	t.learned = true
	return rep, nil
}

// loadIndex reads the index kept in the store, by path (empty when the
// tracker keeps none).
func (t *Tracker) loadIndex(ctx context.Context) (map[string]IndexEntry, error) {
	prev := map[string]IndexEntry{}
	if t.index == nil {
		return prev, nil
	}
	rows, err := t.index.LoadIndex(ctx, t.root)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: read the index: %w", err)
	}
	for _, r := range rows {
		prev[r.Path] = r
	}
	return prev, nil
}

// adoptTracked makes the entries Track learnt while the baseline ran the
// baseline's own: later scans may replace them.
func (t *Tracker) adoptTracked() {
	t.mu.Lock()
	for p, e := range t.files {
		e.tracked = false
		t.files[p] = e
	}
	t.mu.Unlock()
}

// learning is a baseline in progress: the index as the store kept it
// (prev), the files seen, and the index entries still to write (put).
type learning struct {
	t     *Tracker
	rep   *Report
	prev  map[string]IndexEntry
	seen  map[string]bool
	put   []IndexEntry
	batch batcher
}

func newLearning(ctx context.Context, t *Tracker, rep *Report, prev map[string]IndexEntry, files int) *learning {
	l := &learning{t: t, rep: rep, prev: prev, seen: make(map[string]bool, files)}
	// Contents are kept in batches: one transaction for many small files.
	l.batch = batcher{t: t, done: func(rel string, e entry) error { return l.kept(ctx, rel, e) }}
	return l
}

// visit learns the file f: as the index knows it when its stat is the
// same (not read), else read, and its content kept in the batch.
func (l *learning) visit(ctx context.Context, f stat) error {
	t := l.t
	l.seen[f.rel] = true
	if p, ok := l.prev[f.rel]; ok && p.Size == f.size && p.MTime == f.mtime && p.CTime == f.ctime && p.Inode == f.ino &&
		(p.Hash == Withheld || !t.withheld(f.rel)) {
		l.learnt(f.rel, entry{fileStat: f.fileStat, hash: p.Hash}) // as the index knows it: not read
		return nil
	}
	e, data, err := t.load(f.rel, f.fileStat, t.keptCount()+len(l.batch.items) >= t.opts.MaxFiles, &t.buf)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // removed since the walk
	case err != nil:
		l.rep.Unreadable = append(l.rep.Unreadable, f.rel)
		return nil
	case e.hash != "": // not to be kept
		l.learnt(f.rel, e)
		l.put = append(l.put, e.indexEntry(f.rel))
		return nil
	}
	return l.batch.add(ctx, f.rel, e, data)
}

// learnt records what the baseline learnt of the file rel, unless Track
// learnt it meanwhile.
func (l *learning) learnt(rel string, e entry) {
	if e.hash == Unkept {
		l.rep.Unkept = append(l.rep.Unkept, rel)
	}
	l.t.mu.Lock()
	if old, ok := l.t.files[rel]; !ok || !old.tracked {
		l.t.setLocked(rel, e)
	}
	l.t.mu.Unlock()
}

// kept records a file whose content the batch kept, and writes the index
// every 256 files.
func (l *learning) kept(ctx context.Context, rel string, e entry) error {
	l.learnt(rel, e)
	l.put = append(l.put, e.indexEntry(rel))
	if len(l.put) >= 256 {
		if err := l.save(ctx); err != nil {
			return fmt.Errorf("checkpoint: write the index: %w", err)
		}
	}
	return nil
}

// save writes the index entries learnt so far, even when ctx is
// cancelled: what was learnt is kept for the next time.
func (l *learning) save(ctx context.Context) error {
	if l.t.index == nil || len(l.put) == 0 {
		return nil
	}
	err := l.t.index.SaveIndex(context.WithoutCancel(ctx), l.t.root, l.put, nil)
	l.put = l.put[:0]
	return err
}

// finish writes the rest of the index, and removes from it the files the
// walk did not see.
func (l *learning) finish(ctx context.Context) error {
	var del []string
	for p := range l.prev {
		if !l.seen[p] {
			del = append(del, p)
		}
	}
	if l.t.index != nil && len(l.put)+len(del) > 0 {
		if err := l.t.index.SaveIndex(context.WithoutCancel(ctx), l.t.root, l.put, del); err != nil {
			return fmt.Errorf("checkpoint: write the index: %w", err)
		}
	}
	return nil
}
