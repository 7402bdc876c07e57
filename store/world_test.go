package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/rewind"
)

func TestBlobsStoredOnce(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("x"), 1<<20)
	h1, err := st.PutBlob(ctx, data)
	must(t, err)
	h2, err := st.PutBlob(ctx, data)
	must(t, err)
	if h1 != h2 || len(h1) != 64 {
		t.Fatalf("hashes %q %q", h1, h2)
	}
	var n, size int64
	must(t, st.readTx(ctx, "count", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT count(*), sum(size) FROM blobs").Scan(&n, &size)
	}))
	if n != 1 || size != int64(len(data)) {
		t.Fatalf("%d blobs of %d bytes, want 1 of %d", n, size, len(data))
	}
	got, err := st.Blob(ctx, h1)
	must(t, err)
	if !bytes.Equal(got, data) {
		t.Fatal("blob content differs")
	}
	if _, err := st.Blob(ctx, "0000"); err == nil {
		t.Fatal("missing blob found")
	}
	// Many in one transaction, the stored one among them.
	hs, err := st.PutBlobs(ctx, [][]byte{[]byte("a"), data, []byte("b")})
	must(t, err)
	if len(hs) != 3 || hs[1] != h1 {
		t.Fatalf("PutBlobs hashes %q", hs)
	}
	for i, want := range []string{"a", "", "b"} {
		if want == "" {
			continue
		}
		if got, err := st.Blob(ctx, hs[i]); err != nil || string(got) != want {
			t.Fatalf("blob %d = %q, %v", i, got, err)
		}
	}
}

// TestWorldRewindAndFork: a rewind marks the code, file and cell changes after
// its cut rewound, in the same transaction as the histories; a fork copies
// what came before its point and leaves the original alone.
func TestWorldRewindAndFork(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	id := newSession(t, st)
	ui := []messages.UIMessage{say(10, messages.SayText, "first"), say(20, messages.SayText, "answer"),
		say(30, messages.SayUserFeedback, "second"), say(40, messages.SayText, "answer 2")}
	api := []messages.APIMessage{userText(10, "first"), assistantText(20, "answer"), userText(30, "second"), assistantText(40, "answer 2")}
	must(t, st.AppendUI(ctx, id, ui...))
	must(t, st.AppendAPI(ctx, id, api...))
	for _, r := range []CodeRun{{Anchor: 15, Origin: "agent", Code: "x = 1", Status: "ok"}, {Anchor: 35, Origin: "agent", Code: "x = 2", Status: "ok"}} {
		must(t, st.AddCodeRun(ctx, id, r))
	}
	must(t, st.AddFileChanges(ctx, id, []FileChange{{Anchor: 16, Path: "a.txt", After: "h1"}, {Anchor: 36, Path: "a.txt", Before: "h1", After: "h2"}}))
	must(t, st.AddCellChange(ctx, id, CellChange{Anchor: 17, Notebook: "nb.ipynb", Op: "insert", CellID: "c1", After: []byte(`{"source":"x"}`)}))
	must(t, st.AddCellChange(ctx, id, CellChange{Anchor: 37, Notebook: "nb.ipynb", Op: "edit", CellID: "c1",
		Before: []byte(`{"source":"x"}`), After: []byte(`{"source":"y"}`)}))

	whole, err := st.ForkSession(ctx, id, WholeHistory)
	must(t, err)
	wh, err := st.Load(ctx, whole.ID)
	must(t, err)
	wruns, err := st.CodeRuns(ctx, whole.ID)
	must(t, err)
	if whole.ParentID != id || len(wh.UI) != 4 || len(wh.API) != 4 || len(wruns) != 2 {
		t.Fatalf("a fork of the whole history: %+v, %d/%d messages, %d code runs", whole, len(wh.UI), len(wh.API), len(wruns))
	}
	fork, err := st.ForkSession(ctx, id, 30)
	must(t, err)
	if fork.ParentID != id || fork.ForkTS != 30 || fork.MessageCount != 2 {
		t.Fatalf("fork %+v", fork)
	}
	runs, err := st.CodeRuns(ctx, fork.ID)
	must(t, err)
	if len(runs) != 1 || runs[0].Code != "x = 1" {
		t.Fatalf("fork's code runs %+v", runs)
	}
	if cells, err := st.CellChanges(ctx, fork.ID, 0); err != nil || len(cells) != 1 || cells[0].Op != "insert" ||
		string(cells[0].After) != `{"source":"x"}` || cells[0].Before != nil {
		t.Fatalf("fork's cell changes %+v, %v", cells, err)
	}

	h, err := st.Load(ctx, id)
	must(t, err)
	res, err := rewind.RewindToTimestamp(h.UI, h.API, 30, rewind.Options{})
	must(t, err)
	must(t, st.ApplyRewind(ctx, id, h, res))
	runs, err = st.CodeRuns(ctx, id)
	must(t, err)
	if len(runs) != 2 || runs[0].Rewound || !runs[1].Rewound {
		t.Fatalf("code runs after the rewind %+v", runs)
	}
	changes, err := st.FileChanges(ctx, id, 0)
	must(t, err)
	if len(changes) != 1 || changes[0].Anchor != 16 {
		t.Fatalf("file changes after the rewind %+v", changes)
	}
	if cells, err := st.CellChanges(ctx, id, 0); err != nil || len(cells) != 1 || cells[0].Anchor != 17 || cells[0].CellID != "c1" {
		t.Fatalf("cell changes after the rewind %+v, %v", cells, err)
	}
	if cells, err := st.CellChanges(ctx, whole.ID, 30); err != nil || len(cells) != 1 || string(cells[0].Before) != `{"source":"x"}` {
		t.Fatalf("the whole fork's cell changes from 30: %+v, %v", cells, err)
	}
	// The fork kept its own copy.
	fh, err := st.Load(ctx, fork.ID)
	must(t, err)
	if len(fh.UI) != 2 || len(fh.API) != 2 {
		t.Fatalf("fork history %d/%d", len(fh.UI), len(fh.API))
	}
	list, err := st.ListSessions(ctx, ListOptions{})
	must(t, err)
	var sawParent bool
	for _, s := range list {
		sawParent = sawParent || (s.ID == fork.ID && s.ParentID == id)
	}
	if !sawParent {
		t.Fatal("the listing does not show the fork's parent")
	}
}

// TestFileIndex: a workspace's index rows are written, updated, removed
// and read back per workspace.
func TestFileIndex(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	a := []FileStat{{Path: "a.txt", Size: 3, MTime: 10, CTime: 11, Inode: 7, Hash: "h1"},
		{Path: "d/b.bin", Size: 1 << 40, MTime: 20, CTime: 21, Inode: 8, Hash: "-"}}
	must(t, st.SaveIndex(ctx, "/ws/one", a, nil))
	must(t, st.SaveIndex(ctx, "/ws/two", []FileStat{{Path: "a.txt", Size: 1, Hash: "h9"}}, nil))
	must(t, st.SaveIndex(ctx, "/ws/one", []FileStat{{Path: "a.txt", Size: -1, MTime: 12, CTime: 13, Inode: 7, Hash: "h2"}}, []string{"d/b.bin", "absent"}))
	got, err := st.LoadIndex(ctx, "/ws/one")
	must(t, err)
	want := []FileStat{{Path: "a.txt", Size: -1, MTime: 12, CTime: 13, Inode: 7, Hash: "h2"}}
	if len(got) != 1 || got[0] != want[0] {
		t.Fatalf("index %+v, want %+v", got, want)
	}
	if got, err := st.LoadIndex(ctx, "/ws/two"); err != nil || len(got) != 1 || got[0].Hash != "h9" {
		t.Fatalf("the other workspace's index: %+v %v", got, err)
	}
}

// TestSessionsByWorkspace: listing, continuing and searching keep to a
// workspace when one is given, and see every one when not.
func TestSessionsByWorkspace(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	ids := map[string]string{}
	for i, ws := range []string{"/srv/a", "/srv/b", "/srv/a"} {
		s, err := st.CreateSession(ctx, NewSession{Model: "m", Workspace: ws})
		must(t, err)
		must(t, st.AppendUI(ctx, s.ID, say(int64(10+i), messages.SayText, "plot the measurements")))
		ids[fmt.Sprint(i)] = s.ID
	}
	list, err := st.ListSessions(ctx, ListOptions{Workspace: "/srv/a"})
	must(t, err)
	if len(list) != 2 || list[0].ID != ids["2"] || list[1].ID != ids["0"] {
		t.Fatalf("sessions of /srv/a: %+v", list)
	}
	if list, err := st.ListSessions(ctx, ListOptions{Workspace: "/srv/a", Limit: 1000}); err != nil || len(list) != 2 {
		t.Fatalf("a long listing of /srv/a: %d sessions, %v", len(list), err)
	}
	if list, err := st.ListSessions(ctx, ListOptions{}); err != nil || len(list) != 3 {
		t.Fatalf("every workspace: %d sessions, %v", len(list), err)
	}
	latest, err := st.LatestSession(ctx, "/srv/b")
	must(t, err)
	if latest.ID != ids["1"] {
		t.Fatalf("the latest of /srv/b is %s, want %s", latest.ID, ids["1"])
	}
	if _, err := st.LatestSession(ctx, "/srv/c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the latest of a directory without sessions: %v", err)
	}
	hits, err := st.Search(ctx, "measurements", SearchOptions{Workspace: "/srv/b"})
	must(t, err)
	if len(hits) != 1 || hits[0].SessionID != ids["1"] {
		t.Fatalf("search in /srv/b: %+v", hits)
	}
	if hits, err := st.Search(ctx, "measurements", SearchOptions{}); err != nil || len(hits) != 3 {
		t.Fatalf("search everywhere: %d hits, %v", len(hits), err)
	}
}
