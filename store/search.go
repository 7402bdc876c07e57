package store

import (
	"context"
	"database/sql"
	"strings"
)

// SearchOptions narrow and shape Search. The zero value searches every
// live session and returns the 20 newest hits.
type SearchOptions struct {
	SessionID       string // "" = all sessions
	IncludeArchived bool
	Limit           int // default 20
	// Raw passes the query to FTS5 as is (its own syntax: OR, NEAR, "phrase",
	// prefix*). By default every word must appear, as a whole token.
	Raw bool
	// Before and After wrap each matched token in snippets (default "**").
	Before, After string
	// SnippetTokens is the snippet length in tokens (default 16, max 64).
	SnippetTokens int
}

// SearchHit is one UI message that matched.
type SearchHit struct {
	SessionID string
	TS        int64
	Type      string // ask | say
	Kind      string
	Role      string
	Snippet   string // the matching part of the text, matches highlighted
}

// smallSession is the default session size below which a per-session
// search probes the index row by row instead of walking the whole match
// list (Store.smallSession; tests lower it).
const smallSession = 4000

// Search runs a full-text query over UI message text, newest match first.
func (s *Store) Search(ctx context.Context, query string, o SearchOptions) ([]SearchHit, error) {
	if o.Limit <= 0 {
		o.Limit = 20
	}
	if o.Before == "" && o.After == "" {
		o.Before, o.After = "**", "**"
	}
	if o.SnippetTokens <= 0 {
		o.SnippetTokens = 16
	}
	o.SnippetTokens = min(o.SnippetTokens, 64)
	match := query
	if !o.Raw {
		match = ftsQuote(query)
	}
	if match == "" {
		return nil, nil
	}
	var hits []SearchHit
	err := s.readTx(ctx, "search", func(tx *sql.Tx) error {
		var q string
		args := []any{o.Before, o.After, o.SnippetTokens, match}
		if o.SessionID == "" {
			q = `SELECT s.id, m.ts, m.type, m.kind, m.role, snippet(ui_fts, 0, ?, ?, '…', ?)
				FROM ui_fts JOIN ui_messages m ON m.seq = ui_fts.rowid JOIN sessions s ON s.pk = m.session_pk
				WHERE ui_fts MATCH ?`
			if !o.IncludeArchived {
				q += " AND s.archived_at IS NULL"
			}
			q += " ORDER BY ui_fts.rowid DESC LIMIT ?"
			args = append(args, o.Limit)
		} else {
			var pk int64
			var n int
			err := tx.QueryRowContext(ctx, "SELECT pk, message_count FROM sessions WHERE id = ?", o.SessionID).Scan(&pk, &n)
			if err == sql.ErrNoRows {
				return nil
			}
			if err != nil {
				return err
			}
			if n <= s.smallSession {
				// Probe the index once per message of the session.
				q = `SELECT ?, m.ts, m.type, m.kind, m.role, snippet(ui_fts, 0, ?, ?, '…', ?)
					FROM ui_messages m CROSS JOIN ui_fts ON ui_fts.rowid = m.seq
					WHERE ui_fts MATCH ? AND m.session_pk = ? ORDER BY m.seq DESC LIMIT ?`
			} else {
				// Walk the match list newest first, keeping this session's rows.
				q = `SELECT ?, m.ts, m.type, m.kind, m.role, snippet(ui_fts, 0, ?, ?, '…', ?)
					FROM ui_fts JOIN ui_messages m ON m.seq = ui_fts.rowid
					WHERE ui_fts MATCH ? AND m.session_pk = ? ORDER BY ui_fts.rowid DESC LIMIT ?`
			}
			args = append([]any{o.SessionID}, append(args, pk, o.Limit)...)
		}
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var h SearchHit
			if err := rows.Scan(&h.SessionID, &h.TS, &h.Type, &h.Kind, &h.Role, &h.Snippet); err != nil {
				return err
			}
			hits = append(hits, h)
		}
		return rows.Err()
	})
	return hits, err
}

// ftsQuote turns free text into an FTS5 query in which every word must
// appear: each word becomes a quoted string, so FTS5 operators and
// punctuation in user input are plain text.
func ftsQuote(q string) string {
	words := strings.Fields(q)
	for i, w := range words {
		words[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
	}
	return strings.Join(words, " ")
}
