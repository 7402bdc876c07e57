package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"

	"github.com/agentkernel/agentkernel/messages"
)

// sessionRow is what a write needs to know about its session.
type sessionRow struct {
	pk       int64
	uiCount  int
	archived bool
}

func lookupSession(ctx context.Context, tx *sql.Tx, id string) (sessionRow, error) {
	return readSession(ctx, tx, id, "SELECT pk, message_count, archived_at FROM sessions WHERE id = ?")
}

// lockSession is lookupSession for a write: on PostgreSQL it also locks the
// session's row until the transaction ends, so that writers of one session
// from several connections or processes take turns (SQLite has one writer).
// Every write transaction locks its session first, which also keeps the
// lock order the same everywhere. It finds only the caller's own sessions:
// another's that they may read is ErrReadOnly.
func lockSession(ctx context.Context, tx *sql.Tx, id string) (sessionRow, error) {
	r, err := readSession(ctx, tx, id, "SELECT pk, message_count, archived_at FROM sessions WHERE id = ? /*pg AND owner = current_user FOR UPDATE*/")
	if errors.Is(err, ErrNotFound) {
		err = missingSession(ctx, tx, id)
	}
	return r, err
}

func readSession(ctx context.Context, tx *sql.Tx, id, query string) (sessionRow, error) {
	var r sessionRow
	var archived sql.NullInt64
	err := tx.QueryRowContext(ctx, query, id).Scan(&r.pk, &r.uiCount, &archived)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	r.archived = archived.Valid
	return r, err
}

func writableSession(ctx context.Context, tx *sql.Tx, id string) (sessionRow, error) {
	r, err := lockSession(ctx, tx, id)
	if err == nil && r.archived {
		err = fmt.Errorf("session %s: %w", id, ErrArchived)
	}
	return r, err
}

// AppendUI appends completed (or just-started, partial) UI messages to a
// session's UI history in one transaction, and returns once it has
// committed. Each message is validated; a ts already in the session gives
// ErrExists. A partial message is written at once; stream its later text
// with UpdateUI.
func (s *Store) AppendUI(ctx context.Context, sessionID string, msgs ...messages.UIMessage) error {
	for _, m := range msgs {
		if err := m.Validate(); err != nil {
			return s.wrap("append ui "+sessionID, err)
		}
	}
	return s.writeTx(ctx, "append ui "+sessionID, func(tx *sql.Tx) error {
		sr, err := writableSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		return insertUI(ctx, tx, sr, sessionID, msgs, s.nowMS())
	})
}

// insertUI inserts msgs after the session's existing UI messages and keeps
// the session row's counters and denormalised previews current.
func insertUI(ctx context.Context, tx *sql.Tx, sr sessionRow, sessionID string, msgs []messages.UIMessage, now int64) error {
	if len(msgs) == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO ui_messages
		(session_pk, ts, type, kind, role, text, partial, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	var firstUser, last, lastRole string
	for i, m := range msgs {
		payload, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode ui message %d: %w", m.TS, err)
		}
		role := uiRole(m, sr.uiCount+i == 0)
		text := uiText(m)
		if _, err := st.ExecContext(ctx, sr.pk, m.TS, string(m.Type), uiKind(m), role, text, m.Partial, payload); err != nil {
			if isConstraint(err) {
				return fmt.Errorf("ui message ts %d in session %s: %w", m.TS, sessionID, ErrExists)
			}
			return fmt.Errorf("insert ui message %d: %w", m.TS, err)
		}
		if role == roleUser && firstUser == "" {
			firstUser = cutRunes(m.Text, firstUserKeep)
		}
		if p := previewText(m); p != "" {
			last, lastRole = cutRunes(p, lastKeep), role
		}
	}
	_, err = tx.ExecContext(ctx, `UPDATE sessions SET message_count = message_count + ?, updated_at = ?,
		first_user_message = CASE WHEN first_user_message = '' THEN ? ELSE first_user_message END,
		last_message = CASE WHEN ? = '' THEN last_message ELSE ? END,
		last_role = CASE WHEN ? = '' THEN last_role ELSE ? END
		WHERE pk = ?`, len(msgs), now, firstUser, last, last, last, lastRole, sr.pk)
	if err != nil || firstUser == "" {
		return err
	}
	return refreshTitle(ctx, tx, sr.pk)
}

// AppendAPI appends API messages to a session's API history in one
// transaction and returns once it has committed. Each message is validated.
func (s *Store) AppendAPI(ctx context.Context, sessionID string, msgs ...messages.APIMessage) error {
	for _, m := range msgs {
		if err := m.Validate(); err != nil {
			return s.wrap("append api "+sessionID, err)
		}
	}
	return s.writeTx(ctx, "append api "+sessionID, func(tx *sql.Tx) error {
		sr, err := writableSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		return insertAPI(ctx, tx, sr, msgs, s.nowMS())
	})
}

func insertAPI(ctx context.Context, tx *sql.Tx, sr sessionRow, msgs []messages.APIMessage, now int64) error {
	if len(msgs) == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO api_messages
		(session_pk, ts, role, kind, text, payload) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, m := range msgs {
		payload, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode api message %d: %w", m.TS, err)
		}
		if _, err := st.ExecContext(ctx, sr.pk, m.TS, string(m.Role), apiKind(m), m.PlainText(), payload); err != nil {
			return fmt.Errorf("insert api message %d: %w", m.TS, err)
		}
	}
	_, err = tx.ExecContext(ctx, `UPDATE sessions SET api_count = api_count + ?, updated_at = ? WHERE pk = ?`,
		len(msgs), now, sr.pk)
	return err
}

// UpdateUI replaces the stored UI message of the session that has msg.TS
// (a streaming message first written with AppendUI).
//
// While msg.Partial is true the write is debounced: UpdateUI only records
// the newest version and returns; the background writer stores it at most
// Options.Debounce later, so a stream of tokens costs one write per interval,
// not one per token. A crash loses at most that interval's tail, and the row
// stays marked partial. When msg.Partial is false (the message is complete)
// any pending version is discarded and msg is committed before UpdateUI
// returns. Errors of debounced writes are reported by the next Flush.
func (s *Store) UpdateUI(ctx context.Context, sessionID string, msg messages.UIMessage) error {
	// A model's chunk comes here: nothing is allocated but on an error.
	if err := msg.Validate(); err != nil {
		return s.wrap("update ui "+sessionID, err)
	}
	if s.isClosed() {
		return s.wrap("update ui "+sessionID, net.ErrClosed)
	}
	if msg.Partial {
		s.strm.set(sessionID, msg)
		return nil
	}
	return s.strm.writeFinal(ctx, sessionID, msg)
}

// updateUIRows writes new versions of existing UI messages in one
// transaction. A message whose row is gone is an ErrNotFound error.
func updateUIRows(ctx context.Context, tx *sql.Tx, sessionID string, msgs []messages.UIMessage, now int64) error {
	sr, err := lockSession(ctx, tx, sessionID)
	if err != nil {
		return err
	}
	var firstSeq, lastSeq int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(min(seq), 0), coalesce(max(seq), 0)
		FROM ui_messages WHERE session_pk = ?`, sr.pk).Scan(&firstSeq, &lastSeq); err != nil {
		return err
	}
	for _, m := range msgs {
		payload, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode ui message %d: %w", m.TS, err)
		}
		var seq int64
		err = tx.QueryRowContext(ctx, "SELECT seq FROM ui_messages WHERE session_pk = ? AND ts = ?", sr.pk, m.TS).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("ui message ts %d in session %s: %w", m.TS, sessionID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		role := uiRole(m, seq == firstSeq)
		if _, err := tx.ExecContext(ctx, `UPDATE ui_messages SET type = ?, kind = ?, role = ?, text = ?,
			partial = ?, payload = ? WHERE seq = ?`,
			string(m.Type), uiKind(m), role, uiText(m), m.Partial, payload, seq); err != nil {
			return fmt.Errorf("update ui message %d: %w", m.TS, err)
		}
		if seq == firstSeq && role == roleUser {
			if _, err := tx.ExecContext(ctx, "UPDATE sessions SET first_user_message = ? WHERE pk = ?",
				cutRunes(m.Text, firstUserKeep), sr.pk); err != nil {
				return err
			}
			if err := refreshTitle(ctx, tx, sr.pk); err != nil {
				return err
			}
		}
		if p := previewText(m); seq == lastSeq && p != "" {
			if _, err := tx.ExecContext(ctx, "UPDATE sessions SET last_message = ?, last_role = ? WHERE pk = ?",
				cutRunes(p, lastKeep), role, sr.pk); err != nil {
				return err
			}
		}
	}
	_, err = tx.ExecContext(ctx, "UPDATE sessions SET updated_at = ? WHERE pk = ?", now, sr.pk)
	return err
}
