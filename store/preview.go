package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentkernel/agentkernel/messages"
)

// PreviewItem is one message of a preview.
type PreviewItem struct {
	Role string `json:"role"` // user | assistant | tool | system
	Text string `json:"text"`
}

// PreviewOptions shape Preview's answer. The zero value works.
type PreviewOptions struct {
	Limit    int // messages (default 10)
	MaxChars int // characters per message (default 240)
	// MaxBytes caps the JSON encoding of the whole answer (default 16 KiB):
	// the oldest items are dropped until it fits.
	MaxBytes int
}

// Preview returns the last messages of a session, oldest first, each cut to
// MaxChars, the whole capped by MaxBytes of JSON. Bookkeeping messages
// (api_req_*, checkpoints, kernel status) are left out; tool calls are
// summarised. Nothing stored is changed: caps apply only to the answer.
func (s *Store) Preview(ctx context.Context, sessionID string, o PreviewOptions) ([]PreviewItem, error) {
	if o.Limit <= 0 {
		o.Limit = 10
	}
	if o.MaxChars <= 0 {
		o.MaxChars = 240
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 16 << 10
	}
	var items []PreviewItem
	err := s.readTx(ctx, "preview "+sessionID, func(tx *sql.Tx) error {
		pk, err := sessionPK(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		// Read a few more than Limit: some rows may preview as empty.
		rows, err := tx.QueryContext(ctx, `SELECT role, payload FROM ui_messages
			WHERE session_pk = ? AND role <> ? ORDER BY seq DESC LIMIT ?`, pk, roleMeta, o.Limit*4+16)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() && len(items) < o.Limit {
			var role string
			var payload []byte
			if err := rows.Scan(&role, &payload); err != nil {
				return err
			}
			var m messages.UIMessage
			if err := json.Unmarshal(payload, &m); err != nil {
				return fmt.Errorf("decode stored ui row: %w", err)
			}
			if t := previewText(m); t != "" {
				items = append(items, PreviewItem{Role: role, Text: cutRunes(t, o.MaxChars)})
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
		items[i], items[j] = items[j], items[i]
	}
	items, _ = CapByJSONBytes(items, o.MaxBytes)
	return items, nil
}

// CapByJSONBytes drops items from the front until the JSON array of the
// rest fits in maxBytes, and returns them with that array's size.
func CapByJSONBytes[T any](items []T, maxBytes int) ([]T, int) {
	sizes := make([]int, len(items))
	total := 2 // []
	for i, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			b = nil
		}
		sizes[i] = len(b)
		total += len(b)
		if i > 0 {
			total++ // ,
		}
	}
	start := 0
	for total > maxBytes && start < len(items) {
		total -= sizes[start]
		if start < len(items)-1 {
			total-- // its comma
		}
		start++
	}
	return items[start:], total
}

// FirstUserMessage returns the first message the user wrote in a session
// (the task), in full, reading one row; "" when there is none.
func (s *Store) FirstUserMessage(ctx context.Context, sessionID string) (string, error) {
	var text string
	err := s.readTx(ctx, "first user message "+sessionID, func(tx *sql.Tx) error {
		pk, err := sessionPK(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		var payload []byte
		err = tx.QueryRowContext(ctx, `SELECT payload FROM ui_messages WHERE session_pk = ? AND role = ?
			ORDER BY seq LIMIT 1`, pk, roleUser).Scan(&payload)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		var m messages.UIMessage
		if err := json.Unmarshal(payload, &m); err != nil {
			return fmt.Errorf("decode stored ui row: %w", err)
		}
		text = m.Text
		return nil
	})
	return text, err
}

// LastMessagePreview returns the preview text of the last shown message of
// a session, cut to maxChars (default 240), reading only the last rows; ""
// when there is none.
func (s *Store) LastMessagePreview(ctx context.Context, sessionID string, maxChars int) (string, error) {
	if maxChars <= 0 {
		maxChars = 240
	}
	items, err := s.Preview(ctx, sessionID, PreviewOptions{Limit: 1, MaxChars: maxChars, MaxBytes: 1 << 30})
	if err != nil || len(items) == 0 {
		return "", err
	}
	return items[0].Text, nil
}
