package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/messages"
)

func TestDataDir(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name, env, xdg, want string
	}{
		{"env wins", "/srv/ak", "/xdg", "/srv/ak"},
		{"xdg", "", "/xdg", "/xdg/agentkernel"},
		{"relative xdg ignored", "", "rel", filepath.Join(home, ".local/share/agentkernel")},
		{"home default", "", "", filepath.Join(home, ".local/share/agentkernel")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv(EnvDataDir, tc.env)
			t.Setenv("XDG_DATA_HOME", tc.xdg)
			got, err := DataDir()
			if err != nil || got != tc.want {
				t.Fatalf("DataDir() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestOpenUsesEnvDirAndReopens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "data")
	t.Setenv(EnvDataDir, dir)
	s, err := Open(context.Background(), Options{})
	must(t, err)
	if want := filepath.Join(dir, FileName); s.Path() != want {
		t.Fatalf("Path() = %q, want %q", s.Path(), want)
	}
	ctx := context.Background()
	id := newSession(t, s)
	must(t, s.AppendUI(ctx, id, say(1, messages.SayText, "hello")))
	must(t, s.Close())
	if err := s.Close(); err == nil {
		t.Fatal("second Close returned nil")
	}
	s2, err := Open(context.Background(), Options{})
	must(t, err)
	defer s2.Close()
	var v int
	must(t, s2.w.QueryRow("PRAGMA user_version").Scan(&v))
	if v != SchemaVersion {
		t.Fatalf("user_version = %d, want %d", v, SchemaVersion)
	}
	ui, err := s2.LoadUI(ctx, id, Page{})
	must(t, err)
	if len(ui) != 1 || ui[0].Text != "hello" {
		t.Fatalf("after reopen: %+v", ui)
	}
	if err := s.AppendUI(ctx, id, say(2, messages.SayText, "x")); err == nil {
		t.Fatal("append on a closed store succeeded")
	}
}

func TestOpenPragmas(t *testing.T) {
	onlySQLite(t, "SQLite's pragmas and file mode")
	for _, tc := range []struct {
		sync Sync
		want int
	}{{SyncNormal, 1}, {SyncFull, 2}} {
		s := newStore(t, func(o *Options) { o.Sync = tc.sync })
		var mode string
		var syncLevel, fk int
		must(t, s.w.QueryRow("PRAGMA journal_mode").Scan(&mode))
		must(t, s.w.QueryRow("PRAGMA synchronous").Scan(&syncLevel))
		must(t, s.w.QueryRow("PRAGMA foreign_keys").Scan(&fk))
		if mode != "wal" || syncLevel != tc.want || fk != 1 {
			t.Errorf("Sync %d: journal_mode %s, synchronous %d, foreign_keys %d", tc.sync, mode, syncLevel, fk)
		}
		st, err := os.Stat(s.Path())
		must(t, err)
		if st.Mode().Perm() != 0o600 {
			t.Errorf("database file mode %v, want 0600", st.Mode().Perm())
		}
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	s := newStore(t)
	path := s.Path()
	o := reopen(s)
	if pg != nil {
		superExec(t, s.opts.URL, "UPDATE agentkernel_schema SET version = 99")
	} else {
		_, err := s.w.Exec("PRAGMA user_version = 99")
		must(t, err)
	}
	must(t, s.Close())
	_, err := Open(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "newer") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open = %v, want a 'newer schema' error naming %s", err, path)
	}
}

func TestSessionsCRUD(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	s := newStore(t, func(o *Options) { o.Now = func() time.Time { return now } })
	ss, err := s.CreateSession(ctx, NewSession{ID: "1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed", Model: "gpt", Mode: "code", Workspace: "/w"})
	must(t, err)
	if ss.Title != "1b9d6bcd (2026-11-03)" || ss.Model != "gpt" || ss.Archived() {
		t.Fatalf("created: %+v", ss)
	}
	if _, err := s.CreateSession(ctx, NewSession{ID: ss.ID}); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate create: %v", err)
	}
	for _, bad := range []string{"a\x1fb", "tab\there", strings.Repeat("x", 129)} {
		if _, err := s.CreateSession(ctx, NewSession{ID: bad}); err == nil || !strings.Contains(err.Error(), "session id") {
			t.Errorf("CreateSession(%q) = %v, want an id error", bad, err)
		}
	}
	name := "My analysis"
	must(t, s.UpdateSession(ctx, ss.ID, SessionUpdate{DisplayName: &name}))
	must(t, s.AddUsage(ctx, ss.ID, Usage{TokensIn: 10, TokensOut: 5, Cost: 0.25}))
	must(t, s.AddUsage(ctx, ss.ID, Usage{TokensIn: 1, CacheReads: 7, Cost: 0.5}))
	got, err := s.GetSession(ctx, ss.ID)
	must(t, err)
	if got.Title != name || got.Usage != (Usage{TokensIn: 11, TokensOut: 5, CacheReads: 7, Cost: 0.75}) || got.Mode != "code" {
		t.Fatalf("after update: %+v", got)
	}
	for name, err := range map[string]error{
		"get":     func() error { _, err := s.GetSession(ctx, "nope"); return err }(),
		"update":  s.UpdateSession(ctx, "nope", SessionUpdate{}),
		"usage":   s.AddUsage(ctx, "nope", Usage{}),
		"archive": s.Archive(ctx, "nope", ""),
		"purge":   s.Purge(ctx, "nope"),
		"append":  s.AppendUI(ctx, "nope", say(1, messages.SayText, "x")),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s on a missing session: %v, want ErrNotFound", name, err)
		}
	}
}

func TestTruncateTitle(t *testing.T) {
	long := strings.Repeat("word ", 20)
	tests := []struct{ in, want string }{
		{"short", "short"},
		{strings.Repeat("x", 60), strings.Repeat("x", 60)},
		{strings.Repeat("x", 61), strings.Repeat("x", 59) + "…"},
		{long, strings.TrimSpace(long[:59])[:54] + "…"},                        // last space at 54 > 36
		{"a " + strings.Repeat("y", 70), "a " + strings.Repeat("y", 57) + "…"}, // space too early
		{strings.Repeat("é", 61), strings.Repeat("é", 59) + "…"},
	}
	for _, tc := range tests {
		if got := TruncateTitle(tc.in, 60); got != tc.want {
			t.Errorf("TruncateTitle(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDeriveTitle(t *testing.T) {
	created := time.Date(2026, 1, 28, 23, 0, 0, 0, time.UTC)
	tests := []struct{ name, display, first, want string }{
		{"display name", " Named ", "first", "Named"},
		{"first message, whitespace collapsed", "", "plot\n the   data", "plot the data"},
		{"first message cut", "", strings.Repeat("abc ", 30), strings.TrimSpace(strings.Repeat("abc ", 14)) + "…"},
		{"id and date", "", "  ", "abcdefgh (2026-01-28)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DeriveTitle("abcdefghijk", tc.display, tc.first, created); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAppendLoadPages(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	id := newSession(t, s)
	var ui []messages.UIMessage
	for i := int64(1); i <= 10; i++ {
		ui = append(ui, say(i*10, messages.SayText, "m"))
	}
	must(t, s.AppendUI(ctx, id, ui[:4]...))
	for _, m := range ui[4:] {
		must(t, s.AppendUI(ctx, id, m))
	}
	if err := s.AppendUI(ctx, id, say(30, messages.SayText, "dup")); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate ts: %v", err)
	}
	if err := s.AppendUI(ctx, id, messages.UIMessage{TS: 5, Type: "bogus"}); err == nil || !strings.Contains(err.Error(), "type") {
		t.Fatalf("invalid message: %v", err)
	}
	tests := []struct {
		name string
		p    Page
		want string
	}{
		{"all", Page{}, "10 20 30 40 50 60 70 80 90 100 "},
		{"limit offset", Page{Limit: 3, Offset: 2}, "30 40 50 "},
		{"after", Page{AfterTS: 70}, "80 90 100 "},
		{"before", Page{BeforeTS: 30}, "10 20 "},
		{"between", Page{AfterTS: 20, BeforeTS: 60, Limit: 2}, "30 40 "},
		{"last 3 before 80", Page{BeforeTS: 80, Limit: 3, FromEnd: true}, "50 60 70 "},
		{"from end offset", Page{Limit: 2, Offset: 1, FromEnd: true}, "80 90 "},
		{"past the end", Page{Offset: 20}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.LoadUI(ctx, id, tc.p)
			must(t, err)
			if tsList(got) != tc.want {
				t.Fatalf("got %q, want %q", tsList(got), tc.want)
			}
		})
	}
	api := []messages.APIMessage{userText(10, "q"), toolUse(20, "t1"), toolResult(30, "t1", "out"), assistantText(40, "a")}
	must(t, s.AppendAPI(ctx, id, api...))
	gotAPI, err := s.LoadAPI(ctx, id, Page{})
	must(t, err)
	equalJSON(t, "api history", gotAPI, api)
	gotAPI, err = s.LoadAPI(ctx, id, Page{AfterTS: 20})
	must(t, err)
	equalJSON(t, "api page", gotAPI, api[2:])
	c, err := s.Count(ctx, id)
	must(t, err)
	if c != (Counts{UI: 10, API: 4}) {
		t.Fatalf("Count = %+v", c)
	}
	id2 := newSession(t, s)
	must(t, s.AppendUI(ctx, id2, say(1000, messages.SayText, "other")))
	c, err = s.Count(ctx, "")
	must(t, err)
	if c != (Counts{UI: 11, API: 4}) {
		t.Fatalf("Count(all) = %+v", c)
	}
	rec, err := s.Recent(ctx, "", 3)
	must(t, err)
	if len(rec) != 3 || rec[0].Message.TS != 90 || rec[2].SessionID != id2 || rec[2].Message.TS != 1000 {
		t.Fatalf("Recent(all) = %+v", rec)
	}
	rec, err = s.Recent(ctx, id, 2)
	must(t, err)
	if len(rec) != 2 || rec[0].Message.TS != 90 || rec[1].Message.TS != 100 || rec[1].SessionID != id {
		t.Fatalf("Recent(session) = %+v", rec)
	}
	must(t, s.Archive(ctx, id2, "deleted"))
	rec, err = s.Recent(ctx, "", 1)
	must(t, err)
	if rec[0].Message.TS != 100 {
		t.Fatalf("Recent ignores archive: %+v", rec)
	}
	if err := s.AppendUI(ctx, id2, say(2000, messages.SayText, "x")); !errors.Is(err, ErrArchived) {
		t.Fatalf("append to archived: %v", err)
	}
}

// TestAppendKeepsTheSessionRow follows a session's row through appends:
// its first message (the long way: its role depends on being first), the
// next ones (one UPDATE finds and bumps the row), an append that fails
// halfway (nothing of it stays), and the sessions no append may touch.
func TestAppendKeepsTheSessionRow(t *testing.T) {
	ctx := context.Background()
	var now atomic.Int64
	now.Store(1_000)
	s := newStore(t, func(o *Options) { o.Now = func() time.Time { return time.UnixMilli(now.Add(1_000)) } })
	id := newSession(t, s)
	get := func() Session {
		t.Helper()
		ss, err := s.GetSession(ctx, id)
		must(t, err)
		return ss
	}
	must(t, s.AppendUI(ctx, id, say(10, messages.SayText, "Plot revenue by month")))
	first := get()
	if first.MessageCount != 1 || first.FirstUserMessage != "Plot revenue by month" || first.LastRole != "user" ||
		!strings.HasPrefix(first.Title, "Plot revenue by month") {
		t.Fatalf("after the first message: %+v", first)
	}
	must(t, s.AppendUI(ctx, id, say(20, messages.SayText, "Reading the data."), ask(30, messages.AskCommand, "ls")))
	second := get()
	if second.MessageCount != 3 || second.LastMessage != "ls" || second.LastRole != "tool" ||
		second.FirstUserMessage != first.FirstUserMessage || !second.UpdatedAt.After(first.UpdatedAt) {
		t.Fatalf("after the next two: %+v (before: %+v)", second, first)
	}
	// One message that is not the user's (on PostgreSQL, one statement).
	must(t, s.AppendUI(ctx, id, say(35, messages.SayText, "Three columns.")))
	third := get()
	if third.MessageCount != 4 || third.LastMessage != "Three columns." || third.LastRole != "assistant" ||
		third.Title != first.Title || !third.UpdatedAt.After(second.UpdatedAt) {
		t.Fatalf("after one more: %+v", third)
	}
	wantErr(t, "one message, its ts taken", s.AppendUI(ctx, id, say(35, messages.SayText, "again")), ErrExists)
	if ss := get(); ss.MessageCount != 4 || ss.LastMessage != "Three columns." || !ss.UpdatedAt.Equal(third.UpdatedAt) {
		t.Fatalf("a failed append of one changed the row: %+v", ss)
	}
	if hits, err := s.Search(ctx, "columns", SearchOptions{SessionID: id}); err != nil || len(hits) != 1 || hits[0].Role != "assistant" {
		t.Fatalf("the one message is not the assistant's: %+v, %v", hits, err)
	}
	second = third
	hits, err := s.Search(ctx, "reading", SearchOptions{SessionID: id})
	must(t, err)
	if len(hits) != 1 || hits[0].TS != 20 || hits[0].Role != "assistant" {
		t.Fatalf("the second message is not the assistant's: %+v", hits)
	}
	must(t, s.AppendAPI(ctx, id, userText(10, "Plot revenue by month"), assistantText(20, "Reading the data.")))
	if ss := get(); ss.APICount != 2 || ss.MessageCount != 4 || !ss.UpdatedAt.After(second.UpdatedAt) {
		t.Fatalf("after the API messages: %+v", ss)
	}

	// A ts the session has: the append fails whole, the row is as it was.
	before := get()
	err = s.AppendUI(ctx, id, say(40, messages.SayText, "new"), say(20, messages.SayText, "again"))
	wantErr(t, "a ts taken", err, ErrExists)
	if after := get(); after.MessageCount != before.MessageCount || after.LastMessage != before.LastMessage || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("a failed append changed the row: %+v, was %+v", after, before)
	}

	wantErr(t, "an empty append to no session", s.AppendUI(ctx, "no-such-session"), ErrNotFound)
	wantErr(t, "an append to no session", s.AppendUI(ctx, "no-such-session", say(1, messages.SayText, "x")), ErrNotFound)
	wantErr(t, "an API append to no session", s.AppendAPI(ctx, "no-such-session", userText(1, "x")), ErrNotFound)
	must(t, s.Archive(ctx, id, ""))
	wantErr(t, "an append to an archived session", s.AppendUI(ctx, id, say(50, messages.SayText, "x")), ErrArchived)
	wantErr(t, "an API append to an archived session", s.AppendAPI(ctx, id, userText(50, "x")), ErrArchived)
	if ss := get(); ss.MessageCount != 4 || ss.APICount != 2 {
		t.Fatalf("an archived session's counts changed: %+v", ss)
	}
}

func TestConversationPairs(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	id := newSession(t, s)
	must(t, s.AppendAPI(ctx, id,
		userText(1, "q1"), assistantText(2, "a1"),
		userText(3, "q2"), toolUse(4, "t"), toolResult(5, "t", "o"), assistantText(6, "a2"),
		messages.APIMessage{Role: messages.RoleUser, TS: 7, IsSummary: true, CondenseID: "c", Content: []messages.ContentBlock{{Type: messages.BlockText, Text: "sum"}}},
		userText(8, "q3"), assistantText(9, "a3"), userText(10, "dangling")))
	pairs, err := s.ConversationPairs(ctx, id, 0)
	must(t, err)
	var got []string
	for _, p := range pairs {
		got = append(got, p.User.PlainText()+">"+p.Assistant.PlainText())
	}
	if strings.Join(got, " ") != "q1>a1 q2>running o>a2 q3>a3" {
		t.Fatalf("pairs = %v", got)
	}
	pairs, err = s.ConversationPairs(ctx, id, 2)
	must(t, err)
	if len(pairs) != 2 || pairs[1].User.PlainText() != "q3" {
		t.Fatalf("last 2 pairs = %+v", pairs)
	}
}

func TestStreamingUpdates(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, func(o *Options) { o.Debounce = time.Hour })
	id := newSession(t, s)
	m := say(1, messages.SayText, "")
	m.Partial = true
	must(t, s.AppendUI(ctx, id, m))
	for _, tok := range []string{"Hel", "lo", " world"} {
		m.Text += tok
		must(t, s.UpdateUI(ctx, id, m))
	}
	got, err := s.LoadUI(ctx, id, Page{})
	must(t, err)
	if got[0].Text != "" || !got[0].Partial {
		t.Fatalf("partial update was written before the debounce: %+v", got[0])
	}
	must(t, s.Flush(ctx))
	got, err = s.LoadUI(ctx, id, Page{})
	must(t, err)
	if got[0].Text != "Hello world" || !got[0].Partial {
		t.Fatalf("after Flush: %+v", got[0])
	}
	m.Text += "!"
	must(t, s.UpdateUI(ctx, id, m))
	m.Partial = false
	must(t, s.UpdateUI(ctx, id, m))
	must(t, s.Flush(ctx)) // nothing pending may overwrite the final version
	got, err = s.LoadUI(ctx, id, Page{})
	must(t, err)
	if got[0].Text != "Hello world!" || got[0].Partial {
		t.Fatalf("final: %+v", got[0])
	}
	if hits, _ := s.Search(ctx, "world", SearchOptions{}); len(hits) != 1 {
		t.Fatalf("search after stream: %+v", hits)
	}
	if err := s.UpdateUI(ctx, id, say(99, messages.SayText, "x")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of a missing message: %v", err)
	}
}

// TestStreamedUpdatesCoalesced: the chunks of two messages streaming at
// once (reasoning, then text) cost no write each: the store holds their
// newest versions, writes both in one go when due (here: Flush) and each
// final version once.
func TestStreamedUpdatesCoalesced(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, func(o *Options) { o.Debounce = time.Hour })
	id := newSession(t, s)
	r, m := say(1, messages.SayReasoning, ""), say(2, messages.SayText, "")
	r.Partial, m.Partial = true, true
	must(t, s.AppendUI(ctx, id, r, m))
	const chunks = 1000
	for i := range chunks {
		r.Reasoning += "hm "
		m.Text += fmt.Sprintf("w%d ", i)
		must(t, s.UpdateUI(ctx, id, r))
		must(t, s.UpdateUI(ctx, id, m))
	}
	if n := s.strm.rows.Load(); n != 0 {
		t.Fatalf("%d rows written while streaming, before the debounce", n)
	}
	must(t, s.Flush(ctx))
	if n := s.strm.rows.Load(); n != 2 {
		t.Fatalf("%d rows written by Flush, want 2", n)
	}
	r.Partial, m.Partial = false, false
	must(t, s.UpdateUI(ctx, id, r))
	must(t, s.UpdateUI(ctx, id, m))
	if n := s.strm.rows.Load(); n != 4 {
		t.Fatalf("%d rows written for %d updates, want 4", n, 2*chunks+2)
	}
	got, err := s.LoadUI(ctx, id, Page{})
	must(t, err)
	if got[0].Reasoning != r.Reasoning || got[1].Text != m.Text || got[0].Partial || got[1].Partial {
		t.Fatalf("stored %q / %d bytes, partial %v %v", got[0].Reasoning, len(got[1].Text), got[0].Partial, got[1].Partial)
	}
}

func TestStreamingDebouncedWrite(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, func(o *Options) { o.Debounce = time.Millisecond })
	id := newSession(t, s)
	m := say(1, messages.SayReasoning, "")
	m.Partial = true
	must(t, s.AppendUI(ctx, id, m))
	m.Reasoning = "thinking hard"
	must(t, s.UpdateUI(ctx, id, m))
	// No timing assertion: wait until the background writer has run.
	for {
		got, err := s.LoadUI(ctx, id, Page{})
		must(t, err)
		if got[0].Reasoning == "thinking hard" {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// Close flushes whatever is pending.
	m.Reasoning = "thinking harder"
	must(t, s.UpdateUI(ctx, id, m))
	o := reopen(s)
	must(t, s.Close())
	s2, err := Open(context.Background(), o)
	must(t, err)
	defer s2.Close()
	got, err := s2.LoadUI(ctx, id, Page{})
	must(t, err)
	if got[0].Reasoning != "thinking harder" || !got[0].Partial {
		t.Fatalf("after Close: %+v", got[0])
	}
}

func TestSearch(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	a, b := newSession(t, s), newSession(t, s)
	must(t, s.AppendUI(ctx, a, say(1, messages.SayText, "plot the pandas dataframe"), say(2, messages.SayText, "the dataframe has 3 columns")))
	must(t, s.AppendUI(ctx, b, say(3, messages.SayText, "résumé of the dataframe: \"quoted\" OR NEAR(")))
	tests := []struct {
		name  string
		q     string
		o     SearchOptions
		want  []int64
		snip0 string
	}{
		{"all sessions newest first", "dataframe", SearchOptions{}, []int64{3, 2, 1}, "résumé of the **dataframe**: \"quoted\" OR NEAR("},
		{"one session", "dataframe", SearchOptions{SessionID: a}, []int64{2, 1}, "the **dataframe** has 3 columns"},
		{"all words", "pandas dataframe", SearchOptions{}, []int64{1}, ""},
		{"diacritics folded", "resume", SearchOptions{}, []int64{3}, ""},
		{"operators are text", `"quoted" OR NEAR(`, SearchOptions{}, []int64{3}, ""},
		{"raw syntax", "pandas OR columns", SearchOptions{Raw: true}, []int64{2, 1}, ""},
		{"limit", "the", SearchOptions{Limit: 1}, []int64{3}, ""},
		{"no match", "zebra", SearchOptions{}, nil, ""},
		{"empty", "  ", SearchOptions{}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := s.Search(ctx, tc.q, tc.o)
			must(t, err)
			var got []int64
			for _, h := range hits {
				got = append(got, h.TS)
			}
			equalJSON(t, "hits", got, tc.want)
			if tc.snip0 != "" && hits[0].Snippet != tc.snip0 {
				t.Fatalf("snippet = %q, want %q", hits[0].Snippet, tc.snip0)
			}
		})
	}
	must(t, s.Archive(ctx, b, "deleted"))
	hits, err := s.Search(ctx, "dataframe", SearchOptions{})
	must(t, err)
	if len(hits) != 2 {
		t.Fatalf("archived session still searched: %+v", hits)
	}
	hits, err = s.Search(ctx, "dataframe", SearchOptions{IncludeArchived: true})
	must(t, err)
	if len(hits) != 3 || hits[0].SessionID != b || hits[0].Kind != "text" || hits[0].Type != "say" {
		t.Fatalf("IncludeArchived: %+v", hits)
	}
}

func TestSearchLargeSessionPath(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	s.smallSession = 40
	big, small := newSession(t, s), newSession(t, s)
	var ms []messages.UIMessage
	for i := int64(1); i <= 60; i++ {
		text := "filler"
		if i%10 == 0 {
			text = "needle here"
		}
		ms = append(ms, say(i, messages.SayText, text))
	}
	must(t, s.AppendUI(ctx, big, ms...))
	must(t, s.AppendUI(ctx, small, say(1, messages.SayText, "needle too")))
	hits, err := s.Search(ctx, "needle", SearchOptions{SessionID: big, Limit: 2})
	must(t, err)
	if len(hits) != 2 || hits[0].TS != 60 || hits[1].TS != 50 {
		t.Fatalf("hits = %+v", hits)
	}
}

func TestListSessions(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	s := newStore(t, func(o *Options) {
		o.Now = func() time.Time { clock = clock.Add(time.Minute); return clock }
	})
	a := newSession(t, s)
	must(t, s.AppendUI(ctx, a, say(1, messages.SayText, "Analyse the sales data and plot monthly revenue for every region of the company please"),
		say(2, messages.SayText, "Sure, loading sales.csv"), say(3, messages.SayAPIReqStarted, `{"tokensIn":1}`)))
	b := newSession(t, s)
	must(t, s.AppendUI(ctx, b, say(1, messages.SayText, "fix the bug"), ask(2, messages.AskTool, `{"tool":"readFile","path":"main.go","content":"..."}`)))
	c := newSession(t, s)
	name := "Named one"
	must(t, s.UpdateSession(ctx, c, SessionUpdate{DisplayName: &name}))
	d := newSession(t, s)
	must(t, s.Archive(ctx, d, "deleted"))

	list, err := s.ListSessions(ctx, ListOptions{PreviewChars: 10})
	must(t, err)
	var got []string
	for _, ss := range list {
		got = append(got, ss.Title+"|"+ss.LastMessage)
	}
	want := []string{
		"Named one|",
		"fix the bug|readFile:…",
		"Analyse the sales data and plot monthly revenue for every…|Sure, loa…",
	}
	equalJSON(t, "list", got, want)

	tests := []struct {
		name string
		o    ListOptions
		want []string
	}{
		{"search first message", ListOptions{Search: "SALES"}, []string{a}},
		{"search display name", ListOptions{Search: "named"}, []string{c}},
		{"search like chars are literal", ListOptions{Search: "%"}, nil},
		{"limit", ListOptions{Limit: 1}, []string{c}},
		{"offset", ListOptions{Limit: 1, Offset: 2}, []string{a}},
		{"archived only", ListOptions{Archived: ArchivedOnly}, []string{d}},
		{"all", ListOptions{Archived: AllSessions, Limit: -1}, []string{d, c, b, a}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			list, err := s.ListSessions(ctx, tc.o)
			must(t, err)
			var ids []string
			for _, ss := range list {
				ids = append(ids, ss.ID)
			}
			equalJSON(t, "ids", ids, tc.want)
		})
	}
}

func TestArchiveRestorePurge(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	id := newSession(t, s)
	must(t, s.AppendUI(ctx, id, say(1, messages.SayText, "keep me")))
	must(t, s.AppendAPI(ctx, id, userText(1, "keep me")))
	must(t, s.Archive(ctx, id, "user deleted"))
	ss, err := s.GetSession(ctx, id)
	must(t, err)
	if !ss.Archived() || ss.ArchiveReason != "user deleted" || ss.MessageCount != 1 {
		t.Fatalf("archived: %+v", ss)
	}
	must(t, s.Restore(ctx, id))
	ss, err = s.GetSession(ctx, id)
	must(t, err)
	if ss.Archived() || ss.ArchiveReason != "" {
		t.Fatalf("restored: %+v", ss)
	}
	if ui, _ := s.LoadUI(ctx, id, Page{}); len(ui) != 1 {
		t.Fatal("restore lost messages")
	}
	must(t, s.Purge(ctx, id))
	if _, err := s.GetSession(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after purge: %v", err)
	}
	var n int
	must(t, s.w.QueryRow("SELECT (SELECT count(*) FROM ui_messages) + (SELECT count(*) FROM api_messages)").Scan(&n))
	if n != 0 {
		t.Fatalf("%d message rows survive a purge", n)
	}
	must(t, s.IntegrityCheck(ctx))
}

func TestExportImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	id := newSession(t, s)
	name := "exported"
	must(t, s.UpdateSession(ctx, id, SessionUpdate{DisplayName: &name}))
	must(t, s.AddUsage(ctx, id, Usage{TokensIn: 3, Cost: 0.1}))
	cc := say(3, messages.SayCondenseContext, "")
	cc.ContextCondense = &messages.ContextCondense{CondenseID: "c1", Summary: "sum"}
	must(t, s.AppendUI(ctx, id, say(1, messages.SayText, "task <b>&"), ask(2, messages.AskCommand, "ls -la"), cc))
	must(t, s.AppendAPI(ctx, id, userText(1, "task <b>&"), toolUse(2, "t"), toolResult(3, "t", "a\nb")))
	must(t, s.Archive(ctx, id, "why"))
	var out bytes.Buffer
	must(t, s.Export(ctx, id, &out))
	if n := strings.Count(out.String(), "\n"); n != 7 {
		t.Fatalf("export has %d lines, want 7:\n%s", n, out.String())
	}

	s2 := newStore(t)
	ss, err := s2.Import(ctx, bytes.NewReader(out.Bytes()))
	must(t, err)
	orig, err := s.GetSession(ctx, id)
	must(t, err)
	equalJSON(t, "session", ss, orig)
	var again bytes.Buffer
	must(t, s2.Export(ctx, id, &again))
	if again.String() != out.String() {
		t.Fatalf("re-export differs:\n%s\nvs\n%s", again.String(), out.String())
	}
	if _, err := s2.Import(ctx, bytes.NewReader(out.Bytes())); !errors.Is(err, ErrExists) {
		t.Fatalf("second import: %v", err)
	}
	bad := []struct{ name, in, want string }{
		{"empty", "", "empty export"},
		{"no header", `{"kind":"ui","message":{}}`, "line 1: want the session line first"},
		{"bad message", strings.SplitN(out.String(), "\n", 2)[0] + "\n" + `{"kind":"ui","message":{"ts":1,"type":"say"}}`, "line 2"},
		{"bad json", "{", "line 1"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newStore(t).Import(ctx, strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Import = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestFindSession(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	var ids []string
	for _, id := range []string{"abc12345-one", "abc12399-two", "zzz_%-odd"} {
		s, err := st.CreateSession(ctx, NewSession{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	if err := st.Archive(ctx, ids[1], "test"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ref, want string
		err       error
	}{
		{"abc12345-one", "abc12345-one", nil},
		{"abc123", "", ErrAmbiguous},
		{"abc1234", "abc12345-one", nil},
		{"abc1239", "abc12399-two", nil}, // archived sessions are found too
		{"zzz_%", "zzz_%-odd", nil},
		{"zzz%", "", ErrNotFound}, // % is not a wildcard
		{"nope", "", ErrNotFound},
		{"  ", "", ErrNotFound},
	}
	for _, tt := range tests {
		s, err := st.FindSession(ctx, tt.ref)
		if !errors.Is(err, tt.err) || (tt.err == nil && s.ID != tt.want) {
			t.Errorf("FindSession(%q) = %q, %v; want %q, %v", tt.ref, s.ID, err, tt.want, tt.err)
		}
	}
	latest, err := st.LatestSession(ctx, "")
	if err != nil || latest.Archived() {
		t.Fatalf("LatestSession = %+v, %v; want a live session", latest, err)
	}
}
