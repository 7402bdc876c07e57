package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/agentkernel/agentkernel/messages"
)

// Page selects a slice of one history, always returned in history order.
// The zero value selects the whole history.
type Page struct {
	// AfterTS and BeforeTS, when non-zero, keep messages with
	// AfterTS < ts < BeforeTS.
	AfterTS  int64
	BeforeTS int64
	// Offset skips that many messages; Limit (0 = no limit) caps the answer.
	Offset int
	Limit  int
	// FromEnd counts Offset and Limit from the newest message backwards: the
	// page "the 50 messages before ts X" is {BeforeTS: X, Limit: 50, FromEnd: true}.
	FromEnd bool
}

func (p Page) sql(table string) (string, []any) {
	var sb strings.Builder
	args := []any{}
	sb.WriteString("SELECT payload FROM " + table + " WHERE session_pk = ?")
	if p.AfterTS != 0 {
		sb.WriteString(" AND ts > ?")
		args = append(args, p.AfterTS)
	}
	if p.BeforeTS != 0 {
		sb.WriteString(" AND ts < ?")
		args = append(args, p.BeforeTS)
	}
	if p.FromEnd {
		sb.WriteString(" ORDER BY seq DESC")
	} else {
		sb.WriteString(" ORDER BY seq")
	}
	limit := p.Limit
	if limit <= 0 {
		limit = math.MaxInt64 // PostgreSQL refuses SQLite's LIMIT -1
	}
	sb.WriteString(" LIMIT ? OFFSET ?")
	args = append(args, limit, max(p.Offset, 0))
	return sb.String(), args
}

func sessionPK(ctx context.Context, tx *sql.Tx, id string) (int64, error) {
	r, err := lookupSession(ctx, tx, id)
	return r.pk, err
}

// LoadUI returns a page of a session's UI history.
func (s *Store) LoadUI(ctx context.Context, sessionID string, p Page) ([]messages.UIMessage, error) {
	var out []messages.UIMessage
	err := s.readTx(ctx, "load ui "+sessionID, func(tx *sql.Tx) error {
		var err error
		out, err = loadPage[messages.UIMessage](ctx, tx, sessionID, "ui_messages", p)
		return err
	})
	return out, err
}

// LoadAPI returns a page of a session's API history.
func (s *Store) LoadAPI(ctx context.Context, sessionID string, p Page) ([]messages.APIMessage, error) {
	var out []messages.APIMessage
	err := s.readTx(ctx, "load api "+sessionID, func(tx *sql.Tx) error {
		var err error
		out, err = loadPage[messages.APIMessage](ctx, tx, sessionID, "api_messages", p)
		return err
	})
	return out, err
}

// Histories are both histories of a session.
type Histories struct {
	UI  []messages.UIMessage
	API []messages.APIMessage
}

// Load returns both complete histories of a session from one snapshot.
func (s *Store) Load(ctx context.Context, sessionID string) (Histories, error) {
	var h Histories
	err := s.readTx(ctx, "load "+sessionID, func(tx *sql.Tx) error {
		var err error
		if h.UI, err = loadPage[messages.UIMessage](ctx, tx, sessionID, "ui_messages", Page{}); err != nil {
			return err
		}
		h.API, err = loadPage[messages.APIMessage](ctx, tx, sessionID, "api_messages", Page{})
		return err
	})
	return h, err
}

func loadPage[T any](ctx context.Context, tx *sql.Tx, sessionID, table string, p Page) ([]T, error) {
	pk, err := sessionPK(ctx, tx, sessionID)
	if err != nil {
		return nil, err
	}
	q, args := p.sql(table)
	rows, err := tx.QueryContext(ctx, q, append([]any{pk}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	var buf []byte
	for rows.Next() {
		if err := rows.Scan(&buf); err != nil {
			return nil, err
		}
		var m T
		if err := json.Unmarshal(buf, &m); err != nil {
			return nil, fmt.Errorf("decode stored %s row: %w", table, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if p.FromEnd {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, nil
}

// Entry is a UI message with the session it belongs to.
type Entry struct {
	SessionID string
	Message   messages.UIMessage
}

// Recent returns the n most recent UI messages, oldest first: of one
// session, or of all live (not archived) sessions when sessionID is "".
func (s *Store) Recent(ctx context.Context, sessionID string, n int) ([]Entry, error) {
	if n <= 0 {
		return nil, nil
	}
	var out []Entry
	err := s.readTx(ctx, "recent "+sessionID, func(tx *sql.Tx) error {
		q := `SELECT s.id, m.payload FROM ui_messages m JOIN sessions s ON s.pk = m.session_pk
			WHERE s.archived_at IS NULL ORDER BY m.seq DESC LIMIT ?`
		args := []any{n}
		if sessionID != "" {
			pk, err := sessionPK(ctx, tx, sessionID)
			if err != nil {
				return err
			}
			q = `SELECT ?, payload FROM ui_messages WHERE session_pk = ? ORDER BY seq DESC LIMIT ?`
			args = []any{sessionID, pk, n}
		}
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var buf []byte
		for rows.Next() {
			var e Entry
			if err := rows.Scan(&e.SessionID, &buf); err != nil {
				return err
			}
			if err := json.Unmarshal(buf, &e.Message); err != nil {
				return fmt.Errorf("decode stored ui row: %w", err)
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, err
}

// Counts are history sizes.
type Counts struct {
	UI  int
	API int
}

// Count returns the sizes of a session's histories, or the totals over all
// sessions (archived included) when sessionID is "".
func (s *Store) Count(ctx context.Context, sessionID string) (Counts, error) {
	var c Counts
	err := s.readTx(ctx, "count "+sessionID, func(tx *sql.Tx) error {
		if sessionID == "" {
			return tx.QueryRowContext(ctx, "SELECT coalesce(sum(message_count), 0), coalesce(sum(api_count), 0) FROM sessions").
				Scan(&c.UI, &c.API)
		}
		err := tx.QueryRowContext(ctx, "SELECT message_count, api_count FROM sessions WHERE id = ?", sessionID).
			Scan(&c.UI, &c.API)
		if err == sql.ErrNoRows {
			return fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
		}
		return err
	})
	return c, err
}

// Pair is a user API message and the assistant message that answered it.
type Pair struct {
	User      messages.APIMessage
	Assistant messages.APIMessage
}

// ConversationPairs returns the last limit (0 = all) user→assistant pairs of
// a session's API history, oldest first: a user message immediately followed
// by an assistant message. Summaries and truncation markers are skipped.
func (s *Store) ConversationPairs(ctx context.Context, sessionID string, limit int) ([]Pair, error) {
	var out []Pair
	err := s.readTx(ctx, "conversation pairs "+sessionID, func(tx *sql.Tx) error {
		pk, err := sessionPK(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		// Walk backwards, decoding only the rows that form pairs.
		rows, err := tx.QueryContext(ctx, `SELECT role, payload FROM api_messages WHERE session_pk = ?
			AND kind NOT IN ('summary', 'truncation_marker') ORDER BY seq DESC`, pk)
		if err != nil {
			return err
		}
		defer rows.Close()
		var laterRole string
		var laterPayload []byte
		for rows.Next() {
			var role string
			var payload []byte
			if err := rows.Scan(&role, &payload); err != nil {
				return err
			}
			if role == string(messages.RoleUser) && laterRole == string(messages.RoleAssistant) {
				var p Pair
				if err := json.Unmarshal(payload, &p.User); err != nil {
					return fmt.Errorf("decode stored api row: %w", err)
				}
				if err := json.Unmarshal(laterPayload, &p.Assistant); err != nil {
					return fmt.Errorf("decode stored api row: %w", err)
				}
				out = append(out, p)
				if limit > 0 && len(out) == limit {
					break
				}
			}
			laterRole, laterPayload = role, payload
		}
		return rows.Err()
	})
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, err
}
