package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// Sessions belong to their user. The owner is who the store acts for
// (Store.User): on PostgreSQL the database role it connected as, on SQLite
// the OS user, whose file (0600, in a 0700 directory) no one else can open.
// A session's messages, code runs, file changes, blobs and search rows are
// its owner's too; on PostgreSQL row-level security (rls.go) keeps each
// role to its own rows and to the sessions shared with it, read-only.
//
// Writes go through lockSession, which finds only the caller's own
// sessions: a session that is visible but not the caller's (shared with
// them, or seen by an administrator) gives ErrReadOnly.

// User returns who the store acts for and who owns the sessions it
// creates: the PostgreSQL role (current_user), or the OS user on SQLite.
func (s *Store) User() string { return s.user }

// Admin reports whether the store's role is an agentkernel administrator
// (a member of AdminRole), who sees every user's sessions. Never on SQLite.
func (s *Store) Admin() bool { return s.admin }

// CheckWritable returns nil when the session is the store's user's own, to
// write as they like, else an error that matches ErrReadOnly and says
// whose it is: another user's session shared with them (or, for an
// administrator, anyone's) is only read, and forked to go on.
func (s *Store) CheckWritable(ss Session) error {
	if !s.pg || ss.Owner == s.user {
		return nil
	}
	return readOnlyError{id: ss.ID, owner: ss.Owner}
}

// readOnlyError is ErrReadOnly with the session and its owner.
type readOnlyError struct{ id, owner string }

func (e readOnlyError) Error() string {
	return fmt.Sprintf("session %s is %s's, and you may only read it: fork it to continue "+
		"(agentkernel sessions fork %s #N, or %%agent resume %s, which makes a fork of your own)",
		e.id, e.owner, shortRef(e.id), shortRef(e.id))
}

func (e readOnlyError) Unwrap() error { return ErrReadOnly }

func shortRef(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// missingSession explains why a write found no row of session id: it is
// someone else's that the caller may read (ErrReadOnly), or none the
// caller may see (ErrNotFound).
func missingSession(ctx context.Context, tx *sql.Tx, id string) error {
	var owner string
	err := tx.QueryRowContext(ctx, "SELECT owner FROM sessions WHERE id = ?", id).Scan(&owner)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("session %s: %w", id, ErrNotFound)
	case err != nil:
		return err
	}
	return readOnlyError{id: id, owner: owner}
}

// Share is one grant of read access to a session.
type Share struct {
	// Grantee is the role (or group role: its members read it) the
	// session is shared with.
	Grantee   string
	GrantedAt int64 // unix ms
}

// Share lets grantee, a PostgreSQL role or group role, read the session
// id: list, search, show and export it, and fork it into a session of
// their own, never write it. Only the session's owner may share it;
// sharing again is a no-op. SQLite stores cannot share (a file is one
// user's).
func (s *Store) Share(ctx context.Context, id, grantee string) error {
	op := "share " + id
	if !s.pg {
		return s.wrap(op, errors.New("sharing needs the PostgreSQL store (a SQLite file is one user's)"))
	}
	if grantee == "" {
		return s.wrap(op, errors.New("no role given"))
	}
	return s.writeTx(ctx, op, func(tx *sql.Tx) error {
		var ok bool
		if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ?)", grantee).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("no role %q in the database", grantee)
		}
		if grantee == s.user {
			return fmt.Errorf("the session is yours already (%s)", grantee)
		}
		// A grant is to this role, not to whoever takes its name later.
		var bound bool
		if err := tx.QueryRowContext(ctx, "SELECT ak_bind(?)", grantee).Scan(&bound); err != nil {
			return err
		}
		if !bound {
			return reusedName(grantee)
		}
		sr, err := lockSession(ctx, tx, id)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO session_shares (session_pk, owner, grantee, granted_at)
			VALUES (?, current_user, ?, ?) ON CONFLICT DO NOTHING`, sr.pk, grantee, s.nowMS())
		return err
	})
}

// Unshare takes back what Share gave grantee. A grant that is not there
// is an error that says so.
func (s *Store) Unshare(ctx context.Context, id, grantee string) error {
	op := "unshare " + id
	if !s.pg {
		return s.wrap(op, errors.New("sharing needs the PostgreSQL store (a SQLite file is one user's)"))
	}
	return s.writeTx(ctx, op, func(tx *sql.Tx) error {
		sr, err := lockSession(ctx, tx, id)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM session_shares WHERE session_pk = ? AND grantee = ?", sr.pk, grantee)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, fmt.Errorf("session %s is not shared with %s", id, grantee))
		}
		return nil
	})
}

// Shares returns the grants of session id that the caller may see: all of
// them for the owner (and an administrator), the caller's own for a
// reader. None on SQLite.
func (s *Store) Shares(ctx context.Context, id string) ([]Share, error) {
	if !s.pg {
		return nil, nil
	}
	var out []Share
	err := s.readTx(ctx, "shares "+id, func(tx *sql.Tx) error {
		sr, err := lookupSession(ctx, tx, id)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, "SELECT grantee, granted_at FROM session_shares WHERE session_pk = ? ORDER BY grantee", sr.pk)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var sh Share
			if err := rows.Scan(&sh.Grantee, &sh.GrantedAt); err != nil {
				return err
			}
			out = append(out, sh)
		}
		return rows.Err()
	})
	return out, err
}

// OSUser is the name of the user the process runs as (the password
// database's), or "uid N" when it has none (a container's arbitrary uid).
func OSUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid " + strconv.Itoa(os.Getuid())
}

// DefaultOwnerName is the name a session's owner is shown by (Options.OwnerName):
// $KERNEL_USERNAME (what JupyterHub hands a gateway's kernels), else
// $JUPYTERHUB_USER, else the OS user.
func DefaultOwnerName() string {
	for _, k := range []string{"KERNEL_USERNAME", "JUPYTERHUB_USER"} {
		if v := strings.TrimSpace(os.Getenv(k)); v != "" {
			return v
		}
	}
	return OSUser()
}

// ownSessions gives every session an owner (schema 7; PostgreSQL's 6):
// on SQLite the owner and shown name columns of sessions, the existing
// ones the file's user's (m.owner); on PostgreSQL pgOwnSessions.
func ownSessions(ctx context.Context, tx *sql.Tx, m migration) error {
	if m.pg {
		return pgOwnSessions(ctx, tx, m.owner)
	}
	for _, q := range []string{
		"ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
		"ALTER TABLE sessions ADD COLUMN owner_name TEXT NOT NULL DEFAULT ''",
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("own sessions: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, "UPDATE sessions SET owner = ?", m.owner); err != nil {
		return fmt.Errorf("own sessions: %w", err)
	}
	return nil
}
