package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentkernel/agentkernel/internal/pgtest"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/rewind"
)

// The roles of the ownership tests on PostgreSQL: two users, a group that
// holds one of them, and an administrator.
const (
	roleAlice = "ak_alice"
	roleBob   = "ak_bob"
	roleTeam  = "ak_team"
	roleCarol = "ak_carol" // an administrator
)

// openAs opens the store of adminURL's schema as the login role name.
func openAs(t *testing.T, adminURL, name string, groups ...string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{URL: pgUserURL(t, adminURL, name, groups...), OwnerName: strings.TrimPrefix(name, "ak_")})
	if err != nil {
		t.Fatalf("open as %s: %v", name, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rawAs connects to adminURL's schema as the role name with plain SQL, as
// psql would: what the user can read without agentkernel.
func rawAs(t *testing.T, adminURL, name string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, pgtest.WithUser(adminURL, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	return c
}

func count(t *testing.T, c *pgx.Conn, q string, args ...any) int {
	t.Helper()
	var n int
	if err := c.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: %v, want %v", what, err, target)
	}
}

func ids(list []Session) map[string]string {
	out := map[string]string{}
	for _, s := range list {
		out[s.ID] = s.Owner
	}
	return out
}

// bobsSession fills a session of bob's with everything a session holds:
// both histories, a code run, a file change with its blob, a cell change,
// an index entry.
func bobsSession(t *testing.T, s *Store, word string) (id, blob string) {
	t.Helper()
	ctx := context.Background()
	id = newSession(t, s)
	must(t, s.AppendUI(ctx, id, say(10, messages.SayText, "bob's plan: "+word), say(20, messages.SayText, "done "+word)))
	must(t, s.AppendAPI(ctx, id, userText(10, "bob's plan: "+word), assistantText(20, "done "+word)))
	must(t, s.AddCodeRun(ctx, id, CodeRun{Anchor: 15, Origin: "agent", Code: "x = '" + word + "'", Status: "ok"}))
	blob, err := s.PutBlob(ctx, []byte("bob's file: "+word))
	must(t, err)
	must(t, s.AddFileChanges(ctx, id, []FileChange{{Anchor: 16, Path: "plan.txt", After: blob}}))
	must(t, s.AddCellChange(ctx, id, CellChange{Anchor: 17, Notebook: "plan.ipynb", Op: "insert", CellID: "c-" + word,
		After: json.RawMessage(`{"cell_type":"code","source":"` + word + `"}`)}))
	must(t, s.SaveIndex(ctx, "/home/jovyan", []FileStat{{Path: "plan.txt", Size: 10, Hash: blob}}, nil))
	return id, blob
}

// TestOwnershipPostgres: on a shared PostgreSQL store each user sees only
// their own sessions, through the store and through plain SQL; a session
// shared with them (directly or through a group) they read and fork but
// never write; unshare takes it back; the administrator sees everyone's.
func TestOwnershipPostgres(t *testing.T) {
	onlyPostgres(t)
	ctx := context.Background()
	admin := pgAdminSchema(t)
	if _, err := pg.EnsureRole(ctx, roleTeam); err != nil {
		t.Fatal(err)
	}
	bob := openAs(t, admin, roleBob)
	alice := openAs(t, admin, roleAlice, UserRole, roleTeam)
	carol := openAs(t, admin, roleCarol, AdminRole)
	if alice.User() != roleAlice || alice.Admin() || !carol.Admin() {
		t.Fatalf("users: %q admin %v, carol admin %v", alice.User(), alice.Admin(), carol.Admin())
	}
	bid, blob := bobsSession(t, bob, "zanzibar")
	aid := newSession(t, alice)
	must(t, alice.AppendUI(ctx, aid, say(10, messages.SayText, "alice's own work")))

	got, err := bob.GetSession(ctx, bid)
	must(t, err)
	if got.Owner != roleBob || got.OwnerName != "bob" {
		t.Fatalf("bob's session: owner %q (%q)", got.Owner, got.OwnerName)
	}

	// Alice sees nothing of Bob's.
	noneOfBobs := func(t *testing.T) {
		t.Helper()
		list, err := alice.ListSessions(ctx, ListOptions{Limit: -1, Archived: AllSessions})
		must(t, err)
		if _, ok := ids(list)[bid]; ok || len(list) == 0 {
			t.Fatalf("alice lists %v", ids(list))
		}
		hits, err := alice.Search(ctx, "zanzibar", SearchOptions{IncludeArchived: true})
		must(t, err)
		for _, h := range hits {
			if h.SessionID == bid {
				t.Fatalf("alice finds %+v", h)
			}
		}
		_, err = alice.FindSession(ctx, bid[:8])
		wantErr(t, "find", err, ErrNotFound)
		_, err = alice.GetSession(ctx, bid)
		wantErr(t, "get", err, ErrNotFound)
		_, err = alice.Load(ctx, bid)
		wantErr(t, "load", err, ErrNotFound)
		_, err = alice.CellChanges(ctx, bid, 0)
		wantErr(t, "cell changes", err, ErrNotFound)
		wantErr(t, "export", alice.Export(ctx, bid, io.Discard), ErrNotFound)
		_, err = alice.ForkSession(ctx, bid, WholeHistory)
		wantErr(t, "fork", err, ErrNotFound)
		_, err = alice.Rewind(ctx, bid, 20, rewind.Options{})
		wantErr(t, "rewind", err, ErrNotFound)
		wantErr(t, "append", alice.AppendUI(ctx, bid, say(30, messages.SayText, "x")), ErrNotFound)
		wantErr(t, "purge", alice.Purge(ctx, bid), ErrNotFound)
		rec, err := alice.Recent(ctx, "", 100)
		must(t, err)
		for _, e := range rec {
			if e.SessionID == bid {
				t.Fatalf("alice's recent: %+v", e)
			}
		}
	}
	noneOfBobs(t)
	if hits, err := alice.Search(ctx, "zanzibar", SearchOptions{}); err != nil || len(hits) != 0 {
		t.Fatalf("alice finds %+v, %v", hits, err)
	}
	if c, err := alice.Count(ctx, ""); err != nil || c.UI != 1 {
		t.Fatalf("alice's count: %+v, %v", c, err)
	}
	if ok, err := alice.HasBlob(ctx, blob); err != nil || ok {
		t.Fatalf("alice has bob's blob: %v %v", ok, err)
	}
	_, err = alice.Blob(ctx, blob)
	wantErr(t, "blob", err, ErrNotFound)
	if idx, err := alice.LoadIndex(ctx, "/home/jovyan"); err != nil || len(idx) != 0 {
		t.Fatalf("alice's index of bob's workspace: %+v, %v", idx, err)
	}

	// Plain SQL as Alice: none of Bob's rows, in any table, and the
	// policies are not hers to change.
	raw := rawAs(t, admin, roleAlice)
	var bobPK int64
	if err := rawAs(t, admin, roleBob).QueryRow(ctx, "SELECT pk FROM sessions WHERE id = $1", bid).Scan(&bobPK); err != nil {
		t.Fatal(err)
	}
	for _, tbl := range pgTables[:len(pgTables)-2] { // not agentkernel_schema, ak_owners
		if n := count(t, raw, "SELECT count(*) FROM "+tbl+" WHERE owner <> current_user"); n != 0 {
			t.Errorf("alice reads %d rows of others in %s", n, tbl)
		}
	}
	for _, tbl := range pgChildren {
		if n := count(t, raw, "SELECT count(*) FROM "+tbl+" WHERE session_pk = $1", bobPK); n != 0 {
			t.Errorf("alice reads %d rows of bob's session in %s", n, tbl)
		}
	}
	if n := count(t, raw, "SELECT count(*) FROM ui_messages WHERE tsv @@ plainto_tsquery('ak_search', 'zanzibar')"); n != 0 {
		t.Errorf("alice's SQL finds %d of bob's search rows", n)
	}
	if n := count(t, raw, "SELECT count(*) FROM ak_search(plainto_tsquery('ak_search', 'zanzibar'), 100, true, '', false)"); n != 0 {
		t.Errorf("the search function gives alice %d of bob's rows", n)
	}
	for _, q := range []string{
		"ALTER TABLE sessions DISABLE ROW LEVEL SECURITY",
		"ALTER TABLE sessions NO FORCE ROW LEVEL SECURITY",
		"DROP POLICY ak_own ON ui_messages",
		"CREATE POLICY mine ON blobs FOR SELECT USING (true)",
		"SET row_security = off; SELECT * FROM sessions",
		// A message slipped into Bob's session, as his or as hers.
		fmt.Sprintf("INSERT INTO ui_messages (session_pk, owner, ts, type, kind, role, text, partial, payload) "+
			"VALUES (%d, '%s', 99, 'say', 'text', 'user', 'x', 0, '{}')", bobPK, roleBob),
		fmt.Sprintf("INSERT INTO ui_messages (session_pk, ts, type, kind, role, text, partial, payload) "+
			"VALUES (%d, 99, 'say', 'text', 'user', 'x', 0, '{}')", bobPK),
		fmt.Sprintf("INSERT INTO cell_changes (session_pk, anchor, notebook, op, cell_id) VALUES (%d, 99, 'x.ipynb', 'delete', 'c')", bobPK),
		// Bob's session shared with herself, or hers passed off as his.
		fmt.Sprintf("INSERT INTO session_shares (session_pk, grantee, granted_at) VALUES (%d, '%s', 0)", bobPK, roleAlice),
		fmt.Sprintf("INSERT INTO session_shares (session_pk, owner, grantee, granted_at) "+
			"SELECT pk, '%s', '%s', 0 FROM sessions WHERE id = '%s'", roleBob, roleAlice, aid),
		fmt.Sprintf("INSERT INTO blobs (owner, hash, size, data) VALUES ('%s', 'x', 0, '')", roleBob),
		"UPDATE sessions SET owner = '" + roleBob + "'",
	} {
		if _, err := raw.Exec(ctx, q); err == nil {
			t.Errorf("alice may run %q", q)
		}
	}

	// Shared: Alice reads it, in listings that say whose it is, and
	// cannot write it in any way.
	must(t, bob.Share(ctx, bid, roleAlice))
	must(t, bob.Share(ctx, bid, roleAlice)) // again: a no-op
	list, err := alice.ListSessions(ctx, ListOptions{Limit: -1})
	must(t, err)
	if o := ids(list); o[bid] != roleBob || o[aid] != roleAlice {
		t.Fatalf("alice's listing after share: %v", o)
	}
	mine, err := alice.ListSessions(ctx, ListOptions{Limit: -1, Mine: true})
	must(t, err)
	if o := ids(mine); len(o) != 1 || o[aid] == "" {
		t.Fatalf("alice's own: %v", o)
	}
	if hits, err := alice.Search(ctx, "zanzibar", SearchOptions{}); err != nil || len(hits) != 2 || hits[0].SessionID != bid {
		t.Fatalf("alice's search of a shared session: %+v, %v", hits, err)
	}
	if hits, err := alice.Search(ctx, "zanzibar", SearchOptions{Mine: true}); err != nil || len(hits) != 0 {
		t.Fatalf("alice's search of her own: %+v, %v", hits, err)
	}
	h, err := alice.Load(ctx, bid)
	must(t, err)
	if len(h.UI) != 2 || len(h.API) != 2 {
		t.Fatalf("alice loads %d/%d messages", len(h.UI), len(h.API))
	}
	var exp bytes.Buffer
	must(t, alice.Export(ctx, bid, &exp))
	if !strings.Contains(exp.String(), `"owner":"`+roleBob+`"`) {
		t.Fatalf("export: %.200s", exp.String())
	}
	wantErr(t, "append to a shared session", alice.AppendUI(ctx, bid, say(30, messages.SayText, "mine now")), ErrReadOnly)
	wantErr(t, "append api", alice.AppendAPI(ctx, bid, userText(30, "x")), ErrReadOnly)
	_, err = alice.Rewind(ctx, bid, 20, rewind.Options{})
	wantErr(t, "rewind a shared session", err, ErrReadOnly)
	wantErr(t, "archive a shared session", alice.Archive(ctx, bid, ""), ErrReadOnly)
	wantErr(t, "purge a shared session", alice.Purge(ctx, bid), ErrReadOnly)
	name := "stolen"
	wantErr(t, "rename", alice.UpdateSession(ctx, bid, SessionUpdate{DisplayName: &name}), ErrReadOnly)
	wantErr(t, "add usage", alice.AddUsage(ctx, bid, Usage{TokensIn: 1}), ErrReadOnly)
	wantErr(t, "code run", alice.AddCodeRun(ctx, bid, CodeRun{Anchor: 40, Origin: "agent", Code: "1"}), ErrReadOnly)
	wantErr(t, "replay pending", alice.SetReplayPending(ctx, bid, true), ErrReadOnly)
	wantErr(t, "reshare", alice.Share(ctx, bid, roleCarol), ErrReadOnly)
	if err := alice.UpdateUI(ctx, bid, say(20, messages.SayText, "changed")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("update a shared message: %v", err)
	}
	if ok, _ := alice.HasBlob(ctx, blob); ok {
		t.Fatal("sharing a session shares its file contents")
	}
	if n := count(t, raw, "SELECT count(*) FROM ui_messages WHERE owner = $1", roleBob); n != 2 {
		t.Fatalf("alice's SQL reads %d rows of the shared session, want 2", n)
	}
	if n := count(t, raw, "SELECT count(*) FROM blobs WHERE owner = $1", roleBob); n != 0 {
		t.Fatalf("alice's SQL reads %d of bob's blobs", n)
	}
	if cells, err := alice.CellChanges(ctx, bid, 0); err != nil || len(cells) != 1 || cells[0].CellID != "c-zanzibar" {
		t.Fatalf("alice's cell changes of the shared session: %+v, %v", cells, err)
	}
	wantErr(t, "cell change", alice.AddCellChange(ctx, bid, CellChange{Anchor: 40, Notebook: "x.ipynb", Op: "delete", CellID: "c"}), ErrReadOnly)
	if n := count(t, raw, "SELECT count(*) FROM cell_changes WHERE owner = $1", roleBob); n != 1 {
		t.Fatalf("alice's SQL reads %d cell changes of the shared session, want 1", n)
	}
	for _, q := range []string{
		"UPDATE cell_changes SET rewound = 1",
		"DELETE FROM cell_changes",
		"UPDATE ui_messages SET text = 'x'",
	} {
		tag, err := raw.Exec(ctx, q+" WHERE session_pk = $1", bobPK)
		if err != nil || tag.RowsAffected() != 0 {
			t.Errorf("alice's %q of the shared session: %d rows, %v", q, tag.RowsAffected(), err)
		}
	}

	// A fork is hers: the conversation, not Bob's files or code.
	fork, err := alice.ForkSession(ctx, bid, WholeHistory)
	must(t, err)
	if fork.Owner != roleAlice || fork.ParentID != bid || fork.MessageCount != 2 {
		t.Fatalf("fork: %+v", fork)
	}
	if ch, err := alice.FileChanges(ctx, fork.ID, 0); err != nil || len(ch) != 0 {
		t.Fatalf("the fork took bob's file changes: %+v, %v", ch, err)
	}
	if runs, err := alice.CodeRuns(ctx, fork.ID); err != nil || len(runs) != 0 {
		t.Fatalf("the fork took bob's code: %+v, %v", runs, err)
	}
	if cells, err := alice.CellChanges(ctx, fork.ID, 0); err != nil || len(cells) != 0 {
		t.Fatalf("the fork took bob's notebook cells: %+v, %v", cells, err)
	}
	// Bob's own fork takes his cells, his like the rest.
	bobFork, err := bob.ForkSession(ctx, bid, WholeHistory)
	must(t, err)
	if cells, err := bob.CellChanges(ctx, bobFork.ID, 0); err != nil || len(cells) != 1 {
		t.Fatalf("bob's fork's cell changes: %+v, %v", cells, err)
	}
	must(t, bob.Purge(ctx, bobFork.ID))
	must(t, alice.AppendUI(ctx, fork.ID, say(30, messages.SayUserFeedback, "carry on")))

	// Through a group.
	bid2, _ := bobsSession(t, bob, "kilimanjaro")
	must(t, bob.Share(ctx, bid2, roleTeam))
	if _, err := alice.GetSession(ctx, bid2); err != nil {
		t.Fatalf("alice, in %s, reads a session shared with it: %v", roleTeam, err)
	}
	sh, err := bob.Shares(ctx, bid)
	must(t, err)
	if len(sh) != 1 || sh[0].Grantee != roleAlice {
		t.Fatalf("shares: %+v", sh)
	}

	// Unshared: gone again; her fork stays hers.
	must(t, bob.Unshare(ctx, bid, roleAlice))
	if err := bob.Unshare(ctx, bid, roleAlice); err == nil {
		t.Fatal("unshare twice")
	}
	must(t, bob.Unshare(ctx, bid2, roleTeam))
	noneOfBobs(t)
	if f, err := alice.GetSession(ctx, fork.ID); err != nil || f.MessageCount != 3 {
		t.Fatalf("alice's fork after unshare: %+v, %v", f, err)
	}

	// The administrator sees everyone's and may clean up, but writes no
	// one's conversation.
	all, err := carol.ListSessions(ctx, ListOptions{Limit: -1, Archived: AllSessions})
	must(t, err)
	if o := ids(all); o[bid] != roleBob || o[aid] != roleAlice || o[fork.ID] != roleAlice || len(o) != 4 {
		t.Fatalf("carol lists %v", o)
	}
	if hits, err := carol.Search(ctx, "zanzibar", SearchOptions{}); err != nil || len(hits) != 4 {
		t.Fatalf("carol's search: %d hits, %v", len(hits), err)
	}
	if mine, err := carol.ListSessions(ctx, ListOptions{Mine: true}); err != nil || len(mine) != 0 {
		t.Fatalf("carol's own: %d, %v", len(mine), err)
	}
	wantErr(t, "carol appends", carol.AppendUI(ctx, bid, say(30, messages.SayText, "x")), ErrReadOnly)
	must(t, carol.Archive(ctx, bid2, "cleanup"))
	must(t, carol.Purge(ctx, bid2))
	rawCarol := rawAs(t, admin, roleCarol)
	if n := count(t, rawCarol, "SELECT count(DISTINCT owner) FROM ui_messages"); n != 2 {
		t.Fatalf("carol's SQL sees the messages of %d owners", n)
	}
	// Bob's own view is untouched by all this.
	if b, err := bob.Load(ctx, bid); err != nil || len(b.UI) != 2 {
		t.Fatalf("bob's session: %d messages, %v", len(b.UI), err)
	}
}

// TestOpenRefusesUnsafeRoles: a store is opened only by a role held to
// its own rows. A superuser, a BYPASSRLS role, the tables' owner, a role
// with no policy, a schema without row-level security or without
// agentkernel's tables are refused with what to do.
func TestOpenRefusesUnsafeRoles(t *testing.T) {
	onlyPostgres(t)
	ctx := context.Background()
	admin := pgAdminSchema(t)
	superExec(t, admin, "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ak_bypass') THEN "+
		"CREATE ROLE ak_bypass LOGIN BYPASSRLS; END IF; END $$")
	superExec(t, admin, "GRANT "+UserRole+" TO ak_bypass")
	if _, err := pg.EnsureRole(ctx, "ak_nobody"); err != nil {
		t.Fatal(err)
	}
	// A schema owner that is not a superuser: it runs init itself.
	superExec(t, admin, "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ak_owner') THEN "+
		"CREATE ROLE ak_owner LOGIN CREATEROLE; END IF; END $$")
	ownSchema := fmt.Sprintf("own_%d", os.Getpid())
	superExec(t, admin, "CREATE SCHEMA "+ownSchema+" AUTHORIZATION ak_owner")
	ownerURL := pgtest.WithParam(pgtest.WithUser(admin, "ak_owner"), "search_path", ownSchema)
	rep, err := Init(ctx, InitOptions{AdminURL: ownerURL})
	must(t, err)
	if rep.Owner != "ak_owner" || rep.To != len(pgMigrations) {
		t.Fatalf("init as the schema owner: %+v", rep)
	}
	s := openAs(t, ownerURL, roleAlice)
	newSession(t, s)

	bare, err := pg.NewSchema(ctx, "bare")
	must(t, err)
	for _, tc := range []struct{ name, url, want string }{
		{"superuser", asSuperuser(admin), "bypasses row-level security"},
		{"bypassrls", pgtest.WithUser(admin, "ak_bypass"), "bypasses row-level security"},
		{"owner", ownerURL, "owns agentkernel's tables"},
		{"no policy", pgtest.WithUser(admin, "ak_nobody"), "has no agentkernel policy"},
		{"no schema", pgUserURL(t, bare, testRole), "no agentkernel schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(ctx, Options{URL: tc.url})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want %q", err, tc.want)
			}
		})
	}
	superExec(t, admin, "ALTER TABLE blobs NO FORCE ROW LEVEL SECURITY")
	if _, err := Open(ctx, Options{URL: pgUserURL(t, admin, testRole)}); err == nil ||
		!strings.Contains(err.Error(), "row-level security is not on for every table") {
		t.Fatalf("Open with a table not forced = %v", err)
	}
	// Init repairs it.
	_, err = Init(ctx, InitOptions{AdminURL: admin})
	must(t, err)
	openAs(t, admin, testRole)
}

// superExec runs sql as the superuser in the schema of u.
func superExec(t testing.TB, u, sql string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, asSuperuser(u))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// oldStore is a store of schema version v (SQLite's numbering) as an
// earlier build left it, for tests of migrations: the database, written
// to with SQL (the superuser's on PostgreSQL), and upgrade, which closes
// it, upgrades it as this build does (Init on PostgreSQL, existing rows
// given to owner; Open on SQLite) and returns the options that open it as
// the suite's user.
func oldStore(t *testing.T, v int) (db *sql.DB, upgrade func(owner string) Options) {
	t.Helper()
	ctx := context.Background()
	if pg == nil {
		path := filepath.Join(t.TempDir(), "old.db")
		db, err := sql.Open("sqlite", path)
		must(t, err)
		t.Cleanup(func() { db.Close() })
		must(t, migrate(ctx, db, v, migration{owner: OSUser()}))
		return db, func(string) Options {
			must(t, db.Close())
			return Options{Path: path}
		}
	}
	admin, err := pg.NewSchema(ctx, "old")
	must(t, err)
	o, err := Options{URL: admin}.withDefaults()
	must(t, err)
	db, pool, err := pgConnect(ctx, o)
	must(t, err)
	t.Cleanup(func() { db.Close(); pool.Close() })
	tx, err := db.BeginTx(ctx, nil)
	must(t, err)
	_, err = migratePG(ctx, tx, v-1, migration{})
	must(t, err)
	must(t, tx.Commit())
	return db, func(owner string) Options {
		db.Close()
		pool.Close()
		if _, err := pg.EnsureRole(ctx, testRole); err != nil {
			t.Fatal(err)
		}
		_, err := Init(ctx, InitOptions{AdminURL: admin, ExistingOwner: owner})
		must(t, err)
		return Options{URL: pgUserURL(t, admin, testRole)}
	}
}

// oldRows writes what a session of the builds before owners holds, with
// SQL: the session, both histories, a code run, a file change with its
// blob and an index entry, and from schema 6 on (cells) a cell change. It
// returns the session's id and the blob's hash.
func oldRows(t *testing.T, db *sql.DB, v, n int, word string) (string, string) {
	t.Helper()
	cells := v >= 6
	id := fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("INSERT INTO sessions (id, created_at, updated_at, message_count, api_count, workspace) VALUES (?, 1, 2, 1, 1, '/ws')", id)
	var pk int64
	must(t, db.QueryRow("SELECT pk FROM sessions WHERE id = ?", id).Scan(&pk))
	ui, _ := json.Marshal(say(10, messages.SayText, "old "+word))
	api, _ := json.Marshal(userText(10, "old "+word))
	exec("INSERT INTO ui_messages (session_pk, ts, type, kind, role, text, partial, payload) VALUES (?, 10, 'say', 'text', 'user', ?, 0, ?)",
		pk, "old "+word, string(ui))
	exec("INSERT INTO api_messages (session_pk, ts, role, kind, text, payload) VALUES (?, 10, 'user', 'text', ?, ?)", pk, "old "+word, string(api))
	exec("INSERT INTO code_runs (session_pk, anchor, origin, code, status) VALUES (?, 11, 'agent', 'x = 1', 'ok')", pk)
	data := []byte("old file " + word)
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	exec("INSERT INTO blobs (hash, size, data) VALUES (?, ?, ?)", hash, len(data), data)
	exec("INSERT INTO file_changes (session_pk, anchor, path, before, after) VALUES (?, 12, 'f.txt', NULL, ?)", pk, hash)
	exec("INSERT INTO file_index (workspace, path, size, mtime, ctime, inode, hash) VALUES ('/ws', ?, 1, 1, 1, 1, ?)", "f"+strconv.Itoa(n), hash)
	if cells {
		exec(`INSERT INTO cell_changes (session_pk, anchor, notebook, op, cell_id, before, after)
			VALUES (?, 13, 'nb.ipynb', 'edit', 'c1', '{"source":"a"}', '{"source":"old `+word+`"}')`, pk)
	}
	return id, hash
}

// TestMigrationGivesOwners: a store written by the build before owners
// (schema 6, with the notebook's cell changes; PostgreSQL's 5) gets them.
// On SQLite its sessions are the file's user's. On PostgreSQL every row,
// the cell changes' too, is the role that wrote it (the tables' owner, or
// the one init is told) or else the administrators': no row is readable
// by every user, and the search and the index go with their owner.
func TestMigrationGivesOwners(t *testing.T) {
	ctx := context.Background()
	if pg == nil {
		db, upgrade := oldStore(t, 6)
		id, hash := oldRows(t, db, 6, 1, "walrus")
		s, err := Open(ctx, upgrade(""))
		must(t, err)
		defer s.Close()
		ss, err := s.GetSession(ctx, id)
		must(t, err)
		if ss.Owner != OSUser() || s.User() != OSUser() {
			t.Fatalf("owner %q, store user %q, want %q", ss.Owner, s.User(), OSUser())
		}
		if hits, err := s.Search(ctx, "walrus", SearchOptions{}); err != nil || len(hits) != 1 {
			t.Fatalf("search after migration: %+v, %v", hits, err)
		}
		if ok, err := s.HasBlob(ctx, hash); err != nil || !ok {
			t.Fatalf("blob after migration: %v %v", ok, err)
		}
		if list, err := s.ListSessions(ctx, ListOptions{Mine: true}); err != nil || len(list) != 1 || list[0].Owner != OSUser() {
			t.Fatalf("own listing: %+v, %v", list, err)
		}
		oldCells(t, s, id)
		return
	}
	t.Run("to-the-administrators", func(t *testing.T) {
		db, upgrade := oldStore(t, 6)
		id, hash := oldRows(t, db, 6, 1, "walrus")
		oldRows(t, db, 6, 2, "narwhal")
		o := upgrade("")
		admin := asSuperuser(o.URL)
		s, err := Open(ctx, o)
		must(t, err)
		defer s.Close()
		if list, err := s.ListSessions(ctx, ListOptions{Limit: -1, Archived: AllSessions}); err != nil || len(list) != 0 {
			t.Fatalf("a user lists %d old sessions (%v)", len(list), err)
		}
		if hits, err := s.Search(ctx, "walrus", SearchOptions{IncludeArchived: true}); err != nil || len(hits) != 0 {
			t.Fatalf("a user finds old messages: %+v %v", hits, err)
		}
		if ok, _ := s.HasBlob(ctx, hash); ok {
			t.Fatal("a user has an old blob")
		}
		raw := rawAs(t, admin, testRole)
		for _, tbl := range pgTables {
			if n := count(t, raw, "SELECT count(*) FROM "+tbl); n != 0 && tbl != "agentkernel_schema" && tbl != "ak_owners" {
				t.Errorf("a user reads %d old rows of %s", n, tbl)
			}
		}
		carol := openAs(t, admin, roleCarol, AdminRole)
		ss, err := carol.GetSession(ctx, id)
		must(t, err)
		if ss.Owner != AdminRole {
			t.Fatalf("old session's owner %q, want %q", ss.Owner, AdminRole)
		}
		rawCarol := rawAs(t, admin, roleCarol)
		for _, tbl := range pgTables[:len(pgTables)-3] {
			if n := count(t, rawCarol, "SELECT count(*) FROM "+tbl+" WHERE owner <> $1", AdminRole); n != 0 {
				t.Errorf("%d old rows of %s are not the administrators'", n, tbl)
			}
			if n := count(t, rawCarol, "SELECT count(*) FROM "+tbl); n == 0 {
				t.Errorf("the administrator sees no row of %s", tbl)
			}
		}
		if hits, err := carol.Search(ctx, "walrus", SearchOptions{}); err != nil || len(hits) != 1 {
			t.Fatalf("the administrator's search: %+v, %v", hits, err)
		}
		if cells, err := carol.CellChanges(ctx, id, 0); err != nil || len(cells) != 1 {
			t.Fatalf("the administrator's cell changes: %+v, %v", cells, err)
		}
		// The policies are on every table, and none lets everyone read.
		var open int
		must(t, carol.r.QueryRow(`SELECT count(*) FROM pg_policies WHERE schemaname = current_schema()
			AND (roles = '{public}' AND tablename <> 'agentkernel_schema')`).Scan(&open))
		if open != 0 {
			t.Fatalf("%d policies apply to everyone", open)
		}
	})
	t.Run("to-their-writer", func(t *testing.T) {
		db, upgrade := oldStore(t, 6)
		id, hash := oldRows(t, db, 6, 1, "walrus")
		s, err := Open(ctx, upgrade(testRole))
		must(t, err)
		defer s.Close()
		ss, err := s.GetSession(ctx, id)
		must(t, err)
		if ss.Owner != testRole {
			t.Fatalf("owner %q, want %q", ss.Owner, testRole)
		}
		if hits, err := s.Search(ctx, "walrus", SearchOptions{}); err != nil || len(hits) != 1 {
			t.Fatalf("search: %+v, %v", hits, err)
		}
		if ok, err := s.HasBlob(ctx, hash); err != nil || !ok {
			t.Fatalf("blob: %v %v", ok, err)
		}
		if idx, err := s.LoadIndex(ctx, "/ws"); err != nil || len(idx) != 1 {
			t.Fatalf("index: %+v %v", idx, err)
		}
		oldCells(t, s, id)
		must(t, s.AppendUI(ctx, id, say(20, messages.SayText, "carried on")))
		other := openAs(t, asSuperuser(s.opts.URL), roleBob)
		if _, err := other.GetSession(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("another user reads it: %v", err)
		}
		if _, err := other.CellChanges(ctx, id, 0); !errors.Is(err, ErrNotFound) {
			t.Fatalf("another user reads its cell changes: %v", err)
		}
		if n := count(t, rawAs(t, asSuperuser(s.opts.URL), roleBob), "SELECT count(*) FROM cell_changes"); n != 0 {
			t.Fatalf("another user's SQL reads %d cell changes", n)
		}
	})
}

// oldCells: the cell change oldRows wrote is read, forked and rewound
// after the migration by the session's owner, and a new one is written.
func oldCells(t *testing.T, s *Store, id string) {
	t.Helper()
	ctx := context.Background()
	cells, err := s.CellChanges(ctx, id, 0)
	must(t, err)
	if len(cells) != 1 || cells[0].Op != "edit" || string(cells[0].After) != `{"source":"old walrus"}` {
		t.Fatalf("old cell changes after the migration: %+v", cells)
	}
	must(t, s.AddCellChange(ctx, id, CellChange{Anchor: 14, Notebook: "nb.ipynb", Op: "delete", CellID: "c1",
		Before: json.RawMessage(`{"source":"old walrus"}`)}))
	fork, err := s.ForkSession(ctx, id, WholeHistory)
	must(t, err)
	if cells, err := s.CellChanges(ctx, fork.ID, 0); err != nil || len(cells) != 2 {
		t.Fatalf("the fork's cell changes: %+v, %v", cells, err)
	}
	must(t, s.writeTx(ctx, "rewind cells", func(tx *sql.Tx) error {
		sr, err := writableSession(ctx, tx, fork.ID)
		if err != nil {
			return err
		}
		return rewindCells(ctx, tx, sr.pk, 14)
	}))
	if cells, err := s.CellChanges(ctx, fork.ID, 0); err != nil || len(cells) != 1 {
		t.Fatalf("the fork's cell changes after a rewind to 14: %+v, %v", cells, err)
	}
}

// TestSQLiteFilePrivate: the SQLite store is its user's alone: the file
// (and its WAL) 0600 in a 0700 data directory, put back so when something
// widened them, and another OS user who opens it gets a permission error,
// not the data.
func TestSQLiteFilePrivate(t *testing.T) {
	onlySQLite(t, "file permissions")
	ctx := context.Background()
	// A parent anyone can reach: the data directory must protect itself.
	parent, err := os.MkdirTemp("", "agentkernel-private-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(parent) })
	must(t, os.Chmod(parent, 0o755))
	dir := filepath.Join(parent, "data")
	s, err := Open(ctx, Options{Dir: dir})
	must(t, err)
	id := newSession(t, s)
	must(t, s.AppendUI(ctx, id, say(1, messages.SayText, "private words")))
	check := func() {
		t.Helper()
		for p, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, FileName): 0o600, filepath.Join(dir, FileName) + "-wal": 0o600} {
			st, err := os.Stat(p)
			must(t, err)
			if st.Mode().Perm() != want {
				t.Errorf("%s: mode %v, want %v", p, st.Mode().Perm(), want)
			}
		}
	}
	check()
	must(t, s.Close())
	must(t, os.Chmod(dir, 0o755))
	must(t, os.Chmod(filepath.Join(dir, FileName), 0o644))
	s, err = Open(ctx, Options{Dir: dir})
	must(t, err)
	check()

	if os.Geteuid() != 0 {
		t.Skip("running as another user needs root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody")
	}
	// The test binary, copied where nobody may run it.
	bin := filepath.Join(parent, "store.test")
	self, err := os.ReadFile(os.Args[0])
	must(t, err)
	must(t, os.WriteFile(bin, self, 0o755))
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	for _, target := range []string{dir, filepath.Join(dir, FileName)} {
		// Even a database file left readable by a mistake of the directory
		// alone is out of reach: the directory is 0700.
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), otherUserEnv+"="+target, "HOME="+parent)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child as nobody: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "permission denied") || strings.Contains(string(out), "private words") {
			t.Fatalf("nobody opening %s: %s", target, out)
		}
	}
	s.Close()
}

// otherUserEnv makes the test binary a child (see TestMain) that opens
// the store it names, as whichever user it runs as, and prints what
// happened.
const otherUserEnv = "AGENTKERNEL_TEST_OTHER_USER"

func otherUserChild() int {
	target := os.Getenv(otherUserEnv)
	o := Options{Dir: target}
	if strings.HasSuffix(target, FileName) {
		o = Options{Path: target}
	}
	s, err := Open(context.Background(), o)
	if err != nil {
		fmt.Println("open:", err)
		return 0
	}
	defer s.Close()
	list, err := s.ListSessions(context.Background(), ListOptions{Limit: -1})
	fmt.Println("opened:", len(list), "sessions", err)
	for _, ss := range list {
		fmt.Println(ss.Title)
	}
	return 0
}
