package store

import (
	"context"
	"strings"
	"testing"
	"time"

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
