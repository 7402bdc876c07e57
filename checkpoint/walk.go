package checkpoint

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"
)

// fileStat is what a stat says of a file: enough to tell that it changed
// without reading it (as git's index does). The change time and the inode
// catch a rewrite that kept the size and set the modification time back.
type fileStat struct {
	size, mtime, ctime, ino int64
}

// stat is what a scan learns of one regular file.
type stat struct {
	rel string
	fileStat
}

// walk lists the regular files that are not ignored under the workspace
// directory from ("" for all of it), with their stat, reading directories
// on up to workers goroutines: a scan is mostly system calls (one stat per
// file), and on a machine with several CPUs they run side by side. Each
// directory is watched (when the tracker watches) before it is listed, so
// that nothing created after its listing goes unseen. Paths it could not
// read are returned in unreadable.
func (t *Tracker) walk(ctx context.Context, from string, workers int) (files []stat, unreadable []string, err error) {
	workers = max(1, workers)
	w := &walker{t: t, jobs: make(chan dirJob, 64)}
	// The start's own listing must work: an unreadable workspace is an error.
	start := filepath.Join(t.root, filepath.FromSlash(from))
	if _, err := os.ReadDir(start); err != nil {
		return nil, nil, err
	}
	if workers == 1 {
		w.alone(ctx, dirJob{start, from})
	} else {
		w.together(ctx, dirJob{start, from}, workers)
	}
	return t.walked(ctx, w.files, w.unreadable)
}

// dirJob is a directory for a walk to list.
type dirJob struct{ abs, rel string }

// walker is one walk in progress: the directories still to list, and what
// the listings found.
type walker struct {
	t       *Tracker
	jobs    chan dirJob
	pending sync.WaitGroup // the directories pushed and not yet listed

	mu         sync.Mutex // guards queue, files and unreadable
	queue      []dirJob   // overflow when jobs is full: a worker never blocks sending
	files      []stat
	unreadable []string
}

// alone lists the directories from start on the caller's goroutine (the
// baseline's, on its own thread at a low priority): nothing else adds
// jobs, so it ends when none is left.
func (w *walker) alone(ctx context.Context, start dirJob) {
	w.push(start)
	for {
		select {
		case j := <-w.jobs:
			w.visit(ctx, j)
			continue
		default:
		}
		q, ok := w.next()
		if !ok {
			return
		}
		w.visit(ctx, q)
	}
}

// together lists the directories from start on workers goroutines, and
// waits for them.
func (w *walker) together(ctx context.Context, start dirJob, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() { // owned by together: ends when jobs closes, waited for below
			defer wg.Done()
			for j := range w.jobs {
				w.visit(ctx, j)
				for {
					q, ok := w.next()
					if !ok {
						break
					}
					w.visit(ctx, q)
				}
			}
		}()
	}
	w.push(start)
	w.pending.Wait()
	close(w.jobs)
	wg.Wait()
}

// push adds a directory to list, to the queue when jobs is full.
func (w *walker) push(j dirJob) {
	w.pending.Add(1)
	select {
	case w.jobs <- j:
	default:
		w.mu.Lock()
		w.queue = append(w.queue, j)
		w.mu.Unlock()
	}
}

// next takes a directory off the queue.
func (w *walker) next() (dirJob, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.queue); n > 0 {
		j := w.queue[n-1]
		w.queue = w.queue[:n-1]
		return j, true
	}
	return dirJob{}, false
}

// visit lists the directory j (after watching it): its directories not
// ignored are pushed, and its regular files not ignored are stat'd.
func (w *walker) visit(ctx context.Context, j dirJob) {
	defer w.pending.Done()
	if ctx.Err() != nil {
		return
	}
	w.t.watchDir(j.abs, j.rel)
	f, err := openDir(j.abs)
	if err != nil {
		w.mu.Lock()
		w.unreadable = append(w.unreadable, j.rel)
		w.mu.Unlock()
		return
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		w.mu.Lock()
		w.unreadable = append(w.unreadable, j.rel)
		w.mu.Unlock()
	}
	var local []stat
	var bad []string
	for _, e := range ents {
		rel := path.Join(j.rel, e.Name())
		switch {
		case e.IsDir():
			if !w.t.ignored(rel, true) {
				w.push(dirJob{filepath.Join(j.abs, e.Name()), rel})
			}
		case e.Type().IsRegular():
			if w.t.ignored(rel, false) {
				continue
			}
			st, err := statAt(f, j.abs, e.Name())
			if err != nil {
				bad = append(bad, rel)
				continue
			}
			local = append(local, stat{rel: rel, fileStat: st})
		}
	}
	w.mu.Lock()
	w.files = append(w.files, local...)
	w.unreadable = append(w.unreadable, bad...)
	w.mu.Unlock()
}

// walked finishes a walk: in path order, or the context's error.
func (t *Tracker) walked(ctx context.Context, files []stat, unreadable []string) ([]stat, []string, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, unreadable, nil
}

// watchDir watches a directory the walk is about to list.
func (t *Tracker) watchDir(abs, rel string) {
	if t.watch != nil {
		t.watch.add(abs, rel)
	}
}
