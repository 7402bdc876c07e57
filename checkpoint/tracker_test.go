package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/store"
)

func openStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func write(t testing.TB, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, root, rel string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func scan(t testing.TB, tr *Tracker) []Change {
	t.Helper()
	ch, _, err := tr.Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func paths(ch []Change) []string {
	var out []string
	for _, c := range ch {
		out = append(out, c.Kind()+" "+c.Path)
	}
	return out
}

// TestSyncAndRestore: a step's changes are seen by the scans around it,
// and turned back by Restore: created files removed, changed and removed
// ones restored.
func TestSyncAndRestore(t *testing.T) {
	root := t.TempDir()
	write(t, root, "keep.txt", "untouched")
	write(t, root, "data/a.csv", "1,2\n")
	write(t, root, "old.txt", "will be removed")
	tr, err := New(root, openStore(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ch := scan(t, tr); len(ch) != 0 {
		t.Fatalf("the first scan reported %v", paths(ch))
	}
	// The step.
	write(t, root, "data/a.csv", "1,2\n3,4\n")
	write(t, root, "new/b.txt", "created")
	os.Remove(filepath.Join(root, "old.txt"))
	ch := scan(t, tr)
	if got, want := paths(ch), []string{"changed data/a.csv", "created new/b.txt", "removed old.txt"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	if ch2 := scan(t, tr); len(ch2) != 0 {
		t.Fatalf("a scan of an unchanged workspace reported %v", paths(ch2))
	}
	rep, err := tr.Restore(context.Background(), ch, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Conflicts)+len(rep.Unrestorable) != 0 || len(rep.Restored) != 2 || len(rep.Removed) != 1 {
		t.Fatalf("report %+v", rep)
	}
	if s, _ := read(t, root, "data/a.csv"); s != "1,2\n" {
		t.Fatalf("a.csv = %q", s)
	}
	if s, _ := read(t, root, "old.txt"); s != "will be removed" {
		t.Fatalf("old.txt = %q", s)
	}
	if _, ok := read(t, root, "new/b.txt"); ok {
		t.Fatal("the created file is still there")
	}
	if ch := scan(t, tr); len(ch) != 0 {
		t.Fatalf("the restore itself was taken for changes: %v", paths(ch))
	}
}

// TestRestoreConflict: a file changed outside the agent after its change
// is left alone and reported; force overwrites it.
func TestRestoreConflict(t *testing.T) {
	root := t.TempDir()
	write(t, root, "notes.md", "v1")
	tr, err := New(root, openStore(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	scan(t, tr)
	write(t, root, "notes.md", "v2 by the agent")
	ch := scan(t, tr)
	write(t, root, "notes.md", "v3 by the user")
	rep, err := tr.Restore(context.Background(), ch, false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.Conflicts, []string{"notes.md"}) || len(rep.Restored) != 0 {
		t.Fatalf("report %+v", rep)
	}
	if s, _ := read(t, root, "notes.md"); s != "v3 by the user" {
		t.Fatalf("the user's edit was overwritten: %q", s)
	}
	rep, err = tr.Restore(context.Background(), ch, true)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := read(t, root, "notes.md"); s != "v1" || len(rep.Restored) != 1 {
		t.Fatalf("forced restore: %q, %+v", s, rep)
	}
}

func TestIgnoreAndLimits(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".gitignore", "*.log\n/build/\ncache/\n# comment\n!keep.log\n")
	tr, err := New(root, openStore(t), Options{MaxFileSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	scan(t, tr)
	for _, rel := range []string{".git/HEAD", "node_modules/x/index.js", "a.log", "build/out.bin", "sub/cache/c",
		"src/__pycache__/m.pyc", "sub/build/kept.txt", "big.bin"} {
		content := "x"
		if rel == "big.bin" {
			content = string(bytes.Repeat([]byte("b"), 200))
		}
		write(t, root, rel, content)
	}
	got := paths(scan(t, tr))
	want := []string{"created big.bin", "created sub/build/kept.txt"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tracked %v, want %v", got, want)
	}
	// The big file is tracked without content: a rewind says it cannot
	// restore it.
	os.Remove(filepath.Join(root, "big.bin"))
	ch := scan(t, tr)
	rep, err := tr.Restore(context.Background(), ch, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Unrestorable) != 1 {
		t.Fatalf("report %+v, want big.bin unrestorable", rep)
	}
}

func TestRestoreRefusesToLeaveTheWorkspace(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	tr, err := New(root, openStore(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := tr.Restore(context.Background(), []Change{
		{Path: "../escape.txt", After: "h"}, {Path: "link/x.txt", After: "h"},
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Unrestorable) != 2 {
		t.Fatalf("report %+v", rep)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatal("a restore wrote outside the workspace")
	}
}

// TestUnchangedBigFileStoredOnce: 100 checkpoints of an unchanged 10 MB
// file (touched, rewritten with the same content) store it once.
func TestUnchangedBigFileStoredOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 10 MB a hundred times")
	}
	root := t.TempDir()
	content := bytes.Repeat([]byte("0123456789abcdef"), 10<<20/16)
	if err := os.WriteFile(filepath.Join(root, "big.dat"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	tr, err := New(root, st, Options{MaxFileSize: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		now := time.Now().Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(filepath.Join(root, "big.dat"), now, now); err != nil {
			t.Fatal(err)
		}
		if ch := scan(t, tr); len(ch) != 0 {
			t.Fatalf("checkpoint %d: %v", i, paths(ch))
		}
	}
	// Closing folds the write-ahead log into the database file.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(st.Path())
	if err != nil {
		t.Fatal(err)
	}
	size := fi.Size()
	t.Logf("store after 100 checkpoints of a 10 MB file: %.1f MB", float64(size)/1e6)
	if size > 11e6 {
		t.Fatalf("store grew to %d bytes", size)
	}
}

// BenchmarkSyncUnchanged is the checkpoint cost per code run with a
// 1,000-file workspace: two scans (before and after) that find nothing.
func BenchmarkSyncUnchanged(b *testing.B) {
	root := b.TempDir()
	for i := 0; i < 1000; i++ {
		write(b, root, fmt.Sprintf("d%02d/f%04d.txt", i%20, i), fmt.Sprintf("file %d\n", i))
	}
	tr, err := New(root, openStore(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	scan(b, tr)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		scan(b, tr)
		scan(b, tr)
	}
}

// TestJupyterStateNeverKept: jupyter-collaboration's document store and
// its journal beside a notebook, Jupyter's notebook checkpoints and
// runtime files are not the user's workspace: a step that changes them
// records nothing of them and stores none of their bytes (a store that
// grew by the whole database at every step), not even when a file tool
// writes one, and a rewind leaves them as the running server has them.
// The notebook and the user's files beside them are tracked as before.
func TestJupyterStateNeverKept(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	state := []string{"work/.jupyter_ystore.db", "work/.jupyter_ystore.db-journal", "work/.ipynb_checkpoints/nb-checkpoint.ipynb",
		"work/.~nb.ipynb", "work/.virtual_documents/nb.ipynb", ".local/share/jupyter/runtime/kernel-1.json",
		".local/share/jupyter/file_id_manager.db"}
	for _, p := range state {
		write(t, root, p, "jupyterstate-1 "+p)
	}
	write(t, root, "work/nb.ipynb", "{}")
	write(t, root, "work/data.csv", "1\n")
	blobs := &keptBlobs{Store: openStore(t)}
	tr, err := New(root, blobs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Baseline(ctx, false); err != nil {
		t.Fatal(err)
	}
	for _, p := range state { // the server writes its state at every step
		write(t, root, p, "jupyterstate-2 "+p)
	}
	write(t, root, "work/nb.ipynb", `{"cells": []}`)
	write(t, root, "work/data.csv", "1\n2\n")
	ch := scan(t, tr)
	if got, want := paths(ch), []string{"changed work/data.csv", "changed work/nb.ipynb"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	// A file tool's write to the store is recorded without its content.
	write(t, root, "work/.jupyter_ystore.db", "jupyterstate-3")
	tch, err := tr.Track(ctx, "work/.jupyter_ystore.db")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range tch {
		if c.After != Withheld {
			t.Errorf("a file tool's write to %s kept as %q", c.Path, c.After)
		}
	}
	write(t, root, "work/.jupyter_ystore.db", "jupyterstate-4 the server's")
	rep, err := tr.Restore(ctx, append(ch, tch...), true)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := read(t, root, "work/.jupyter_ystore.db"); s != "jupyterstate-4 the server's" {
		t.Errorf("the rewind put back the document store: %q", s)
	}
	if s, _ := read(t, root, "work/data.csv"); s != "1\n" {
		t.Errorf("data.csv = %q (restore report %+v)", s, rep)
	}
	if blobs.holding("jupyterstate") {
		t.Error("the blob store was given Jupyter's state")
	}
}
