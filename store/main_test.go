package store

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentkernel/agentkernel/internal/pgtest"
	"github.com/agentkernel/agentkernel/messages"
)

// The store's tests are one contract suite for both backends: TestMain runs
// them on SQLite, then runs this test binary again, with the same flags,
// on PostgreSQL (envBackend=postgres), against a server pgtest gives (one
// throwaway cluster for both runs, stopped at the end). Tests that are
// about one engine's files or errors say so with onlySQLite/onlyPostgres.
const (
	envBackend = "AGENTKERNEL_TEST_STORE_BACKEND"
	envPGURL   = "AGENTKERNEL_TEST_STORE_PGURL"
)

// pg is the server of the PostgreSQL run; nil in the SQLite run.
var pg *pgtest.Server

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		os.Exit(crashChild())
	}
	if os.Getenv(writerChildEnv) != "" {
		os.Exit(writerChild())
	}
	if os.Getenv(otherUserEnv) != "" {
		os.Exit(otherUserChild())
	}
	if os.Getenv(envBackend) == "postgres" {
		pg = &pgtest.Server{URL: os.Getenv(envPGURL)}
		fmt.Fprintln(os.Stderr, "store: the contract suite on PostgreSQL")
		goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"))
		return
	}
	code := m.Run()
	if code != 0 {
		os.Exit(code)
	}
	os.Exit(runOnPostgres())
}

// runOnPostgres runs this test binary again on PostgreSQL. When it runs
// benchmarks, the cluster records each statement's server time
// (pg_stat_statements, planning included), which BenchmarkAppendRLS reads.
func runOnPostgres() int {
	var settings []string
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		settings = []string{"shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track_planning=on"}
	}
	srv, err := pgtest.Start(settings...)
	if err != nil {
		if errors.Is(err, pgtest.ErrUnavailable) && os.Getenv(pgtest.EnvRequire) == "" {
			fmt.Fprintln(os.Stderr, "store: SKIP the PostgreSQL run:", err)
			return 0
		}
		fmt.Fprintln(os.Stderr, "store: PostgreSQL:", err)
		return 1
	}
	defer srv.Stop()
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), envBackend+"=postgres", envPGURL+"="+srv.URL)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "store: the PostgreSQL run failed:", err)
		return 1
	}
	return 0
}

func onlySQLite(t testing.TB, why string) {
	t.Helper()
	if pg != nil {
		t.Skip("SQLite only: " + why)
	}
}

func onlyPostgres(t testing.TB) {
	t.Helper()
	if pg == nil {
		t.Skip("PostgreSQL only: runs in the PostgreSQL run of the suite")
	}
}

// testRole is the login role the contract suite uses on PostgreSQL: a
// user of the store (a member of UserRole), as every kernel is.
const testRole = "ak_tester"

// pgURL returns a fresh schema of the PostgreSQL run's server, set up by
// Init as the server's superuser, and gives the URL that connects to it
// as testRole.
func pgURL(t testing.TB) string {
	t.Helper()
	return pgUserURL(t, pgAdminSchema(t), testRole)
}

// pgAdminSchema returns a fresh schema set up by Init, as the superuser.
func pgAdminSchema(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	u, err := pg.NewSchema(ctx, "t")
	if err != nil {
		t.Fatalf("new schema: %v", err)
	}
	if _, err := Init(ctx, InitOptions{AdminURL: u}); err != nil {
		t.Fatalf("init: %v", err)
	}
	return u
}

// pgUserURL returns adminURL (its schema) as the login role name, created
// when missing, a member of groups (UserRole when none are given).
func pgUserURL(t testing.TB, adminURL, name string, groups ...string) string {
	t.Helper()
	if len(groups) == 0 {
		groups = []string{UserRole}
	}
	if _, err := pg.EnsureRole(context.Background(), name, groups...); err != nil {
		t.Fatal(err)
	}
	return pgtest.WithUser(adminURL, name)
}

// asSuperuser returns a store's URL as the server's superuser (the schema
// owner), for what a test does behind the store's back.
func asSuperuser(u string) string { return pgtest.WithUser(u, "postgres") }

func newStore(t testing.TB, opts ...func(*Options)) *Store {
	t.Helper()
	o := Options{Dir: t.TempDir(), Debounce: 20 * time.Millisecond}
	if pg != nil {
		o.URL = pgURL(t)
	}
	for _, f := range opts {
		f(&o)
	}
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// reopen returns the options that open s's database again.
func reopen(s *Store) Options {
	if s.pg {
		return Options{URL: s.opts.URL}
	}
	return Options{Path: s.Path()}
}

func newSession(t testing.TB, s *Store) string {
	t.Helper()
	ss, err := s.CreateSession(context.Background(), NewSession{Model: "m", Provider: "p"})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return ss.ID
}

func say(ts int64, kind messages.Say, text string) messages.UIMessage {
	return messages.UIMessage{TS: ts, Type: messages.TypeSay, Say: kind, Text: text}
}

func ask(ts int64, kind messages.Ask, text string) messages.UIMessage {
	return messages.UIMessage{TS: ts, Type: messages.TypeAsk, Ask: kind, Text: text}
}

func userText(ts int64, text string) messages.APIMessage {
	return messages.APIMessage{Role: messages.RoleUser, TS: ts, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: text}}}
}

func assistantText(ts int64, text string) messages.APIMessage {
	return messages.APIMessage{Role: messages.RoleAssistant, TS: ts, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: text}}}
}

func toolUse(ts int64, id string) messages.APIMessage {
	return messages.APIMessage{Role: messages.RoleAssistant, TS: ts, Content: []messages.ContentBlock{
		{Type: messages.BlockText, Text: "running"},
		{Type: messages.BlockToolUse, ID: id, Name: "execute_command", Input: json.RawMessage(`{"command":"ls"}`)},
	}}
}

func toolResult(ts int64, id, out string) messages.APIMessage {
	return messages.APIMessage{Role: messages.RoleUser, TS: ts, Content: []messages.ContentBlock{
		{Type: messages.BlockToolResult, ToolUseID: id, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: out}}},
	}}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func equalJSON(t testing.TB, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func tsList(ms []messages.UIMessage) string {
	out := ""
	for _, m := range ms {
		out += fmt.Sprintf("%d ", m.TS)
	}
	return out
}
