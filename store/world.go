package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/rewind"
)

// The world beside the conversation: what a rewind restores besides the
// histories. Anchors are stamps of the session's clock (the one that
// stamps its UI messages), so that "before message N" is anchor < N's ts.

// CodeRun is one piece of code run in a session's backing kernel.
type CodeRun struct {
	Anchor int64
	// Origin is who ran it: "agent" (execute_code), "cell" (a %%code
	// cell), "user" (a code-mode cell).
	Origin string
	Code   string
	// Status is the execute_reply's: ok, error, aborted; "" when unknown.
	Status string
	// Rewound marks code that a rewind took back: it is not replayed.
	Rewound bool
}

// FileChange is what one step (a tool call, the code it ran) did to one
// file of the workspace: its content before and after, as blob hashes; ""
// means the file did not exist.
type FileChange struct {
	Anchor        int64
	Path          string // workspace-relative, slash-separated
	Before, After string
}

// PutBlob stores data under its SHA-256 (hex), once: storing the same
// content again costs nothing. It returns the hash. Blobs are their
// writer's (Store.User): on PostgreSQL content is kept once per user, and
// no user reads another's.
func (s *Store) PutBlob(ctx context.Context, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	// Most content is stored already (a rescan of a touched file): a read
	// is far cheaper than a write of the same bytes.
	if ok, err := s.HasBlob(ctx, hash); err != nil || ok {
		return hash, err
	}
	err := s.writeTx(ctx, "put blob", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO blobs (hash, size, data) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
			hash, len(data), data)
		return err
	})
	return hash, err
}

// PutBlobs stores each content as PutBlob does, in one transaction, and
// returns their hashes in order.
func (s *Store) PutBlobs(ctx context.Context, data [][]byte) ([]string, error) {
	hashes := make([]string, len(data))
	for i, d := range data {
		sum := sha256.Sum256(d)
		hashes[i] = hex.EncodeToString(sum[:])
	}
	err := s.writeTx(ctx, "put blobs", func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, "INSERT INTO blobs (hash, size, data) VALUES (?, ?, ?) ON CONFLICT DO NOTHING")
		if err != nil {
			return err
		}
		defer st.Close()
		for i, d := range data {
			if _, err := st.ExecContext(ctx, hashes[i], len(d), d); err != nil {
				return err
			}
		}
		return nil
	})
	return hashes, err
}

// HasBlob reports whether the blob is stored (for the store's user: an
// administrator sees other users' blobs, which are not theirs to use).
func (s *Store) HasBlob(ctx context.Context, hash string) (bool, error) {
	var n int
	err := s.readTx(ctx, "has blob", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT count(*) FROM blobs WHERE hash = ?"+pgOwn, hash).Scan(&n)
	})
	return n > 0, err
}

// Blob returns the content stored under hash; ErrNotFound if there is none.
func (s *Store) Blob(ctx context.Context, hash string) ([]byte, error) {
	var data []byte
	err := s.readTx(ctx, "blob "+hash, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, "SELECT data FROM blobs WHERE hash = ?"+pgOwn, hash).Scan(&data)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("blob %s: %w", hash, ErrNotFound)
		}
		return err
	})
	return data, err
}

// AddCodeRun records code run in the session's backing kernel.
func (s *Store) AddCodeRun(ctx context.Context, sessionID string, r CodeRun) error {
	return s.writeTx(ctx, "add code run "+sessionID, func(tx *sql.Tx) error {
		sr, err := writableSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO code_runs (session_pk, anchor, origin, code, status, rewound) VALUES (?, ?, ?, ?, ?, ?)",
			sr.pk, r.Anchor, r.Origin, r.Code, r.Status, r.Rewound)
		return err
	})
}

// CodeRuns returns the session's code log in the order it ran, rewound
// code included (marked).
func (s *Store) CodeRuns(ctx context.Context, sessionID string) ([]CodeRun, error) {
	var out []CodeRun
	err := s.readTx(ctx, "code runs "+sessionID, func(tx *sql.Tx) error {
		sr, err := lookupSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, "SELECT anchor, origin, code, status, rewound FROM code_runs WHERE session_pk = ? ORDER BY anchor, seq", sr.pk)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r CodeRun
			if err := rows.Scan(&r.Anchor, &r.Origin, &r.Code, &r.Status, &r.Rewound); err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, err
}

// AddFileChanges records what one step did to files (their contents must
// be stored with PutBlob first).
func (s *Store) AddFileChanges(ctx context.Context, sessionID string, changes []FileChange) error {
	if len(changes) == 0 {
		return nil
	}
	return s.writeTx(ctx, "add file changes "+sessionID, func(tx *sql.Tx) error {
		sr, err := writableSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		st, err := tx.PrepareContext(ctx, "INSERT INTO file_changes (session_pk, anchor, path, before, after) VALUES (?, ?, ?, ?, ?)")
		if err != nil {
			return err
		}
		defer st.Close()
		for _, c := range changes {
			if _, err := st.ExecContext(ctx, sr.pk, c.Anchor, c.Path, nullHash(c.Before), nullHash(c.After)); err != nil {
				return err
			}
		}
		return nil
	})
}

func nullHash(h string) any {
	if h == "" {
		return nil
	}
	return h
}

// FileChanges returns the session's file changes that are not rewound,
// with anchor >= from, in the order they happened.
func (s *Store) FileChanges(ctx context.Context, sessionID string, from int64) ([]FileChange, error) {
	var out []FileChange
	err := s.readTx(ctx, "file changes "+sessionID, func(tx *sql.Tx) error {
		sr, err := lookupSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT anchor, path, coalesce(before, ''), coalesce(after, '') FROM file_changes
			WHERE session_pk = ? AND anchor >= ? AND rewound = 0 ORDER BY anchor, seq`, sr.pk, from)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c FileChange
			if err := rows.Scan(&c.Anchor, &c.Path, &c.Before, &c.After); err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	return out, err
}

// rewindWorld marks the code runs, file and cell changes at or after cut as
// rewound, inside a rewind's transaction.
func rewindWorld(ctx context.Context, tx *sql.Tx, pk, cut int64) error {
	if _, err := tx.ExecContext(ctx, "UPDATE code_runs SET rewound = 1 WHERE session_pk = ? AND anchor >= ?", pk, cut); err != nil {
		return fmt.Errorf("rewind code runs: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE file_changes SET rewound = 1 WHERE session_pk = ? AND anchor >= ?", pk, cut); err != nil {
		return fmt.Errorf("rewind file changes: %w", err)
	}
	return rewindCells(ctx, tx, pk, cut)
}

// SetReplayPending marks (or clears) that the session's kernel state must
// be rebuilt by replaying its code log the next time it runs code.
func (s *Store) SetReplayPending(ctx context.Context, sessionID string, pending bool) error {
	return s.writeTx(ctx, "replay pending "+sessionID, func(tx *sql.Tx) error {
		return expectOne(tx.ExecContext(ctx, "UPDATE sessions SET replay_pending = ? WHERE id = ?"+pgOwn, pending, sessionID))(ctx, tx, sessionID)
	})
}

// WholeHistory, as ForkSession's beforeTS, forks a session at its end.
const WholeHistory int64 = math.MaxInt64

// ForkSession makes a new session holding the session's history before
// the UI message stamped beforeTS (as a rewind to it would leave it; all of
// it for WholeHistory), its code log, file and cell changes before that
// point, linked to it as its parent. The original is not changed. All in
// one transaction. The fork is the store's user's: a session shared with
// them by another user is forked into one of their own, with the
// conversation only (the other's files, their contents, their notebooks'
// cells and their kernel's code are not theirs: a rewind of the fork must
// not put them back in the reader's).
func (s *Store) ForkSession(ctx context.Context, sessionID string, beforeTS int64) (Session, error) {
	op := "fork " + sessionID
	if err := s.flushSession(ctx, sessionID); err != nil {
		return Session{}, err
	}
	h, err := s.Load(ctx, sessionID)
	if err != nil {
		return Session{}, err
	}
	res := rewind.Result{UI: h.UI, API: h.API}
	if beforeTS != WholeHistory {
		if res, err = rewind.RewindToTimestamp(h.UI, h.API, beforeTS, rewind.Options{}); err != nil {
			return Session{}, s.wrap(op, err)
		}
	}
	parent, err := s.GetSession(ctx, sessionID)
	if err != nil {
		return Session{}, err
	}
	id := uuid.NewString()
	now := s.nowMS()
	err = s.writeTx(ctx, op, func(tx *sql.Tx) error {
		src, err := lookupSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions
			(id, created_at, updated_at, display_name, title, model, provider, mode, workspace, parent_id, fork_ts, owner, owner_name)
			VALUES (?, ?, ?, '', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, now, now, DeriveTitle(id, "", "", time.UnixMilli(now)), parent.Model, parent.Provider, parent.Mode,
			parent.Workspace, sessionID, beforeTS, s.user, s.ownerName); err != nil {
			return err
		}
		dst, err := lookupSession(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := insertUI(ctx, tx, dst, id, res.UI, now); err != nil {
			return err
		}
		if err := insertAPI(ctx, tx, dst, res.API, now); err != nil {
			return err
		}
		if s.pg && parent.Owner != s.user {
			return refreshDenorm(ctx, tx, dst.pk)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO code_runs (session_pk, anchor, origin, code, status, rewound)
			SELECT CAST(? AS BIGINT), anchor, origin, code, status, rewound FROM code_runs WHERE session_pk = ? AND anchor < ? ORDER BY seq`,
			dst.pk, src.pk, beforeTS); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO file_changes (session_pk, anchor, path, before, after, rewound)
			SELECT CAST(? AS BIGINT), anchor, path, before, after, rewound FROM file_changes WHERE session_pk = ? AND anchor < ? ORDER BY seq`,
			dst.pk, src.pk, beforeTS); err != nil {
			return err
		}
		if err := forkCells(ctx, tx, dst.pk, src.pk, beforeTS); err != nil {
			return err
		}
		return refreshDenorm(ctx, tx, dst.pk)
	})
	if err != nil {
		return Session{}, err
	}
	return s.GetSession(ctx, id)
}
