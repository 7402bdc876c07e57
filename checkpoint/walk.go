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
	type job struct{ abs, rel string }
	jobs := make(chan job, 64)
	var (
		mu      sync.Mutex
		pending sync.WaitGroup
		wg      sync.WaitGroup
		queue   []job // overflow when jobs is full: a worker never blocks sending
	)
	push := func(j job) {
		pending.Add(1)
		select {
		case jobs <- j:
		default:
			mu.Lock()
			queue = append(queue, j)
			mu.Unlock()
		}
	}
	next := func() (job, bool) {
		mu.Lock()
		defer mu.Unlock()
		if n := len(queue); n > 0 {
			j := queue[n-1]
			queue = queue[:n-1]
			return j, true
		}
		return job{}, false
	}
	visit := func(j job) {
		defer pending.Done()
		if ctx.Err() != nil {
			return
		}
		t.watchDir(j.abs, j.rel)
		f, err := openDir(j.abs)
		if err != nil {
			mu.Lock()
			unreadable = append(unreadable, j.rel)
			mu.Unlock()
			return
		}
		defer f.Close()
		ents, err := f.ReadDir(-1)
		if err != nil {
			mu.Lock()
			unreadable = append(unreadable, j.rel)
			mu.Unlock()
		}
		var local []stat
		var bad []string
		for _, e := range ents {
			rel := path.Join(j.rel, e.Name())
			switch {
			case e.IsDir():
				if !t.ignored(rel, true) {
					push(job{filepath.Join(j.abs, e.Name()), rel})
				}
			case e.Type().IsRegular():
				if t.ignored(rel, false) {
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
		mu.Lock()
		files = append(files, local...)
		unreadable = append(unreadable, bad...)
		mu.Unlock()
	}
	// The start's own listing must work: an unreadable workspace is an error.
	start := filepath.Join(t.root, filepath.FromSlash(from))
	if _, err := os.ReadDir(start); err != nil {
		return nil, nil, err
	}
	if workers == 1 {
		// On the caller's goroutine (the baseline's, on its own thread at
		// a low priority): nothing else adds jobs, so it ends when none
		// is left.
		push(job{start, from})
		for {
			select {
			case j := <-jobs:
				visit(j)
				continue
			default:
			}
			q, ok := next()
			if !ok {
				break
			}
			visit(q)
		}
		return t.walked(ctx, files, unreadable)
	}
	for range workers {
		wg.Add(1)
		go func() { // owned by walk: ends when jobs closes, waited for below
			defer wg.Done()
			for j := range jobs {
				visit(j)
				for {
					q, ok := next()
					if !ok {
						break
					}
					visit(q)
				}
			}
		}()
	}
	push(job{start, from})
	pending.Wait()
	close(jobs)
	wg.Wait()
	return t.walked(ctx, files, unreadable)
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
