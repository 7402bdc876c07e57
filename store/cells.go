package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// CellChange is what one step (a notebook tool's call) did to one cell of
// a notebook that a frontend shows: the cell before and after, as JSON
// (the session's own encoding); Before is nil for an insert, After for a
// delete. A notebook that is only a file on disk is the files'
// (FileChange): its cells are not recorded here.
type CellChange struct {
	Anchor int64
	// Notebook names the notebook as its frontend does (the path relative
	// to the Jupyter server's root).
	Notebook string
	// Op is insert, edit, move or delete.
	Op            string
	CellID        string
	Before, After json.RawMessage
}

// AddCellChange records what one step did to a cell.
func (s *Store) AddCellChange(ctx context.Context, sessionID string, c CellChange) error {
	return s.writeTx(ctx, "add cell change "+sessionID, func(tx *sql.Tx) error {
		sr, err := writableSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO cell_changes (session_pk, anchor, notebook, op, cell_id, before, after) VALUES (?, ?, ?, ?, ?, ?, ?)",
			sr.pk, c.Anchor, c.Notebook, c.Op, c.CellID, nullJSON(c.Before), nullJSON(c.After))
		return err
	})
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// CellChanges returns the session's cell changes that are not rewound,
// with anchor >= from, in the order they happened.
func (s *Store) CellChanges(ctx context.Context, sessionID string, from int64) ([]CellChange, error) {
	var out []CellChange
	err := s.readTx(ctx, "cell changes "+sessionID, func(tx *sql.Tx) error {
		sr, err := lookupSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT anchor, notebook, op, cell_id, coalesce(before, ''), coalesce(after, '') FROM cell_changes
			WHERE session_pk = ? AND anchor >= ? AND rewound = 0 ORDER BY anchor, seq`, sr.pk, from)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c CellChange
			var before, after string
			if err := rows.Scan(&c.Anchor, &c.Notebook, &c.Op, &c.CellID, &before, &after); err != nil {
				return err
			}
			if before != "" {
				c.Before = json.RawMessage(before)
			}
			if after != "" {
				c.After = json.RawMessage(after)
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	return out, err
}

// rewindCells marks the cell changes at or after cut as rewound, inside a
// rewind's transaction.
func rewindCells(ctx context.Context, tx *sql.Tx, pk, cut int64) error {
	if _, err := tx.ExecContext(ctx, "UPDATE cell_changes SET rewound = 1 WHERE session_pk = ? AND anchor >= ?", pk, cut); err != nil {
		return fmt.Errorf("rewind cell changes: %w", err)
	}
	return nil
}

// forkCells copies the cell changes of session src before beforeTS to dst,
// inside a fork's transaction.
func forkCells(ctx context.Context, tx *sql.Tx, dst, src, beforeTS int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO cell_changes (session_pk, anchor, notebook, op, cell_id, before, after, rewound)
		SELECT CAST(? AS BIGINT), anchor, notebook, op, cell_id, before, after, rewound FROM cell_changes WHERE session_pk = ? AND anchor < ? ORDER BY seq`,
		dst, src, beforeTS)
	return err
}
