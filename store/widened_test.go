package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentkernel/agentkernel/internal/pgtest"
	"github.com/agentkernel/agentkernel/messages"
)

// TestLockedStoreBoundedWait: Bob may LOCK the sessions table (he holds
// UPDATE on it, which PostgreSQL's LOCK asks for; row-level security does
// not cover locks). While his transaction holds it, Alice's listing does
// not wait for him: it fails after her busy timeout with an error that
// says the store is locked by another user, and matches ErrLocked.
func TestLockedStoreBoundedWait(t *testing.T) {
	onlyPostgres(t)
	ctx := context.Background()
	admin := pgAdminSchema(t)
	alice, err := Open(ctx, Options{URL: pgUserURL(t, admin, roleAlice), BusyTimeout: 300 * time.Millisecond})
	must(t, err)
	t.Cleanup(func() { alice.Close() })
	newSession(t, alice)
	pgUserURL(t, admin, roleBob)
	bob := rawAs(t, admin, roleBob)
	tx, err := bob.Begin(ctx)
	must(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // the test ends his transaction either way
	if _, err := tx.Exec(ctx, "LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Logf("bob cannot lock the table: %v", err)
		return
	}
	// Without a bound she would wait for as long as he likes: the
	// deadline only ends a test that fails.
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err = alice.ListSessions(lctx, ListOptions{})
	t.Logf("alice's listing returned after %v", time.Since(start))
	wantErr(t, "alice's listing while bob holds the lock", err, ErrLocked)
	if !strings.Contains(err.Error(), "the store is locked by another user") {
		t.Fatalf("alice's listing: %v, want it to say the store is locked by another user", err)
	}
	must(t, tx.Rollback(ctx))
	if _, err := alice.ListSessions(ctx, ListOptions{}); err != nil {
		t.Fatalf("alice's listing once bob let go: %v", err)
	}
}

// TestInitRepairsAWidenedStore: the repro. An administrator
// widens the store by hand: a PUBLIC policy that shows every message, and
// TRUNCATE on blobs to Bob. Bob's psql then reads Alice's messages, and
// Open refuses the store, as Bob and as Alice, saying to run store init.
// Init takes both away and says so; then Bob reads none of Alice's
// messages, cannot truncate, and opens the store again.
func TestInitRepairsAWidenedStore(t *testing.T) {
	onlyPostgres(t)
	ctx := context.Background()
	admin := pgAdminSchema(t)
	alice := openAs(t, admin, roleAlice)
	id := newSession(t, alice)
	must(t, alice.AppendUI(ctx, id, say(10, messages.SayText, "alice's secret")))
	_, err := alice.PutBlob(ctx, []byte("alice's file"))
	must(t, err)
	bobURL := pgUserURL(t, admin, roleBob)
	superExec(t, admin, "CREATE POLICY handmade ON ui_messages FOR SELECT TO PUBLIC USING (true); GRANT TRUNCATE ON blobs TO "+roleBob)
	bob := rawAs(t, admin, roleBob)
	if n := count(t, bob, "SELECT count(*) FROM ui_messages"); n != 1 {
		t.Fatalf("the widened store shows bob %d of alice's messages, want the repro's 1", n)
	}

	for _, u := range []string{bobURL, pgtest.WithUser(admin, roleAlice)} {
		_, err := Open(ctx, Options{URL: u})
		for _, want := range []string{"wider than documented", "policy handmade on ui_messages",
			"TRUNCATE on blobs to " + roleBob, "agentkernel store init"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Open of the widened store = %v, want it to say %q", err, want)
			}
		}
	}

	rep, err := Init(ctx, InitOptions{AdminURL: admin})
	must(t, err)
	equalJSON(t, "init's report of what it removed", rep.Removed,
		[]string{"policy handmade on ui_messages", "TRUNCATE on blobs to " + roleBob})
	if n := count(t, bob, "SELECT count(*) FROM ui_messages"); n != 0 {
		t.Fatalf("after init bob reads %d of alice's messages", n)
	}
	if _, err := bob.Exec(ctx, "TRUNCATE blobs"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("bob's TRUNCATE blobs after init: %v, want permission denied", err)
	}
	if n := count(t, rawAs(t, admin, roleAlice), "SELECT count(*) FROM blobs"); n != 1 {
		t.Fatalf("alice's blobs after bob's try: %d, want 1", n)
	}
	s, err := Open(ctx, Options{URL: bobURL})
	must(t, err)
	s.Close()
	rep, err = Init(ctx, InitOptions{AdminURL: admin})
	must(t, err)
	if len(rep.Removed) != 0 {
		t.Fatalf("init of a store as documented removed %v", rep.Removed)
	}
}

// TestReusedRoleNameInheritsNothing: the owners are bound to their role's
// identity, not its name. Alice's role is dropped while she owns a
// session and is granted one of Bob's; a new role of the same name is
// made. store grant refuses it, saying why; granted by hand, it opens no
// store, and through psql it reads none of the former Alice's rows nor
// Bob's grant to her, nor writes as her. The administrator's documented
// hand-over (UPDATE ak_owners) gives it her sessions.
func TestReusedRoleNameInheritsNothing(t *testing.T) {
	onlyPostgres(t)
	ctx := context.Background()
	const name = "ak_former"
	admin := pgAdminSchema(t)
	first, err := Open(ctx, Options{URL: pgUserURL(t, admin, name)})
	must(t, err)
	id := newSession(t, first)
	must(t, first.AppendUI(ctx, id, say(10, messages.SayText, "the former's words")))
	first.Close()
	bob := openAs(t, admin, roleBob)
	bid := newSession(t, bob)
	must(t, bob.Share(ctx, bid, name))

	superExec(t, admin, "DROP ROLE "+name+"; CREATE ROLE "+name+" LOGIN")
	err = Grant(ctx, admin, name, false)
	if err == nil || !strings.Contains(err.Error(), "is not the role "+name+" whose sessions are in the store") {
		t.Fatalf("store grant of the new %s: %v, want a refusal that says why", name, err)
	}
	superExec(t, admin, "GRANT "+UserRole+" TO "+name)
	if _, err := Open(ctx, Options{URL: pgtest.WithUser(admin, name)}); err == nil ||
		!strings.Contains(err.Error(), "that one was dropped") {
		t.Fatalf("Open as the new %s: %v, want a refusal", name, err)
	}
	raw := rawAs(t, admin, name)
	for _, tbl := range []string{"sessions", "ui_messages", "session_shares"} {
		if n := count(t, raw, "SELECT count(*) FROM "+tbl); n != 0 {
			t.Errorf("the new %s reads %d of the former's rows in %s", name, n, tbl)
		}
	}
	if _, err := raw.Exec(ctx, "INSERT INTO sessions (id, created_at, updated_at) VALUES ('x', 0, 0)"); err == nil ||
		!strings.Contains(err.Error(), "row-level security") {
		t.Fatalf("the new %s writes as the former: %v", name, err)
	}
	// The former's session has her name, not her role: no message of the
	// new role's goes into it.
	var pk int64
	su, err := pgx.Connect(ctx, asSuperuser(admin))
	must(t, err)
	defer su.Close(ctx)
	must(t, su.QueryRow(ctx, "SELECT pk FROM sessions WHERE id = $1", id).Scan(&pk))
	if _, err := raw.Exec(ctx, `INSERT INTO ui_messages (session_pk, ts, type, kind, role, text, partial, payload)
		VALUES ($1, 99, 'say', 'text', 'assistant', 'planted', 0, '{}')`, pk); !refused(err) {
		t.Fatalf("the new %s writes into the former's session: %v", name, err)
	}

	superExec(t, admin, "UPDATE ak_owners SET oid = '"+name+"'::regrole WHERE name = '"+name+"'")
	s, err := Open(ctx, Options{URL: pgtest.WithUser(admin, name)})
	must(t, err)
	defer s.Close()
	list, err := s.ListSessions(ctx, ListOptions{})
	must(t, err)
	if got := ids(list); len(got) != 2 || got[id] != name || got[bid] != roleBob {
		t.Fatalf("after the hand-over the new %s lists %v, want the former's session and bob's grant", name, got)
	}
}

// TestRowsAreTheWritersRole: a row's owner_oid, which the policies compare
// with the caller's role, is the writer's own: Alice cannot write a row,
// nor change one, to be of a group she is a member of (which would keep it
// hers in the policies' eyes, and hand it to a later role of her name).
func TestRowsAreTheWritersRole(t *testing.T) {
	onlyPostgres(t)
	ctx := context.Background()
	admin := pgAdminSchema(t)
	alice := openAs(t, admin, roleAlice)
	id := newSession(t, alice)
	must(t, alice.AppendUI(ctx, id, say(10, messages.SayText, "hers")))
	raw := rawAs(t, admin, roleAlice)
	for _, q := range []string{
		"INSERT INTO sessions (id, created_at, updated_at, owner_oid) VALUES ('forged', 0, 0, '" + UserRole + "'::regrole)",
		"UPDATE sessions SET owner_oid = '" + UserRole + "'::regrole",
		"UPDATE ui_messages SET owner_oid = '" + UserRole + "'::regrole",
		"INSERT INTO blobs (hash, size, data, owner_oid) VALUES ('x', 0, '', '" + UserRole + "'::regrole)",
	} {
		if _, err := raw.Exec(ctx, q); !refused(err) {
			t.Errorf("%s: %v, want a refusal by row-level security or the session's foreign key", q, err)
		}
	}
	if n := count(t, raw, "SELECT count(*) FROM ui_messages m JOIN sessions s ON s.pk = m.session_pk "+
		"WHERE s.owner_oid = $1::regrole AND m.owner_oid = $1::regrole", roleAlice); n != 1 {
		t.Fatalf("alice's rows of her role: %d, want 1", n)
	}
}

// refused reports an error of a write that row-level security, or the
// foreign key of a session's row to its session and owner, refused.
func refused(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "row-level security") ||
		strings.Contains(err.Error(), "violates foreign key constraint"))
}

// TestInitUpgradesOwnersToTheirRoles: a store of schema 7, where the
// policies read each owner's binding in ak_owners, is upgraded by Init:
// every row gets its owner's bound role, so each user sees their own rows
// and no one else's, the former's rows of a dropped role stay no one's,
// and Init again changes nothing.
func TestInitUpgradesOwnersToTheirRoles(t *testing.T) {
	onlyPostgres(t)
	ctx := context.Background()
	admin := pgAdminSchema(t)
	alice, bob := openAs(t, admin, roleAlice), openAs(t, admin, roleBob)
	aid, bid := newSession(t, alice), newSession(t, bob)
	must(t, alice.AppendUI(ctx, aid, say(10, messages.SayText, "alice's")))
	must(t, bob.AppendUI(ctx, bid, say(10, messages.SayText, "bob's")))
	const gone = "ak_gone"
	former := openAs(t, admin, gone)
	fid := newSession(t, former)
	must(t, former.AppendUI(ctx, fid, say(10, messages.SayText, "the former's")))
	former.Close()
	// Schema 7 as the build before left it: no owner_oid, the foreign keys
	// on the session and its owner's name.
	var drop strings.Builder
	for _, tbl := range pgOwned {
		drop.WriteString("ALTER TABLE " + tbl + " DROP COLUMN owner_oid CASCADE;\n")
	}
	drop.WriteString("ALTER TABLE sessions ADD CONSTRAINT sessions_pk_owner UNIQUE (pk, owner);\n")
	for _, tbl := range pgSessionRows {
		fk := tbl + "_session_owner_fkey"
		if tbl == "session_shares" {
			fk = "session_shares_session_pk_owner_fkey"
		}
		drop.WriteString("ALTER TABLE " + tbl + " ADD CONSTRAINT " + fk + " FOREIGN KEY (session_pk, owner) " +
			"REFERENCES sessions(pk, owner) ON DELETE CASCADE ON UPDATE CASCADE;\n")
	}
	superExec(t, admin, drop.String()+"UPDATE agentkernel_schema SET version = 7; DROP ROLE "+gone+"; CREATE ROLE "+gone+" LOGIN")
	superExec(t, admin, "GRANT "+UserRole+" TO "+gone)
	for range 2 {
		rep, err := Init(ctx, InitOptions{AdminURL: admin})
		must(t, err)
		if rep.To != len(pgMigrations) || len(rep.Removed) != 0 {
			t.Fatalf("init: %+v", rep)
		}
		for _, tc := range []struct {
			role, id string
		}{{roleAlice, aid}, {roleBob, bid}} {
			s := openAs(t, admin, tc.role)
			list, err := s.ListSessions(ctx, ListOptions{})
			must(t, err)
			if got := ids(list); len(got) != 1 || got[tc.id] != tc.role {
				t.Fatalf("%s lists %v after the upgrade, want only %s", tc.role, got, tc.id)
			}
			h, err := s.Load(ctx, tc.id)
			must(t, err)
			if len(h.UI) != 1 {
				t.Fatalf("%s's session has %d messages after the upgrade", tc.role, len(h.UI))
			}
			must(t, s.AppendUI(ctx, tc.id, say(20, messages.SayText, "after")))
			must(t, s.Close())
			superExec(t, admin, "DELETE FROM ui_messages WHERE ts = 20")
		}
		raw := rawAs(t, admin, gone)
		for _, tbl := range []string{"sessions", "ui_messages"} {
			if n := count(t, raw, "SELECT count(*) FROM "+tbl); n != 0 {
				t.Fatalf("the new %s reads %d of the former's rows in %s after the upgrade", gone, n, tbl)
			}
		}
		raw.Close(ctx)
	}
}
