package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/messages"
)

func TestCorruptFileNamed(t *testing.T) {
	onlySQLite(t, "a file that is not a database")
	path := t.TempDir() + "/agentkernel.db"
	must(t, os.WriteFile(path, []byte(strings.Repeat("this is not a database ", 400)), 0o600))
	_, err := Open(context.Background(), Options{Path: path})
	if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open(context.Background(), garbage) = %v; want ErrCorrupt naming %s", err, path)
	}
	t.Log(err)
}

func TestCorruptPagesNamed(t *testing.T) {
	onlySQLite(t, "damaged pages of the database file")
	ctx := context.Background()
	s := newStore(t)
	id := newSession(t, s)
	var ms []messages.UIMessage
	for i := int64(1); i <= 300; i++ {
		ms = append(ms, say(i, messages.SayText, strings.Repeat("payload ", 50)))
	}
	must(t, s.AppendUI(ctx, id, ms...))
	path := s.Path()
	must(t, s.Close())
	// Overwrite pages in the middle of the file (after a checkpoint on close).
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	st, err := f.Stat()
	must(t, err)
	_, err = f.WriteAt([]byte(strings.Repeat("\xff", 8192)), st.Size()/2)
	must(t, err)
	must(t, f.Close())
	s2, err := Open(context.Background(), Options{Path: path})
	if err == nil {
		defer s2.Close()
		_, err = s2.LoadUI(ctx, id, Page{})
		if err == nil {
			err = s2.IntegrityCheck(ctx)
		}
	}
	if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("reading damaged pages = %v; want ErrCorrupt naming %s", err, path)
	}
	t.Log(err)
}

func TestLockedFileNamed(t *testing.T) {
	onlySQLite(t, "another process's file lock")
	s := newStore(t)
	path := s.Path()
	must(t, s.Close())
	// Another process holding an exclusive lock looks like this connection.
	other, err := sql.Open("sqlite", path+"?_pragma=locking_mode(EXCLUSIVE)")
	must(t, err)
	defer other.Close()
	other.SetMaxOpenConns(1)
	_, err = other.Exec("BEGIN EXCLUSIVE; INSERT INTO sessions(id, created_at, updated_at) VALUES ('x', 0, 0)")
	must(t, err)
	defer other.Exec("ROLLBACK")
	_, err = Open(context.Background(), Options{Path: path, BusyTimeout: 50 * time.Millisecond})
	if err == nil || !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open(context.Background(), locked) = %v; want ErrLocked naming %s", err, path)
	}
	t.Log(err)
}

func TestDiskFullNamed(t *testing.T) {
	onlySQLite(t, "SQLite's page limit")
	ctx := context.Background()
	s := newStore(t)
	id := newSession(t, s)
	// The writer pool has one connection, so the page limit sticks to it.
	var pages int
	must(t, s.w.QueryRow("PRAGMA page_count").Scan(&pages))
	_, err := s.w.Exec("PRAGMA max_page_count = " + strconv.Itoa(pages+2))
	must(t, err)
	big := strings.Repeat("full disk ", 5000)
	for i := int64(1); err == nil && i < 100; i++ {
		err = s.AppendUI(ctx, id, say(i, messages.SayText, big))
	}
	if err == nil || !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), s.Path()) {
		t.Fatalf("append on a full disk = %v; want ErrFull naming the file", err)
	}
	t.Log(err)
	// What was committed before stays readable and consistent.
	must(t, s.IntegrityCheck(ctx))
}

// TestConcurrentReadersAndWriter runs readers of every kind while writers
// append and stream (run with -race).
func TestConcurrentReadersAndWriter(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, func(o *Options) { o.Debounce = time.Millisecond })
	id := newSession(t, s)
	const n = 60
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // writer
		defer wg.Done()
		defer close(stop)
		var clock messages.Clock
		for i := 0; i < n; i++ {
			ts := clock.Next()
			m := say(ts, messages.SayText, "")
			m.Partial = true
			if err := s.AppendUI(ctx, id, m); err != nil {
				errs <- err
				return
			}
			m.Text = "streaming words"
			if err := s.UpdateUI(ctx, id, m); err != nil {
				errs <- err
				return
			}
			m.Partial = false
			m.Text = "done words"
			if err := s.UpdateUI(ctx, id, m); err != nil {
				errs <- err
				return
			}
			if err := s.AppendAPI(ctx, id, userText(ts, "api words")); err != nil {
				errs <- err
				return
			}
		}
	}()
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() { // readers
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.LoadUI(ctx, id, Page{Limit: 10, FromEnd: true}); err != nil {
					errs <- err
					return
				}
				if _, err := s.Search(ctx, "words", SearchOptions{}); err != nil {
					errs <- err
					return
				}
				if _, err := s.ListSessions(ctx, ListOptions{}); err != nil {
					errs <- err
					return
				}
				if _, err := s.Preview(ctx, id, PreviewOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	must(t, s.Flush(ctx))
	ui, err := s.LoadUI(ctx, id, Page{})
	must(t, err)
	if len(ui) != n {
		t.Fatalf("%d messages, want %d", len(ui), n)
	}
	for _, m := range ui {
		if m.Partial || m.Text != "done words" {
			t.Fatalf("message %d ended as %+v", m.TS, m)
		}
	}
	must(t, s.IntegrityCheck(ctx))
}
