// Package checkpoint keeps what a rewind needs to put a workspace's files
// back: a Tracker learns the workspace once (its baseline), keeps the
// content of every file it has seen in a content-addressed blob store (a
// file that did not change costs nothing more), and reports what changed
// between two scans. The session host scans around every step that may
// change the workspace (the code the agent runs) and records the changes;
// the agent's file tools record the files they write with Track, before
// and after the write. Restore turns recorded changes back, refusing files
// changed by someone else since (conflicts) unless forced.
//
// What makes it cheap in a workspace of gigabytes:
//   - the baseline runs off the prompt's path (the host starts it in the
//     background when the kernel starts) and a scan waits for it only when
//     it must compare with it;
//   - an index like git's, kept in the store (Index), holds each file's
//     size, modification and change times, inode and content hash: a later
//     process reads only the files that changed since;
//   - on Linux, inotify says which paths changed between two scans, so a
//     scan stats those rather than every file (it walks everything again
//     when events were lost);
//   - a file over MaxFileSize is never read: it gets its stat only, and a
//     rewind names it among the files it could not restore. Memory is
//     bounded by MaxFileSize, whatever the files' sizes.
//
// A file written in the same clock tick as it was read could look
// unchanged by its stat afterwards; such entries are marked racy (as git
// does) and read again by the next scan.
//
// Limits, all in Options: files larger than MaxFileSize and files past
// MaxFiles are tracked by their stat only; .git, node_modules, caches and
// virtual environments, and what the workspace's top-level .gitignore names
// are not scanned (a file tool's write to one is still recorded); Jupyter's
// own state (jupyterState) is neither scanned nor kept; symbolic links are
// neither followed nor restored.
//
// Secrets are never kept: a protected file (internal/protect's list, the
// one the agent's file tools refuse: .env, keys, credentials, tokens), a
// file that holds a private key whatever its name, and what Options.Ignore
// names are tracked by their stat at most, with the hash Withheld. Their
// changes are recorded without content, and Restore leaves them alone and
// says so (RestoreReport.Protected).
package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentkernel/agentkernel/internal/protect"
)

// Blobs stores file contents by hash (the session store does).
type Blobs interface {
	PutBlob(ctx context.Context, data []byte) (string, error)
	Blob(ctx context.Context, hash string) ([]byte, error)
}

// BatchBlobs are Blobs that store many contents in one transaction (the
// session store does); the baseline uses it when its Blobs implement it.
type BatchBlobs interface {
	PutBlobs(ctx context.Context, data [][]byte) ([]string, error)
}

// Index keeps a tracker's index between processes (the session store
// does), per workspace root. Optional: Blobs that implement it are used.
type Index interface {
	LoadIndex(ctx context.Context, root string) ([]IndexEntry, error)
	// SaveIndex writes put and removes del, in one transaction.
	SaveIndex(ctx context.Context, root string, put []IndexEntry, del []string) error
}

// IndexEntry is what the index knows of one file. A Size of -1 means that
// the file must be read again (its entry was racy).
type IndexEntry struct {
	Path                      string
	Size, MTime, CTime, Inode int64
	Hash                      string
}

// Options configure a Tracker. The zero value of each field has the
// default documented there.
type Options struct {
	// MaxFileSize is the largest file whose content is kept; larger files
	// are never read. Default 8 MiB.
	MaxFileSize int64
	// MaxFiles is how many files are tracked with their content; the rest
	// by their stat only. Default 20,000.
	MaxFiles int
	// Ignore lists more patterns to leave out, as .gitignore lines: they
	// are not scanned, and their content is never kept, not even of a
	// file tool's write (as Withheld).
	Ignore []string
	// NoWatch makes every scan walk the workspace instead of following
	// inotify's events: for file systems changed by other machines (NFS),
	// whose changes inotify does not see.
	NoWatch bool
	// Workers is how many directories a foreground scan reads at once.
	// Default the machine's CPUs, at most 4.
	Workers int
	// Processor, when set, lends the background baseline a processor of
	// its own while it runs (the process owns GOMAXPROCS: a kernel runs on
	// one) and returns its release; the tracker never sets GOMAXPROCS.
	Processor func() (release func())
}

// DefaultMaxFileSize is MaxFileSize's default.
const DefaultMaxFileSize = 8 << 20

func (o Options) withDefaults() Options {
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = 20000
	}
	if o.Workers <= 0 {
		o.Workers = min(runtime.NumCPU(), 4)
	}
	return o
}

// defaultIgnore is never tracked: version control, dependencies, caches.
var defaultIgnore = []string{".git/", ".hg/", ".svn/", "node_modules/", "__pycache__/",
	".venv/", "venv/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/", ".tox/", "*.pyc", ".DS_Store"}

// jupyterState is Jupyter's own state where it sits in a workspace:
// jupyter-collaboration's document store (SQLite, with its journal and
// WAL) beside the notebooks, the contents manager's notebook checkpoints
// and the copy it keeps while it saves a notebook (".~NAME.ipynb"),
// jupyterlab-lsp's virtual documents, and, in a workspace that holds
// Jupyter's data directory (a home directory), the runtime directory
// (kernel connection files, servers' files, kernels' sockets) and
// jupyter-server-fileid's database. It is never part of the user's
// workspace: not scanned, its content never kept (as Options.Ignore), so a
// rewind never puts an older copy back under a running server. The user
// extends the list with Options.Ignore.
var jupyterState = []string{".jupyter_ystore.db*", ".ipynb_checkpoints/", ".~*.ipynb", ".virtual_documents/",
	"**/jupyter/runtime/", "file_id_manager.db*"}

// Unkept is the hash recorded for a file whose content was not kept (over
// the limits): a change from or to it cannot be turned back.
const Unkept = "-"

// Withheld is the hash recorded for a file whose content is never kept
// because it may hold secrets (protected, or named by Options.Ignore): its
// changes are known by their stat, and a rewind leaves it alone.
const Withheld = "!"

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

// entry is what the tracker knows of a file.
type entry struct {
	fileStat
	hash string
	// racy: read in the clock tick of its last write; read again by the
	// next scan, however its stat looks.
	racy bool
	// tracked: learnt by Track while the baseline ran, which must not
	// replace it; extra: outside what scans see (ignored), kept by Track.
	tracked, extra bool
}

// racyWindow is how close to the moment a file is read its last write may
// be for a later write to leave its stat unchanged: file times come from a
// coarse clock (a scheduler tick, at most 10 ms), and may lag.
const racyWindow = 50 * time.Millisecond

// Tracker follows one workspace. It is safe for concurrent use: scans
// (the baseline, Sync, Restore) run one at a time; Track runs beside them.
type Tracker struct {
	root   string
	opts   Options
	blobs  Blobs
	index  Index // nil: not kept between processes
	ignore []pattern
	// never are jupyterState and the user's patterns (Options.Ignore): not
	// scanned, and never kept (withheld).
	never []pattern
	watch *watcher // nil: every scan walks

	scan    sync.Mutex // one scan at a time
	learned bool       // the baseline is done (guarded by scan)
	buf     bytes.Buffer

	mu    sync.Mutex // guards files, racy and kept
	files map[string]entry
	racy  map[string]bool // the racy entries of files: every scan reads them again
	kept  int             // the entries with content (MaxFiles counts them)
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
	t := &Tracker{root: abs, opts: opts, blobs: blobs, files: map[string]entry{}, racy: map[string]bool{}}
	t.index, _ = blobs.(Index)
	lines := append([]string(nil), defaultIgnore...)
	if b, err := os.ReadFile(filepath.Join(abs, ".gitignore")); err == nil {
		lines = append(lines, strings.Split(string(b), "\n")...)
	}
	t.ignore = parsePatterns(lines)
	t.never = parsePatterns(append(append([]string(nil), jupyterState...), opts.Ignore...))
	if !opts.NoWatch {
		t.watch = newWatcher()
	}
	return t, nil
}

// Close stops watching the workspace.
func (t *Tracker) Close() {
	if t.watch != nil {
		t.watch.close()
	}
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

// errKeep marks a failure of the blob store (not of the file).
var errKeep = errors.New("checkpoint: keep content")

// load stats and reads the file rel into buf, returning its entry (its
// hash Withheld when it may hold secrets, Unkept when it is over the
// limits, or when unkept, else still to be set) and its content (buf's,
// valid until its next use). The stat is taken on the open file before and
// after the read: a file that changed meanwhile is marked racy, to be read
// again by the next scan.
func (t *Tracker) load(rel string, st fileStat, unkept bool, buf *bytes.Buffer) (entry, []byte, error) {
	if t.withheld(rel) {
		return entry{fileStat: st, hash: Withheld}, nil, nil
	}
	if unkept || st.size > t.opts.MaxFileSize {
		return entry{fileStat: st, hash: Unkept}, nil, nil
	}
	f, err := os.Open(filepath.Join(t.root, filepath.FromSlash(rel)))
	if err != nil {
		return entry{}, nil, err
	}
	defer f.Close()
	now := time.Now().Add(-racyWindow).UnixNano()
	before, err := fstat(f)
	if err != nil {
		return entry{}, nil, err
	}
	if before.size > t.opts.MaxFileSize {
		return entry{fileStat: before, hash: Unkept}, nil, nil
	}
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(f, t.opts.MaxFileSize+1)); err != nil {
		return entry{}, nil, err
	}
	after, err := fstat(f)
	if err != nil {
		return entry{}, nil, err
	}
	if int64(buf.Len()) > t.opts.MaxFileSize {
		return entry{fileStat: after, hash: Unkept}, nil, nil
	}
	racy := after != before || after.mtime >= now || after.ctime >= now
	if protect.Content(buf.Bytes()) != "" {
		return entry{fileStat: after, racy: racy, hash: Withheld}, nil, nil
	}
	return entry{fileStat: after, racy: racy}, buf.Bytes(), nil
}

// read loads the file rel and keeps its content: its entry.
func (t *Tracker) read(ctx context.Context, rel string, st fileStat, unkept bool, buf *bytes.Buffer) (entry, error) {
	e, data, err := t.load(rel, st, unkept, buf)
	if err != nil || e.hash != "" {
		return e, err
	}
	defer shrink(buf)
	if e.hash, err = t.blobs.PutBlob(ctx, data); err != nil {
		return entry{}, fmt.Errorf("%w %s: %w", errKeep, rel, err)
	}
	return e, nil
}

// keep stores contents, in one transaction where the store can.
func (t *Tracker) keep(ctx context.Context, data [][]byte) ([]string, error) {
	if b, ok := t.blobs.(BatchBlobs); ok {
		return b.PutBlobs(ctx, data)
	}
	hashes := make([]string, len(data))
	for i, d := range data {
		h, err := t.blobs.PutBlob(ctx, d)
		if err != nil {
			return nil, err
		}
		hashes[i] = h
	}
	return hashes, nil
}

// shrink lets a buffer that held a big file go.
func shrink(buf *bytes.Buffer) {
	if buf.Cap() > 1<<20 {
		*buf = bytes.Buffer{}
	}
}

func (e entry) indexEntry(rel string) IndexEntry {
	ie := IndexEntry{Path: rel, Size: e.size, MTime: e.mtime, CTime: e.ctime, Inode: e.ino, Hash: e.hash}
	if e.racy {
		ie.Size = -1
	}
	return ie
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

// setLocked records e for p, keeping racy and kept in step (t.mu held).
func (t *Tracker) setLocked(p string, e entry) {
	if old, ok := t.files[p]; ok && old.hasContent() {
		t.kept--
	}
	if e.hasContent() {
		t.kept++
	}
	if e.racy {
		t.racy[p] = true
	} else {
		delete(t.racy, p)
	}
	t.files[p] = e
}

func (e entry) hasContent() bool { return e.hash != Unkept && e.hash != Withheld && e.hash != "" }

func (t *Tracker) forget(p string) {
	t.mu.Lock()
	if old, ok := t.files[p]; ok && old.hasContent() {
		t.kept--
	}
	delete(t.files, p)
	delete(t.racy, p)
	t.mu.Unlock()
}

// keptCount is how many files are tracked with their content.
func (t *Tracker) keptCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.kept
}

// batcher keeps the contents of files read in batches: one transaction
// per 256 files or 4 MiB. done gets each file's entry, hash set.
type batcher struct {
	t     *Tracker
	done  func(rel string, e entry) error
	items []batched
	size  int
}

type batched struct {
	rel  string
	e    entry
	data []byte
}

// add queues a file read (data is copied: the read buffer is reused).
func (b *batcher) add(ctx context.Context, rel string, e entry, data []byte) error {
	b.items = append(b.items, batched{rel: rel, e: e, data: bytes.Clone(data)})
	b.size += len(data)
	if b.size >= 4<<20 || len(b.items) >= 256 {
		return b.flush(ctx)
	}
	return nil
}

func (b *batcher) flush(ctx context.Context) error {
	if len(b.items) == 0 {
		return nil
	}
	data := make([][]byte, len(b.items))
	for i, it := range b.items {
		data[i] = it.data
	}
	hashes, err := b.t.keep(ctx, data)
	if err != nil {
		return fmt.Errorf("%w: %w", errKeep, err)
	}
	items := b.items
	b.items, b.size = nil, 0
	for i, it := range items {
		it.e.hash = hashes[i]
		if err := b.done(it.rel, it.e); err != nil {
			return err
		}
	}
	return nil
}

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
