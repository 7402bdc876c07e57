package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/rewind"
)

// Rewind rewinds a session to the UI message with ts (package rewind does
// the work, see rewind.RewindToTimestamp) and persists the result in one
// transaction. It loads both histories; a caller that already holds them
// should compute the rewind itself and call ApplyRewind.
func (s *Store) Rewind(ctx context.Context, sessionID string, ts int64, opts rewind.Options) (rewind.Result, error) {
	op := "rewind " + sessionID
	if err := s.flushSession(ctx, sessionID); err != nil {
		return rewind.Result{}, err
	}
	h, err := s.Load(ctx, sessionID)
	if err != nil {
		return rewind.Result{}, err
	}
	res, err := rewind.RewindToTimestamp(h.UI, h.API, ts, opts)
	if err != nil {
		return rewind.Result{}, s.wrap(op, err)
	}
	return res, s.ApplyRewind(ctx, sessionID, h, res)
}

func (s *Store) flushSession(ctx context.Context, sessionID string) error {
	if err := s.strm.lock(ctx); err != nil {
		return s.wrap("flush "+sessionID, err)
	}
	defer s.strm.unlock()
	return s.strm.flushSessionLocked(ctx, sessionID)
}

// ApplyRewind persists res, the result of a rewind (package rewind) computed
// from old, which must be the session's stored histories. Both histories
// change in one transaction: after a crash either the whole rewind is there
// or none of it.
//
// The write is proportional to what changed, not to the session's size: UI
// messages after the kept prefix are deleted, and API messages that the
// rewind dropped or changed (cleared condenseParent/truncationParent,
// orphaned tool blocks removed) are deleted or rewritten. If the stored
// histories no longer match old (another writer appended meanwhile) the
// error matches ErrStale and nothing is written; so it is when res is not a
// rewind of old (its UI is not a prefix of old.UI, or its API history is not
// old.API with messages removed or changed in place).
func (s *Store) ApplyRewind(ctx context.Context, sessionID string, old Histories, res rewind.Result) error {
	op := "apply rewind " + sessionID
	if !res.Changed {
		return nil
	}
	keepUI := len(res.UI)
	if keepUI > len(old.UI) {
		return s.wrap(op, fmt.Errorf("%w: result has more UI messages (%d) than the history (%d)", ErrStale, keepUI, len(old.UI)))
	}
	for i := range res.UI {
		if res.UI[i].TS != old.UI[i].TS {
			return s.wrap(op, fmt.Errorf("%w: result UI history is not a prefix of the history (index %d)", ErrStale, i))
		}
	}
	plan, ok := diffAPI(old.API, res.API)
	if !ok {
		return s.wrap(op, fmt.Errorf("%w: result API history is not derived from the history", ErrStale))
	}
	return s.changeCurrent(ctx, op, sessionID, old, func(tx *sql.Tx, sr sessionRow) error {
		if keepUI < len(old.UI) {
			// UI ts are unique in a session: the first removed row is found
			// by its ts through the index, not by counting rows.
			res, err := tx.ExecContext(ctx, `DELETE FROM ui_messages WHERE session_pk = ?1 AND seq >=
				(SELECT seq FROM ui_messages WHERE session_pk = ?1 AND ts = ?2)`, sr.pk, old.UI[keepUI].TS)
			if err != nil {
				return fmt.Errorf("delete ui messages: %w", err)
			}
			if n, err := res.RowsAffected(); err != nil || n != int64(len(old.UI)-keepUI) {
				return fmt.Errorf("%w: deleting %d UI messages removed %d", ErrStale, len(old.UI)-keepUI, n)
			}
		}
		if err := plan.apply(ctx, tx, sr.pk, len(old.API)); err != nil {
			return err
		}
		if keepUI < len(old.UI) {
			// The code and file changes after the cut go with it.
			if err := rewindWorld(ctx, tx, sr.pk, old.UI[keepUI].TS); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET message_count = ?, api_count = ?, updated_at = ?
			WHERE pk = ?`, keepUI, len(res.API), s.nowMS(), sr.pk); err != nil {
			return err
		}
		return refreshDenorm(ctx, tx, sr.pk)
	})
}

// changeCurrent runs change in one write transaction on the session's
// row, after the streamed updates of the session are flushed and provided
// old is still what is stored (otherwise the error matches ErrStale).
func (s *Store) changeCurrent(ctx context.Context, op, sessionID string, old Histories, change func(*sql.Tx, sessionRow) error) error {
	if err := s.strm.lock(ctx); err != nil {
		return s.wrap(op, err)
	}
	defer s.strm.unlock()
	if err := s.strm.flushSessionLocked(ctx, sessionID); err != nil {
		return err
	}
	return s.writeTx(ctx, op, func(tx *sql.Tx) error {
		sr, err := writableSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		if err := checkCurrent(ctx, tx, sr.pk, old); err != nil {
			return err
		}
		return change(tx, sr)
	})
}

// checkCurrent verifies cheaply that old is what is stored: the same counts
// and the same last timestamps.
func checkCurrent(ctx context.Context, tx *sql.Tx, pk int64, old Histories) error {
	var nUI, nAPI int
	var lastUI, lastAPI int64
	err := tx.QueryRowContext(ctx, `SELECT message_count, api_count,
		coalesce((SELECT ts FROM ui_messages WHERE session_pk = ?1 ORDER BY seq DESC LIMIT 1), 0),
		coalesce((SELECT ts FROM api_messages WHERE session_pk = ?1 ORDER BY seq DESC LIMIT 1), 0)
		FROM sessions WHERE pk = ?1`, pk).Scan(&nUI, &nAPI, &lastUI, &lastAPI)
	if err != nil {
		return err
	}
	var wantUI, wantAPI int64
	if len(old.UI) > 0 {
		wantUI = old.UI[len(old.UI)-1].TS
	}
	if len(old.API) > 0 {
		wantAPI = old.API[len(old.API)-1].TS
	}
	if nUI != len(old.UI) || nAPI != len(old.API) || lastUI != wantUI || lastAPI != wantAPI {
		return fmt.Errorf("%w: stored %d UI / %d API messages, given %d / %d", ErrStale, nUI, nAPI, len(old.UI), len(old.API))
	}
	return nil
}

// apiPlan is the difference between an API history and its rewound form,
// by position in the old history.
type apiPlan struct {
	deletes []int
	updates map[int]messages.APIMessage
}

func (p apiPlan) empty() bool { return len(p.deletes) == 0 && len(p.updates) == 0 }

// diffAPI walks old and new together. A rewind keeps the order of the API
// history and only removes messages or changes them in place, so every new
// message matches the next old message with the same identity (role, ts,
// summary and marker ids); unmatched old messages were removed, matched
// ones that differ were changed. ok is false when new is not such a
// derivation of old.
func diffAPI(old, new []messages.APIMessage) (p apiPlan, ok bool) {
	j := 0
	for i := range old {
		if j < len(new) && sameIdentity(old[i], new[j]) {
			if !apiSame(old[i], new[j]) {
				if p.updates == nil {
					p.updates = map[int]messages.APIMessage{}
				}
				p.updates[i] = new[j]
			}
			j++
			continue
		}
		p.deletes = append(p.deletes, i)
	}
	return p, j == len(new)
}

// apply makes the API history of the session pk, n messages long, what
// the plan says: the removed messages at its end go with one statement,
// the others one by one, and the changed ones are rewritten in place.
func (p apiPlan) apply(ctx context.Context, tx *sql.Tx, pk int64, n int) error {
	if p.empty() {
		return nil
	}
	first := n
	if len(p.deletes) > 0 {
		first = p.deletes[0]
	}
	for i := range p.updates {
		first = min(first, i)
	}
	// tail: deletes[k:] are the positions tailStart..n-1, removed with one
	// statement.
	k := len(p.deletes)
	for k > 0 && p.deletes[k-1] == n-(len(p.deletes)-k)-1 {
		k--
	}
	tailStart := n - (len(p.deletes) - k)
	seqs, err := apiSeqs(ctx, tx, pk, first, n)
	if err != nil {
		return err
	}
	if tailStart < n {
		seq, err := seqs.at(tailStart)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM api_messages WHERE session_pk = ? AND seq >= ?", pk, seq); err != nil {
			return fmt.Errorf("delete api messages: %w", err)
		}
	}
	if k > 0 {
		if err := deleteAPI(ctx, tx, seqs, p.deletes[:k]); err != nil {
			return err
		}
	}
	if len(p.updates) > 0 {
		return updateAPI(ctx, tx, seqs, p.updates)
	}
	return nil
}

// apiSeqPositions are the seqs of the API history's positions first..n-1.
type apiSeqPositions struct {
	first int
	seqs  []int64
}

// at is the seq of position pos.
func (s apiSeqPositions) at(pos int) (int64, error) {
	if pos-s.first >= len(s.seqs) {
		return 0, fmt.Errorf("api history shorter than expected at %d", pos)
	}
	return s.seqs[pos-s.first], nil
}

// apiSeqs reads the seqs of the positions first..n-1 of the session pk's
// API history, from its end: rewinds mostly touch its tail.
func apiSeqs(ctx context.Context, tx *sql.Tx, pk int64, first, n int) (apiSeqPositions, error) {
	rows, err := tx.QueryContext(ctx, `SELECT seq FROM api_messages WHERE session_pk = ? ORDER BY seq DESC
		LIMIT ?`, pk, n-first)
	if err != nil {
		return apiSeqPositions{}, err
	}
	seqs := make([]int64, 0, n-first)
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			rows.Close()
			return apiSeqPositions{}, err
		}
		seqs = append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return apiSeqPositions{}, err
	}
	rows.Close()
	slices.Reverse(seqs)
	if len(seqs) != n-first {
		return apiSeqPositions{}, fmt.Errorf("%w: API history has fewer rows than expected", ErrStale)
	}
	return apiSeqPositions{first: first, seqs: seqs}, nil
}

// deleteAPI removes the API messages at the positions, one by one.
func deleteAPI(ctx context.Context, tx *sql.Tx, seqs apiSeqPositions, positions []int) error {
	del, err := tx.PrepareContext(ctx, "DELETE FROM api_messages WHERE seq = ?")
	if err != nil {
		return err
	}
	defer del.Close()
	for _, pos := range positions {
		seq, err := seqs.at(pos)
		if err != nil {
			return err
		}
		if _, err := del.ExecContext(ctx, seq); err != nil {
			return fmt.Errorf("delete api message: %w", err)
		}
	}
	return nil
}

// updateAPI rewrites the API messages at the positions of updates with
// their new content.
func updateAPI(ctx context.Context, tx *sql.Tx, seqs apiSeqPositions, updates map[int]messages.APIMessage) error {
	upd, err := tx.PrepareContext(ctx, "UPDATE api_messages SET ts = ?, role = ?, kind = ?, text = ?, payload = ? WHERE seq = ?")
	if err != nil {
		return err
	}
	defer upd.Close()
	for pos, m := range updates {
		seq, err := seqs.at(pos)
		if err != nil {
			return err
		}
		payload, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode api message %d: %w", m.TS, err)
		}
		if _, err := upd.ExecContext(ctx, m.TS, string(m.Role), apiKind(m), m.PlainText(), payload, seq); err != nil {
			return fmt.Errorf("update api message: %w", err)
		}
	}
	return nil
}

func sameIdentity(a, b messages.APIMessage) bool {
	return a.Role == b.Role && a.TS == b.TS && a.IsSummary == b.IsSummary && a.CondenseID == b.CondenseID &&
		a.IsTruncationMarker == b.IsTruncationMarker && a.TruncationID == b.TruncationID
}

// apiSame reports whether a and b are equal. It is cheap for the messages a
// rewind keeps: they share their Content slices and strings with the
// original. TestAPIMessageFieldsCovered fails when APIMessage or
// ContentBlock grow a field this function does not compare.
func apiSame(a, b messages.APIMessage) bool {
	if !sameIdentity(a, b) || a.CondenseParent != b.CondenseParent || a.TruncationParent != b.TruncationParent ||
		len(a.Content) != len(b.Content) {
		return false
	}
	if len(a.Content) == 0 || &a.Content[0] == &b.Content[0] {
		return true
	}
	return blocksSame(a.Content, b.Content)
}

func blocksSame(a, b []messages.ContentBlock) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Type != y.Type || x.Text != y.Text || x.ID != y.ID || x.Name != y.Name ||
			!bytes.Equal(x.Input, y.Input) || (x.Input == nil) != (y.Input == nil) ||
			x.ToolUseID != y.ToolUseID || x.IsError != y.IsError ||
			x.Thinking != y.Thinking || x.Signature != y.Signature ||
			(x.Content == nil) != (y.Content == nil) || !blocksSame(x.Content, y.Content) {
			return false
		}
		if (x.Source == nil) != (y.Source == nil) || (x.Source != nil && *x.Source != *y.Source) {
			return false
		}
	}
	return true
}

// refreshDenorm recomputes a session's first user message and last-message
// preview from its UI history (after a rewind or an import).
func refreshDenorm(ctx context.Context, tx *sql.Tx, pk int64) error {
	var first string
	var payload []byte
	err := tx.QueryRowContext(ctx, `SELECT payload FROM ui_messages WHERE session_pk = ? AND role = ?
		ORDER BY seq LIMIT 1`, pk, roleUser).Scan(&payload)
	switch {
	case err == sql.ErrNoRows:
	case err != nil:
		return err
	default:
		var m messages.UIMessage
		if err := json.Unmarshal(payload, &m); err != nil {
			return fmt.Errorf("decode stored ui row: %w", err)
		}
		first = cutRunes(m.Text, firstUserKeep)
	}
	var last, lastRole string
	rows, err := tx.QueryContext(ctx, `SELECT role, payload FROM ui_messages WHERE session_pk = ? AND role <> ?
		ORDER BY seq DESC LIMIT 64`, pk, roleMeta)
	if err != nil {
		return err
	}
	for rows.Next() {
		var role string
		if err := rows.Scan(&role, &payload); err != nil {
			rows.Close()
			return err
		}
		var m messages.UIMessage
		if err := json.Unmarshal(payload, &m); err != nil {
			rows.Close()
			return fmt.Errorf("decode stored ui row: %w", err)
		}
		if p := previewText(m); p != "" {
			last, lastRole = cutRunes(p, lastKeep), role
			break
		}
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	rows.Close()
	if _, err = tx.ExecContext(ctx, "UPDATE sessions SET first_user_message = ?, last_message = ?, last_role = ? WHERE pk = ?",
		first, last, lastRole, pk); err != nil {
		return err
	}
	return refreshTitle(ctx, tx, pk)
}
