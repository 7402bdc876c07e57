package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/store"
)

// indexed is the store as a tracker's blobs and index (the session host's
// adapter does the same), counting the contents it is given.
type indexed struct {
	*store.Store
	puts atomic.Int64
	gate func() // called before each PutBlob or PutBlobs
}

func (s *indexed) PutBlob(ctx context.Context, data []byte) (string, error) {
	s.puts.Add(1)
	if s.gate != nil {
		s.gate()
	}
	return s.Store.PutBlob(ctx, data)
}

func (s *indexed) PutBlobs(ctx context.Context, data [][]byte) ([]string, error) {
	s.puts.Add(int64(len(data)))
	if s.gate != nil {
		s.gate()
	}
	return s.Store.PutBlobs(ctx, data)
}

func (s *indexed) LoadIndex(ctx context.Context, root string) ([]IndexEntry, error) {
	rows, err := s.Store.LoadIndex(ctx, root)
	out := make([]IndexEntry, len(rows))
	for i, r := range rows {
		out[i] = IndexEntry(r)
	}
	return out, err
}

func (s *indexed) SaveIndex(ctx context.Context, root string, put []IndexEntry, del []string) error {
	rows := make([]store.FileStat, len(put))
	for i, r := range put {
		rows[i] = store.FileStat(r)
	}
	return s.Store.SaveIndex(ctx, root, rows, del)
}

func newTracker(t testing.TB, root string, blobs Blobs, opts Options) *Tracker {
	t.Helper()
	tr, err := New(root, blobs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// eachMode runs f with inotify's events and with a walk per scan.
func eachMode(t *testing.T, f func(t *testing.T, opts Options)) {
	t.Run("watch", func(t *testing.T) { f(t, Options{}) })
	t.Run("walk", func(t *testing.T) { f(t, Options{NoWatch: true}) })
}

// TestIndexKeptBetweenProcesses: a later tracker on the same store reads
// only the files whose stat changed since, a rewrite that kept the size
// and set the time back included.
func TestIndexKeptBetweenProcesses(t *testing.T) {
	root := t.TempDir()
	for i := range 50 {
		write(t, root, fmt.Sprintf("src/f%02d.py", i), fmt.Sprintf("x = %02d\n", i))
	}
	st := &indexed{Store: openStore(t)}
	scan(t, newTracker(t, root, st, Options{}))
	if n := st.puts.Load(); n != 50 {
		t.Fatalf("the first baseline kept %d files, want 50", n)
	}
	// Far in the past: not racy.
	old := time.Now().Add(-time.Hour)
	for i := range 50 {
		p := filepath.Join(root, fmt.Sprintf("src/f%02d.py", i))
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * racyWindow) // a file read in its change's clock tick is read again: not these
	st.puts.Store(0)
	scan(t, newTracker(t, root, st, Options{})) // learns the new times
	st.puts.Store(0)
	scan(t, newTracker(t, root, st, Options{}))
	if n := st.puts.Load(); n != 0 {
		t.Fatalf("a later baseline of an unchanged workspace read %d files", n)
	}
	write(t, root, "src/f07.py", "y = 07\n") // same size
	if err := os.Chtimes(filepath.Join(root, "src/f07.py"), old, old); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * racyWindow)
	st.puts.Store(0)
	tr := newTracker(t, root, st, Options{})
	scan(t, tr)
	if n := st.puts.Load(); n != 1 {
		t.Fatalf("a later baseline read %d files, want the 1 rewritten (same size and time, new change time)", n)
	}
	// What it learnt is the new content: a step that changes it again
	// records the rewrite as its before.
	write(t, root, "src/f07.py", "z = 7\n")
	ch := scan(t, tr)
	if len(ch) != 1 {
		t.Fatalf("changes %v", paths(ch))
	}
	if _, err := tr.Restore(context.Background(), ch, false); err != nil {
		t.Fatal(err)
	}
	if s, _ := read(t, root, "src/f07.py"); s != "y = 07\n" {
		t.Fatalf("restored %q", s)
	}
}

// TestSyncFollowsTheWorkspace: in both modes a scan sees files created in
// new directories, removed directories, and rewrites.
func TestSyncFollowsTheWorkspace(t *testing.T) {
	eachMode(t, func(t *testing.T, opts Options) {
		root := t.TempDir()
		write(t, root, "a/one.txt", "1")
		write(t, root, "b/two.txt", "2")
		tr := newTracker(t, root, openStore(t), opts)
		scan(t, tr)
		write(t, root, "c/d/three.txt", "3")
		if err := os.RemoveAll(filepath.Join(root, "b")); err != nil {
			t.Fatal(err)
		}
		write(t, root, "a/one.txt", "one")
		write(t, root, "a/__pycache__/x.pyc", "ignored")
		got := paths(scan(t, tr))
		want := []string{"changed a/one.txt", "removed b/two.txt", "created c/d/three.txt"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("changes %v, want %v", got, want)
		}
		if ch := scan(t, tr); len(ch) != 0 {
			t.Fatalf("a second scan reported %v", paths(ch))
		}
		// A directory moved: its files are gone from one place and created
		// in the other.
		if err := os.Rename(filepath.Join(root, "c"), filepath.Join(root, "e")); err != nil {
			t.Fatal(err)
		}
		got = paths(scan(t, tr))
		want = []string{"removed c/d/three.txt", "created e/d/three.txt"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after a move: %v, want %v", got, want)
		}
		write(t, root, "e/d/three.txt", "three")
		if got := paths(scan(t, tr)); !reflect.DeepEqual(got, []string{"changed e/d/three.txt"}) {
			t.Fatalf("a write in the moved directory: %v", got)
		}
	})
}

// TestTrackWithoutScan: a file tool's file is recorded before and after
// its write while the baseline has not run, an ignored file too, and a
// restore puts both back.
func TestTrackWithoutScan(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".gitignore", "data/\n")
	write(t, root, "notes.md", "mine")
	write(t, root, "data/big.csv", "a,b\n")
	tr := newTracker(t, root, openStore(t), Options{})
	ctx := context.Background()
	if ch, err := tr.Track(ctx, "notes.md", "data/big.csv", "new.txt"); err != nil || len(ch) != 0 {
		t.Fatalf("before: %v %v", paths(ch), err)
	}
	write(t, root, "notes.md", "the agent's")
	write(t, root, "data/big.csv", "a,b\n1,2\n")
	write(t, root, "new.txt", "created")
	ch, err := tr.Track(ctx, "notes.md", "data/big.csv", "new.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"changed notes.md", "changed data/big.csv", "created new.txt"}
	if got := paths(ch); !reflect.DeepEqual(got, want) {
		t.Fatalf("after: %v, want %v", got, want)
	}
	// The baseline now: it learns the written files as they are.
	if more := scan(t, tr); len(more) != 0 {
		t.Fatalf("the baseline reported %v", paths(more))
	}
	rep, err := tr.Restore(ctx, ch, false)
	if err != nil || len(rep.Restored) != 2 || len(rep.Removed) != 1 {
		t.Fatalf("restore %+v %v", rep, err)
	}
	for rel, want := range map[string]string{"notes.md": "mine", "data/big.csv": "a,b\n"} {
		if s, _ := read(t, root, rel); s != want {
			t.Errorf("%s = %q, want %q", rel, s, want)
		}
	}
	if ch := scan(t, tr); len(ch) != 0 {
		t.Fatalf("the restore was taken for changes: %v", paths(ch))
	}
}

// TestUserChangeDuringBaselineRestored: a file the user's code rewrites
// while the background baseline runs (after the baseline read it, keeping
// its size and time) is what a rewind of the agent's later change puts
// back, not the content the baseline read; and a file tool's write during
// the baseline does not wait for it.
func TestUserChangeDuringBaselineRestored(t *testing.T) {
	eachMode(t, func(t *testing.T, opts Options) {
		root := t.TempDir()
		write(t, root, "a.txt", "v0 original") // read first (sorted)
		for i := range 20 {
			write(t, root, fmt.Sprintf("b%02d.txt", i), "other")
		}
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(filepath.Join(root, "a.txt"), old, old); err != nil {
			t.Fatal(err)
		}
		held, release := make(chan struct{}), make(chan struct{})
		var first atomic.Bool
		// The baseline waits when it first keeps contents: it has read
		// a.txt, and the rest.
		st := &indexed{Store: openStore(t), gate: func() {
			if first.CompareAndSwap(false, true) {
				close(held)
				<-release
			}
		}}
		tr := newTracker(t, root, st, opts)
		ctx := context.Background()
		done := make(chan error, 1)
		go func() { _, err := tr.Baseline(ctx, true); done <- err }()
		<-held
		if tr.Learned() {
			t.Fatal("the baseline is done while it waits")
		}
		// The user's code, same size and time.
		write(t, root, "a.txt", "v1 by user!")
		if err := os.Chtimes(filepath.Join(root, "a.txt"), old, old); err != nil {
			t.Fatal(err)
		}
		// A file tool's write meanwhile is recorded without waiting.
		tracked := make(chan []Change, 1)
		go func() {
			tr.Track(ctx, "tool.txt")
			write(t, root, "tool.txt", "by the file tool")
			ch, _ := tr.Track(ctx, "tool.txt")
			tracked <- ch
		}()
		select {
		case ch := <-tracked:
			if got := paths(ch); !reflect.DeepEqual(got, []string{"created tool.txt"}) {
				t.Fatalf("the file tool's write: %v", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the file tool waited for the baseline")
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// The agent's step: code that rewrites a.txt.
		if ch := scan(t, tr); !reflect.DeepEqual(paths(ch), []string{"changed a.txt"}) {
			t.Fatalf("the scan before the agent's step: %v (the user's rewrite is learnt here)", paths(ch))
		}
		write(t, root, "a.txt", "v2 by the agent's code")
		ch := scan(t, tr)
		if got := paths(ch); !reflect.DeepEqual(got, []string{"changed a.txt"}) {
			t.Fatalf("the agent's step: %v", got)
		}
		if _, err := tr.Restore(ctx, ch, false); err != nil {
			t.Fatal(err)
		}
		if s, _ := read(t, root, "a.txt"); s != "v1 by user!" {
			t.Fatalf("a.txt restored to %q, want the user's %q", s, "v1 by user!")
		}
	})
}

// BenchmarkBaselineNewStore is the first baseline of 2,000 small files:
// each read and kept.
func BenchmarkBaselineNewStore(b *testing.B) {
	root := b.TempDir()
	for i := range 2000 {
		write(b, root, fmt.Sprintf("src/pkg%02d/m%04d.py", i/50, i), fmt.Sprintf("def f%d(x):\n    return x * %d\n", i, i))
	}
	for b.Loop() {
		st := &indexed{Store: openStore(b)}
		tr := newTracker(b, root, st, Options{})
		if _, err := tr.Baseline(context.Background(), false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSyncAfterStep is the scan after a step that changed one file,
// in a workspace of 10,000 tracked files (inotify names the file).
func BenchmarkSyncAfterStep(b *testing.B) {
	root, tr := learntWorkspace(b, 10000)
	i := 0
	for b.Loop() {
		i++
		write(b, root, "src/pkg000/m00000.py", fmt.Sprintf("x = %d\n", i))
		if ch := scan(b, tr); len(ch) != 1 {
			b.Fatalf("changes %v", paths(ch))
		}
	}
}

// BenchmarkSyncManyNewFiles is the scan after a step that created 2,000
// files in a workspace of 10,000.
func BenchmarkSyncManyNewFiles(b *testing.B) {
	root, tr := learntWorkspace(b, 10000)
	for n := 0; b.Loop(); n++ {
		b.StopTimer()
		dir := filepath.Join(root, fmt.Sprintf("out%d", n))
		for i := range 2000 {
			write(b, dir, fmt.Sprintf("f%04d.csv", i), "a,b\n")
		}
		b.StartTimer()
		if ch := scan(b, tr); len(ch) != 2000 {
			b.Fatalf("%d changes", len(ch))
		}
	}
}

// learntWorkspace is a workspace of n small files in directories of 50,
// and a tracker that has learnt it.
func learntWorkspace(b *testing.B, n int) (string, *Tracker) {
	root := b.TempDir()
	for i := range n {
		write(b, root, fmt.Sprintf("src/pkg%03d/m%05d.py", i/50, i), fmt.Sprintf("x = %d\n", i))
	}
	tr := newTracker(b, root, openStore(b), Options{})
	scan(b, tr)
	return root, tr
}
