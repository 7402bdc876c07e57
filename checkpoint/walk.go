package checkpoint

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
)

// stat is what a scan learns of one regular file.
type stat struct {
	rel         string
	size, mtime int64
}

// walk lists the workspace's regular files that are not ignored, with
// their size and modification time, reading directories on several
// goroutines: a scan is mostly system calls (one stat per file), and on a
// machine with several CPUs they run side by side. Paths it could not read
// are returned in unreadable.
func (t *Tracker) walk(ctx context.Context) (files []stat, unreadable []string, err error) {
	workers := min(runtime.GOMAXPROCS(0), 4)
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
				size, mtime, err := statAt(f, j.abs, e.Name())
				if err != nil {
					bad = append(bad, rel)
					continue
				}
				local = append(local, stat{rel: rel, size: size, mtime: mtime})
			}
		}
		mu.Lock()
		files = append(files, local...)
		unreadable = append(unreadable, bad...)
		mu.Unlock()
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
	// The root's own listing must work: an unreadable workspace is an error.
	if _, err := os.ReadDir(t.root); err != nil {
		close(jobs)
		wg.Wait()
		return nil, nil, err
	}
	push(job{t.root, ""})
	pending.Wait()
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, unreadable, nil
}
