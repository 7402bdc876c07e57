package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agentkernel/agentkernel/messages"
)

// RewriteAPI replaces a session's whole API history with api and appends
// the UI messages announce, in one transaction. It is for the context
// operations that insert API messages, which a rewind never does: a
// condense (tags covered messages and appends a summary) and a sliding-window
// truncation (tags messages and inserts a marker before the first kept one).
// old must be the stored histories, as for ApplyRewind; otherwise the error
// matches ErrStale and nothing is written. The cost is proportional to the
// API history; these operations are rare.
func (s *Store) RewriteAPI(ctx context.Context, sessionID string, old Histories, api []messages.APIMessage, announce ...messages.UIMessage) error {
	op := "rewrite api " + sessionID
	for _, m := range api {
		if err := m.Validate(); err != nil {
			return s.wrap(op, err)
		}
	}
	for _, m := range announce {
		if err := m.Validate(); err != nil {
			return s.wrap(op, err)
		}
	}
	return s.changeCurrent(ctx, op, sessionID, old, func(tx *sql.Tx, sr sessionRow) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM api_messages WHERE session_pk = ?`, sr.pk); err != nil {
			return fmt.Errorf("delete api messages: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET api_count = 0 WHERE pk = ?`, sr.pk); err != nil {
			return err
		}
		now := s.nowMS()
		if err := insertAPI(ctx, tx, sr, api, now); err != nil {
			return err
		}
		if len(announce) > 0 {
			return insertUI(ctx, tx, sr, sessionID, announce, now)
		}
		return nil
	})
}
