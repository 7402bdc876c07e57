package store

import (
	"context"
	"strings"
	"testing"
	"time"
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
