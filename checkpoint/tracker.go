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
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
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
