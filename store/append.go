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
	if s.pg && len(msgs) == 1 {
		if done, err := s.pgAppendOne(ctx, sessionID, msgs[0]); done || err != nil {
			return s.wrap("append ui "+sessionID, err)
		}
	}
	return s.writeTx(ctx, "append ui "+sessionID, func(tx *sql.Tx) error {
		now := s.nowMS()
		if len(msgs) == 0 {
			_, err := writableSession(ctx, tx, sessionID)
			return err
		}
		// Nearly every append is to a live session of the caller's that has
		// messages already: the roles are then known without reading the
		// session, and one UPDATE finds, locks and updates its row. Any
		// other (its first message, archived, missing, another's) takes
		// the long way, which tells them apart.
		sum := summarizeUI(msgs, 1)
		pk, ok, err := bumpSession(ctx, tx, sessionID, uiBump, sum.bumpArgs(now)...)
		if err != nil {
			return err
		}
		if ok {
			return insertUIRows(ctx, tx, pk, sessionID, msgs, sum)
		}
		sr, err := writableSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		return insertUI(ctx, tx, sr, sessionID, msgs, now)
	})
}

// pgAppendOne appends m to a live session of the caller's that has
// messages, on PostgreSQL, when m is not the user's (the model's words, a
// tool's output: most of a session's messages): one statement, which
// commits on its own, bumps the session's row and inserts m, where a
// transaction takes four round trips. done is false, and nothing was
// written, when the session is not such a one, or m is the user's (the
// title may change): AppendUI's transaction does it then. A connection
// that broke mid-statement is retried; the rerun finding m stored means
// it was.
func (s *Store) pgAppendOne(ctx context.Context, sessionID string, m messages.UIMessage) (done bool, err error) {
	sum := summarizeUI([]messages.UIMessage{m}, 1)
	if sum.firstUser != "" || s.isClosed() {
		return false, nil
	}
	payload, err := json.Marshal(m)
	if err != nil {
		return false, fmt.Errorf("encode ui message %d: %w", m.TS, err)
	}
	skipped := false
	err = s.pgRetry(ctx, "append ui "+sessionID, func() (bool, error) {
		args := append(sum.bumpArgs(s.nowMS()), sessionID, m.TS, string(m.Type), uiKind(m), sum.roles[0], uiText(m), m.Partial, payload)
		res, err := s.w.ExecContext(ctx, `WITH s AS (`+uiBump+bumpWhere+`)
			INSERT INTO ui_messages (`+uiColumns+`)
			SELECT pk, ?::bigint, ?::text, ?::text, ?::text, ?::text, ?::bigint, ?::text FROM s`, args...)
		if err != nil {
			return true, uiInsertError(err, m.TS, sessionID) // one statement: whether it committed is unknown
		}
		n, err := res.RowsAffected()
		skipped = n == 0
		return false, err
	})
	return !skipped || err != nil, err
}

// uiBump and apiBump are the UPDATEs of bumpSession; bumpWhere is its
// WHERE: the caller's own live session id, with UI messages. uiColumns are
// what an append inserts.
const (
	uiBump = `UPDATE sessions SET message_count = message_count + ?, updated_at = ?,
		first_user_message = CASE WHEN first_user_message = '' THEN ? ELSE first_user_message END,
		last_message = CASE WHEN ? = '' THEN last_message ELSE ? END,
		last_role = CASE WHEN ? = '' THEN last_role ELSE ? END`
	apiBump   = `UPDATE sessions SET api_count = api_count + ?, updated_at = ?`
	bumpWhere = ` WHERE id = ? AND archived_at IS NULL AND message_count > 0 /*pg AND owner = current_user*/ RETURNING pk`
	uiColumns = `session_pk, ts, type, kind, role, text, partial, payload`
)

// bumpSession runs update (uiBump or apiBump, then args) on the session id
// when it is the caller's own, live, and has UI messages (its roles are
// settled), which also locks its row as lockSession does; ok is false, and
// nothing changed, when no such session is there.
func bumpSession(ctx context.Context, tx *sql.Tx, id, update string, args ...any) (pk int64, ok bool, err error) {
	err = tx.QueryRowContext(ctx, update+bumpWhere, append(args, id)...).Scan(&pk)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return pk, err == nil, err
}

// uiSummary is what a run of UI messages sets on its session's row.
type uiSummary struct {
	firstUser      string // the first user message's text, cut
	last, lastRole string // the last previewed message's text, cut, and role
	roles          []string
}

// summarizeUI gives the roles of msgs appended after count UI messages,
// and what they set on the session's row.
func summarizeUI(msgs []messages.UIMessage, count int) uiSummary {
	sum := uiSummary{roles: make([]string, len(msgs))}
	for i, m := range msgs {
		role := uiRole(m, count+i == 0)
		sum.roles[i] = role
		if role == roleUser && sum.firstUser == "" {
			sum.firstUser = cutRunes(m.Text, firstUserKeep)
		}
		if p := previewText(m); p != "" {
			sum.last, sum.lastRole = cutRunes(p, lastKeep), role
		}
	}
	return sum
}

// bumpArgs are uiBump's arguments for the messages of sum, appended at now.
func (sum uiSummary) bumpArgs(now int64) []any {
	return []any{len(sum.roles), now, sum.firstUser, sum.last, sum.last, sum.last, sum.lastRole}
}

// uiInsertError is the error of an INSERT of the UI message ts: a ts the
// session has is ErrExists.
func uiInsertError(err error, ts int64, sessionID string) error {
	if isConstraint(err) {
		return fmt.Errorf("ui message ts %d in session %s: %w", ts, sessionID, ErrExists)
	}
	return fmt.Errorf("insert ui message %d: %w", ts, err)
}

// insertUI inserts msgs after the session's existing UI messages and keeps
// the session row's counters and denormalised previews current.
func insertUI(ctx context.Context, tx *sql.Tx, sr sessionRow, sessionID string, msgs []messages.UIMessage, now int64) error {
	if len(msgs) == 0 {
		return nil
	}
	sum := summarizeUI(msgs, sr.uiCount)
	if _, err := tx.ExecContext(ctx, uiBump+" WHERE pk = ?", append(sum.bumpArgs(now), sr.pk)...); err != nil {
		return err
	}
	return insertUIRows(ctx, tx, sr.pk, sessionID, msgs, sum)
}

// insertUIRows inserts msgs with the roles of sum, and derives the
// session's title again when a user message came.
func insertUIRows(ctx context.Context, tx *sql.Tx, pk int64, sessionID string, msgs []messages.UIMessage, sum uiSummary) error {
	st, err := tx.PrepareContext(ctx, `INSERT INTO ui_messages (`+uiColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for i, m := range msgs {
		payload, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode ui message %d: %w", m.TS, err)
		}
		if _, err := st.ExecContext(ctx, pk, m.TS, string(m.Type), uiKind(m), sum.roles[i], uiText(m), m.Partial, payload); err != nil {
			return uiInsertError(err, m.TS, sessionID)
		}
	}
	if sum.firstUser == "" {
		return nil
	}
	return refreshTitle(ctx, tx, pk)
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
		now := s.nowMS()
		if len(msgs) == 0 {
			_, err := writableSession(ctx, tx, sessionID)
			return err
		}
		// As AppendUI: one UPDATE when the session is the common case.
		pk, ok, err := bumpSession(ctx, tx, sessionID, apiBump, len(msgs), now)
		if err != nil {
			return err
		}
		if ok {
			return insertAPIRows(ctx, tx, pk, msgs)
		}
		sr, err := writableSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		return insertAPI(ctx, tx, sr, msgs, now)
	})
}

func insertAPI(ctx context.Context, tx *sql.Tx, sr sessionRow, msgs []messages.APIMessage, now int64) error {
	if len(msgs) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, apiBump+" WHERE pk = ?", len(msgs), now, sr.pk); err != nil {
		return err
	}
	return insertAPIRows(ctx, tx, sr.pk, msgs)
}

// insertAPIRows inserts msgs into the session pk's API history.
func insertAPIRows(ctx context.Context, tx *sql.Tx, pk int64, msgs []messages.APIMessage) error {
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
		if _, err := st.ExecContext(ctx, pk, m.TS, string(m.Role), apiKind(m), m.PlainText(), payload); err != nil {
			return fmt.Errorf("insert api message %d: %w", m.TS, err)
		}
	}
	return nil
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
