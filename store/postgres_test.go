package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/internal/pgtest"
	"github.com/agentkernel/agentkernel/messages"
)

func TestRebind(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT ? , ?", "SELECT $1 , $2"},
		{"WHERE a = ?1 AND b = ?2 OR c = ?1", "WHERE a = $1 AND b = $2 OR c = $1"},
		{`SELECT '?', "?" , ? ESCAPE '\'`, `SELECT '?', "?" , $1 ESCAPE '\'`},
		{"SELECT x FROM t WHERE id = ? /*pg FOR UPDATE*/", "SELECT x FROM t WHERE id = $1 FOR UPDATE"},
		{"/* plain comment ? */ ?", "/* plain comment $1 */ $2"},
	} {
		if got := rebind(tc.in); got != tc.want {
			t.Errorf("rebind(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := pgText("a\x00b\xffc"); got != "ab\uFFFDc" {
		t.Errorf("pgText = %q", got)
	}
}

// TestPostgresBadURLs: an unreachable server or a malformed URL is a clear
// error at Open that names the server, never the password.
func TestPostgresBadURLs(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"postgres://ak:s3cret@127.0.0.1:1/db?password=s3cret", "cannot reach the database"},
		{"postgres://ak:s3cret@[::1/db", "bad PostgreSQL URL"},
	} {
		_, err := Open(context.Background(), Options{URL: tc.url, BusyTimeout: time.Second})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(context.Background(), %s) = %v; want %q, without the password", tc.url, err, tc.want)
		}
	}
	if err := (func() error { _, err := Open(context.Background(), Options{URL: "mysql://x"}); return err })(); err == nil ||
		!strings.Contains(err.Error(), "not a postgres:// URL") {
		t.Errorf("Open(context.Background(), mysql://) = %v", err)
	}
	t.Setenv(EnvStore, "postgres://ak:s3cret@127.0.0.1:1/db")
	if _, err := Open(context.Background(), Options{Dir: t.TempDir(), BusyTimeout: time.Second}); err == nil ||
		!strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open with %s = %v; want the PostgreSQL error", EnvStore, err)
	}
}

// TestPostgresConnectionLost ends every connection of the store while a
// session is written, several times: the writes are retried on new
// connections and nothing is lost.
func TestPostgresConnectionLost(t *testing.T) {
	onlyPostgres(t)
	ctx := context.Background()
	app := fmt.Sprintf("ak_lost_%d", os.Getpid())
	s := newStore(t, func(o *Options) { o.URL = pgtest.WithParam(o.URL, "application_name", app) })
	id := newSession(t, s)
	kill := func() {
		t.Helper()
		must(t, pg.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", app))
	}
	var clock messages.Clock
	var want []int64
	for i := 0; i < 60; i++ {
		if i%10 == 5 {
			kill()
		}
		ts := clock.Next()
		if i%10 == 7 { // a streamed message whose connection dies mid-stream
			m := say(ts, messages.SayText, "")
			m.Partial = true
			must(t, s.AppendUI(ctx, id, m))
			m.Text = "streamed"
			must(t, s.UpdateUI(ctx, id, m))
			kill()
			m.Text, m.Partial = "streamed and done", false
			must(t, s.UpdateUI(ctx, id, m))
		} else {
			must(t, s.AppendUI(ctx, id, say(ts, messages.SayText, fmt.Sprintf("message %d", i))))
			must(t, s.AppendAPI(ctx, id, userText(ts, fmt.Sprintf("message %d", i))))
		}
		want = append(want, ts)
	}
	kill()
	ui, err := s.LoadUI(ctx, id, Page{})
	must(t, err)
	var got []int64
	for _, m := range ui {
		got = append(got, m.TS)
		if m.Partial {
			t.Errorf("message %d still partial", m.TS)
		}
	}
	equalJSON(t, "ui history", got, want)
	c, err := s.Count(ctx, id)
	must(t, err)
	if c.UI != 60 || c.API != 54 {
		t.Fatalf("counts %+v, want 60 UI and 54 API", c)
	}
}

// writerChildEnv makes the test binary run writerChild: "URL WRITER".
const writerChildEnv = "AGENTKERNEL_STORE_WRITER_CHILD"

const (
	writerSessions = 3
	writerMessages = 40
)

// writerChild writes writerSessions sessions of writerMessages messages,
// each text naming the writer, the session and the message, interleaving
// its sessions, and prints the ids.
func writerChild() int {
	f := strings.Fields(os.Getenv(writerChildEnv))
	ctx := context.Background()
	s, err := Open(context.Background(), Options{URL: f[0]})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer s.Close()
	ids := make([]string, writerSessions)
	for j := range ids {
		ss, err := s.CreateSession(ctx, NewSession{Model: "w" + f[1]})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		ids[j] = ss.ID
		fmt.Println("session", j, ss.ID)
	}
	var clock messages.Clock
	for i := range writerMessages {
		for j, id := range ids {
			ts := clock.Next()
			text := fmt.Sprintf("writer%s session%d message%d concurrency", f[1], j, i)
			if err := s.AppendUI(ctx, id, say(ts, messages.SayText, text)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			if err := s.AppendAPI(ctx, id, userText(ts, text)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		}
	}
	return 0
}

// TestPostgresConcurrentProcesses has six processes write sessions into
// one database at once while this one lists and searches: no session gets
// another's message, none is lost, and every process's committed messages
// are seen by the others.
func TestPostgresConcurrentProcesses(t *testing.T) {
	onlyPostgres(t)
	ctx := context.Background()
	s := newStore(t)
	url := s.opts.URL
	const procs = 6
	type child struct {
		cmd *exec.Cmd
		ids map[int]string
		err strings.Builder
	}
	children := make([]*child, procs)
	var wg sync.WaitGroup
	for k := range procs {
		c := &child{ids: map[int]string{}}
		c.cmd = exec.Command(os.Args[0], "-test.run=^$")
		c.cmd.Env = append(os.Environ(), writerChildEnv+"="+url+" "+strconv.Itoa(k))
		c.cmd.Stderr = &c.err
		out, err := c.cmd.StdoutPipe()
		must(t, err)
		must(t, c.cmd.Start())
		t.Cleanup(func() { c.cmd.Process.Kill() })
		children[k] = c
		wg.Go(func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				var j int
				var id string
				if _, err := fmt.Sscanf(sc.Text(), "session %d %s", &j, &id); err == nil {
					c.ids[j] = id
				}
			}
		})
	}
	// Read while they write: listings and searches must always work and
	// never go backwards.
	done := make(chan error, 1)
	go func() {
		prev := 0
		for {
			select {
			case <-done:
				return
			default:
			}
			hits, err := s.Search(ctx, "concurrency", SearchOptions{Limit: 5000})
			if err != nil {
				done <- err
				return
			}
			if len(hits) < prev {
				done <- fmt.Errorf("search saw %d hits after %d", len(hits), prev)
				return
			}
			prev = len(hits)
			if _, err := s.ListSessions(ctx, ListOptions{Limit: -1}); err != nil {
				done <- err
				return
			}
		}
	}()
	for k, c := range children {
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("writer %d: %v\n%s", k, err, c.err.String())
		}
	}
	wg.Wait()
	select {
	case err := <-done:
		t.Fatal(err)
	default:
		done <- nil
	}
	list, err := s.ListSessions(ctx, ListOptions{Limit: -1})
	must(t, err)
	if len(list) != procs*writerSessions {
		t.Fatalf("listed %d sessions, want %d", len(list), procs*writerSessions)
	}
	hits, err := s.Search(ctx, "concurrency", SearchOptions{Limit: 5000})
	must(t, err)
	if len(hits) != procs*writerSessions*writerMessages {
		t.Fatalf("search found %d messages, want %d", len(hits), procs*writerSessions*writerMessages)
	}
	for k, c := range children {
		for j := range writerSessions {
			id := c.ids[j]
			ui, err := s.LoadUI(ctx, id, Page{})
			must(t, err)
			api, err := s.LoadAPI(ctx, id, Page{})
			must(t, err)
			if len(ui) != writerMessages || len(api) != writerMessages {
				t.Fatalf("writer %d session %d: %d UI, %d API messages", k, j, len(ui), len(api))
			}
			for i, m := range ui {
				want := fmt.Sprintf("writer%d session%d message%d concurrency", k, j, i)
				if m.Text != want || api[i].PlainText() != want {
					t.Fatalf("writer %d session %d message %d: %q / %q, want %q", k, j, i, m.Text, api[i].PlainText(), want)
				}
			}
		}
	}
	if hits, err := s.Search(ctx, "writer3 session1", SearchOptions{Limit: 100}); err != nil || len(hits) != writerMessages {
		t.Fatalf("search for one session's messages: %d hits, %v", len(hits), err)
	}
}

// TestPostgresConcurrentWritersOneSession: goroutines with stores of their
// own append to the same session; the session row lock makes them take
// turns, so the counters agree with the rows.
func TestPostgresConcurrentWritersOneSession(t *testing.T) {
	onlyPostgres(t)
	ctx := context.Background()
	s := newStore(t)
	id := newSession(t, s)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		other, err := Open(context.Background(), reopen(s))
		must(t, err)
		t.Cleanup(func() { other.Close() })
		wg.Go(func() {
			for i := range 25 {
				ts := int64(w*1000 + i + 1)
				if err := other.AppendUI(ctx, id, say(ts, messages.SayText, "x")); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c, err := s.Count(ctx, id)
	must(t, err)
	ui, err := s.LoadUI(ctx, id, Page{})
	must(t, err)
	if c.UI != 200 || len(ui) != 200 {
		t.Fatalf("message_count %d, rows %d; want 200", c.UI, len(ui))
	}
	if err := s.AppendUI(ctx, id, say(5, messages.SayText, "again")); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate ts: %v, want ErrExists", err)
	}
}
