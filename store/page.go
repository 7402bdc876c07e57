package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/agentkernel/agentkernel/messages"
)

// UIPage selects the newest messages of one session's UI history, for a
// paging view of a long session: {Last: 50} is the last page, and
// {Last: 50, Before: page[0].TS} the page before it. The zero value selects
// the whole history.
type UIPage struct {
	// Last keeps the last N messages that pass Before and Role; 0 (or less)
	// keeps them all.
	Last int
	// Before, when non-zero, keeps the messages with ts < Before.
	Before int64
	// Role, when set, keeps the messages of that derived role (the role
	// column, messages.RoleOf): user, assistant, tool, system or meta.
	Role string
}

// uiRoles are the values of the role column (messages.RoleOf).
var uiRoles = []string{
	string(messages.RoleUser), string(messages.RoleAssistant), string(messages.RoleTool),
	string(messages.RoleSystem), string(messages.RoleMeta),
}

// CheckRole reports whether role filters UIPage and CountUI: "" (every
// role) or one of user, assistant, tool, system and meta.
func CheckRole(role string) error {
	if role == "" || slices.Contains(uiRoles, role) {
		return nil
	}
	return fmt.Errorf("unknown role %q (want %s)", role, strings.Join(uiRoles, ", "))
}

// PageUI returns the page p of a session's UI history, oldest first (ts
// order, which is history order). It reads only the page's rows, newest
// first, through the index on (session_pk, ts), or (session_pk, role, ts)
// with a role: its cost does not grow with the session. An unknown session
// is an ErrNotFound error, an unknown role an error naming the known ones.
// Archived sessions are read as live ones.
func (s *Store) PageUI(ctx context.Context, sessionID string, p UIPage) ([]messages.UIMessage, error) {
	op := "page ui " + sessionID
	if err := CheckRole(p.Role); err != nil {
		return nil, s.wrap(op, err)
	}
	var out []messages.UIMessage
	err := s.readTx(ctx, op, func(tx *sql.Tx) error {
		pk, err := sessionPK(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		out, err = pageUI(ctx, tx, pk, p)
		return err
	})
	return out, err
}

func pageUI(ctx context.Context, tx *sql.Tx, pk int64, p UIPage) ([]messages.UIMessage, error) {
	q, args := p.sql(pk)
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []messages.UIMessage
	if p.Last > 0 {
		out = make([]messages.UIMessage, 0, min(p.Last, 1024))
	}
	var buf []byte
	for rows.Next() {
		if err := rows.Scan(&buf); err != nil {
			return nil, err
		}
		var m messages.UIMessage
		if err := json.Unmarshal(buf, &m); err != nil {
			return nil, fmt.Errorf("decode stored ui_messages row: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

// sql is the page's query: one text for both engines (see pgconn.go), the
// newest matching rows first.
func (p UIPage) sql(pk int64) (string, []any) {
	var sb strings.Builder
	args := []any{pk}
	sb.WriteString("SELECT payload FROM ui_messages WHERE session_pk = ?")
	if p.Role != "" {
		sb.WriteString(" AND role = ?")
		args = append(args, p.Role)
	}
	if p.Before != 0 {
		sb.WriteString(" AND ts < ?")
		args = append(args, p.Before)
	}
	sb.WriteString(" ORDER BY ts DESC LIMIT ?")
	limit := int64(p.Last)
	if limit <= 0 {
		limit = math.MaxInt64 // PostgreSQL refuses SQLite's LIMIT -1
	}
	return sb.String(), append(args, limit)
}

// CountUI returns how many messages a session's UI history holds, or how
// many of them have role when role is set (see UIPage.Role): the total a
// paging view shows. Without a role it reads the session's row; with one
// it counts that role's entries of the (session_pk, role, ts) index.
func (s *Store) CountUI(ctx context.Context, sessionID, role string) (int, error) {
	op := "count ui " + sessionID
	if err := CheckRole(role); err != nil {
		return 0, s.wrap(op, err)
	}
	var n int
	err := s.readTx(ctx, op, func(tx *sql.Tx) error {
		r, err := lookupSession(ctx, tx, sessionID)
		if err != nil || role == "" {
			n = r.uiCount
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT count(*) FROM ui_messages WHERE session_pk = ? AND role = ?",
			r.pk, role).Scan(&n)
	})
	return n, err
}

// UIIndexes returns the places in a session's UI history (#N, counted from
// 0, as rewinds and `agentkernel sessions show` number messages) of the UI
// messages with the timestamps ts, given in ascending order (a page of
// PageUI). A ts that is not in the session is an ErrNotFound error. The
// places are counted from the end of the history: the cost is that of the
// index entries from ts[0] to the end, counted by the database, and of those
// from ts[0] to the last ts, read.
func (s *Store) UIIndexes(ctx context.Context, sessionID string, ts []int64) ([]int, error) {
	op := "ui indexes " + sessionID
	if !slices.IsSorted(ts) {
		return nil, s.wrap(op, errors.New("timestamps not in ascending order"))
	}
	if len(ts) == 0 {
		return nil, nil
	}
	out := make([]int, len(ts))
	err := s.readTx(ctx, op, func(tx *sql.Tx) error {
		r, err := lookupSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		last := ts[len(ts)-1]
		var after int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM ui_messages WHERE session_pk = ? AND ts > ?",
			r.pk, last).Scan(&after); err != nil {
			return err
		}
		// Walk the span of the given messages newest first; pos is the
		// place of the row read.
		rows, err := tx.QueryContext(ctx, `SELECT ts FROM ui_messages WHERE session_pk = ? AND ts >= ? AND ts <= ?
			ORDER BY ts DESC`, r.pk, ts[0], last)
		if err != nil {
			return err
		}
		defer rows.Close()
		pos, i := r.uiCount-after-1, len(ts)-1
		for i >= 0 && rows.Next() {
			var t int64
			if err := rows.Scan(&t); err != nil {
				return err
			}
			if ts[i] > t {
				return fmt.Errorf("ui message ts %d in session %s: %w", ts[i], sessionID, ErrNotFound)
			}
			for i >= 0 && ts[i] == t {
				out[i] = pos
				i--
			}
			pos--
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if i >= 0 {
			return fmt.Errorf("ui message ts %d in session %s: %w", ts[i], sessionID, ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
