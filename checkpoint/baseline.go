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
	prev := map[string]IndexEntry{}
	if t.index != nil {
		rows, err := t.index.LoadIndex(ctx, t.root)
		if err != nil {
			return rep, fmt.Errorf("checkpoint: read the index: %w", err)
		}
		for _, r := range rows {
			prev[r.Path] = r
		}
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
	var put []IndexEntry
	save := func() error {
		if t.index == nil || len(put) == 0 {
			return nil
		}
		err := t.index.SaveIndex(context.WithoutCancel(ctx), t.root, put, nil)
		put = put[:0]
		return err
	}
	learnt := func(rel string, e entry) {
		if e.hash == Unkept {
			rep.Unkept = append(rep.Unkept, rel)
		}
		t.mu.Lock()
		if old, ok := t.files[rel]; !ok || !old.tracked {
			t.setLocked(rel, e)
		}
		t.mu.Unlock()
	}
	// Contents are kept in batches: one transaction for many small files.
	batch := batcher{t: t, done: func(rel string, e entry) error {
		learnt(rel, e)
		put = append(put, e.indexEntry(rel))
		if len(put) >= 256 {
			if err := save(); err != nil {
				return fmt.Errorf("checkpoint: write the index: %w", err)
			}
		}
		return nil
	}}
	seen := make(map[string]bool, len(files))
	for i, f := range files {
		if background && i%256 == 255 {
			runtime.Gosched() // a yield costs two thread switches: not per file
		}
		if err := ctx.Err(); err != nil {
			return rep, errors.Join(err, batch.flush(ctx), save())
		}
		seen[f.rel] = true
		if p, ok := prev[f.rel]; ok && p.Size == f.size && p.MTime == f.mtime && p.CTime == f.ctime && p.Inode == f.ino &&
			(p.Hash == Withheld || !t.withheld(f.rel)) {
			learnt(f.rel, entry{fileStat: f.fileStat, hash: p.Hash}) // as the index knows it: not read
			continue
		}
		e, data, err := t.load(f.rel, f.fileStat, t.keptCount()+len(batch.items) >= t.opts.MaxFiles, &t.buf)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // removed since the walk
		case err != nil:
			rep.Unreadable = append(rep.Unreadable, f.rel)
			continue
		case e.hash != "": // not to be kept
			learnt(f.rel, e)
			put = append(put, e.indexEntry(f.rel))
			continue
		}
		if err := batch.add(ctx, f.rel, e, data); err != nil {
			return rep, err
		}
	}
	if err := batch.flush(ctx); err != nil {
		return rep, err
	}
	shrink(&t.buf)
	var del []string
	for p := range prev {
		if !seen[p] {
			del = append(del, p)
		}
	}
	if t.index != nil && len(put)+len(del) > 0 {
		if err := t.index.SaveIndex(context.WithoutCancel(ctx), t.root, put, del); err != nil {
			return rep, fmt.Errorf("checkpoint: write the index: %w", err)
		}
	}
	t.mu.Lock()
	for p, e := range t.files {
		e.tracked = false
		t.files[p] = e
	}
	t.mu.Unlock()
	t.learned = true
	return rep, nil
}
