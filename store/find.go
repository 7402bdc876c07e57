package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// FindSession returns the session, live or archived, whose id is ref or
// starts with ref (what people type: the 8 characters that lists show). The
// error wraps ErrNotFound when none matches, ErrAmbiguous when several do.
func (s *Store) FindSession(ctx context.Context, ref string) (Session, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return Session{}, lookupError{ref: ref, err: ErrNotFound}
	}
	var ids []string
	err := s.readTx(ctx, "find session "+ref, func(tx *sql.Tx) error {
		// ESCAPE keeps % and _ in ref literal.
		pattern := strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(ref) + "%"
		rows, err := tx.QueryContext(ctx, "SELECT id FROM sessions WHERE id = ? OR lower(id) LIKE lower(?) ESCAPE '\\' ORDER BY id = ? DESC LIMIT 2",
			ref, pattern, ref)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	switch {
	case err != nil:
		return Session{}, err
	case len(ids) == 0:
		return Session{}, lookupError{ref: ref, err: ErrNotFound}
	case len(ids) > 1 && ids[0] != ref:
		return Session{}, lookupError{ref: ref, err: ErrAmbiguous}
	}
	return s.GetSession(ctx, ids[0])
}

// lookupError is FindSession's answer for people: what was looked for,
// and the sentinel it matches.
type lookupError struct {
	ref string
	err error
}

func (e lookupError) Error() string {
	switch {
	case e.ref == "":
		return "no session id given"
	case e.err == ErrAmbiguous:
		return fmt.Sprintf("session id %q is ambiguous: it starts several sessions; give more of it", e.ref)
	}
	return fmt.Sprintf("no such session %q", e.ref)
}

func (e lookupError) Unwrap() error { return e.err }

// LatestSession returns the most recently updated live session of the
// workspace ("" for any) that is the store's user's own (what they may
// continue). The error wraps ErrNotFound when there is none.
func (s *Store) LatestSession(ctx context.Context, workspace string) (Session, error) {
	list, err := s.ListSessions(ctx, ListOptions{Limit: 1, Workspace: workspace, Mine: true})
	if err != nil {
		return Session{}, err
	}
	if len(list) == 0 {
		if workspace != "" {
			return Session{}, fmt.Errorf("store: no session was started in %s (agentkernel sessions list --all lists every directory's): %w",
				workspace, ErrNotFound)
		}
		return Session{}, fmt.Errorf("store: the store holds no session to continue: %w", ErrNotFound)
	}
	return s.GetSession(ctx, list[0].ID)
}
