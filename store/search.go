package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"unicode"
)

// SearchOptions narrow and shape Search. The zero value searches every
// live session and returns the 20 newest hits.
type SearchOptions struct {
	SessionID       string // "" = all sessions
	IncludeArchived bool
	// Workspace, when set (and SessionID is not), keeps the sessions of
	// that workspace.
	Workspace string
	// Mine, when SessionID is not set, keeps the store's user's own
	// sessions (see ListOptions.Mine); otherwise every session they may
	// see is searched.
	Mine  bool
	Limit int // default 20
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
	if s.pg {
		return s.pgSearch(ctx, query, o)
	}
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
			if o.Workspace != "" {
				q += " AND s.workspace = ?"
				args = append(args, o.Workspace)
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

// pgSearch is Search on PostgreSQL: the tsvector column with its GIN index,
// parsed with the ak_search configuration (lower case, diacritics removed,
// no stemming: as FTS5's unicode61 remove_diacritics). By default every word must appear (plainto_tsquery);
// Raw queries use websearch_to_tsquery's syntax ("phrase", OR, -word).
// Snippets are ts_headline fragments of SnippetTokens words, with "…"
// where the fragment cuts the text, as FTS5's snippet marks it.
func (s *Store) pgSearch(ctx context.Context, query string, o SearchOptions) ([]SearchHit, error) {
	if strings.TrimSpace(query) == "" {
		return nil, nil
	}
	sq := newPGSearch(query, o)
	var hits []SearchHit
	err := s.readTx(ctx, "search", func(tx *sql.Tx) error {
		var err error
		if o.SessionID != "" {
			hits, err = sq.inSession(ctx, tx)
		} else {
			hits, err = sq.everywhere(ctx, tx, s.admin)
		}
		return err
	})
	return hits, err
}

// pgSearchQueries are the statements of one pgSearch: q tests every
// message that may match (a session's, or everyone's), newest walks the
// newest messages only, and viaIndex asks ak_search for the matches.
type pgSearchQueries struct {
	query               string
	o                   SearchOptions
	opts                string // ts_headline's options
	q, newest, viaIndex string
	args                []any // ?1-?3, of q and newest
	ws                  []any // the workspace: ?4 in q, ?5 in newest
}

func newPGSearch(query string, o SearchOptions) pgSearchQueries {
	parse := "plainto_tsquery('ak_search', ?1)"
	if o.Raw {
		parse = "websearch_to_tsquery('ak_search', ?1)"
	}
	// The query is written out where it is used, not in a CTE, so that the
	// planner sees it.
	q := `SELECT h.id, h.ts, h.type, h.kind, h.role, h.text, ts_headline('ak_search', h.text, ` + parse + `, ?2)
		FROM (SELECT s.id, m.seq, m.ts, m.type, m.kind, m.role, m.text
			FROM ui_messages m JOIN sessions s ON s.pk = m.session_pk WHERE m.tsv @@ ` + parse
	// Marks that cannot occur in ts_headline's option syntax; replaced below.
	opts := fmt.Sprintf("StartSel=\x02, StopSel=\x03, MaxWords=%d, MinWords=1, ShortWord=0, MaxFragments=1",
		max(o.SnippetTokens, 2))
	sq := pgSearchQueries{query: query, o: o, opts: opts, args: []any{query, opts, o.Limit}}
	if o.SessionID == "" && !o.IncludeArchived {
		q += " AND s.archived_at IS NULL"
	}
	if o.SessionID == "" && o.Mine {
		q += " AND m.owner = current_user"
	}
	newest := q + " AND m.seq > (SELECT coalesce(max(seq), 0) FROM ui_messages) - ?4"
	switch {
	case o.SessionID != "":
		q += " AND m.session_pk = ?4"
	case o.Workspace != "":
		q += " AND s.workspace = ?4"
		newest += " AND s.workspace = ?5"
		sq.ws = []any{o.Workspace}
	}
	tail := " ORDER BY m.seq DESC LIMIT ?3) h ORDER BY h.seq DESC"
	sq.q, sq.newest = q+tail, newest+tail
	sq.viaIndex = `SELECT h.id, h.ts, h.type, h.kind, h.role, h.text, ts_headline('ak_search', h.text, ` + parse + `, ?2)
		FROM (SELECT s.id, m.seq, m.ts, m.type, m.kind, m.role, m.text
			FROM ui_messages m JOIN sessions s ON s.pk = m.session_pk
			WHERE m.seq IN (SELECT ak_search(` + parse + `, ?3, ?4 <> 0, ?5, ?6 <> 0))` + tail
	return sq
}

// inSession searches one session: its own rows, newest first, are few
// enough to test one by one.
func (sq pgSearchQueries) inSession(ctx context.Context, tx *sql.Tx) ([]SearchHit, error) {
	var pk int64
	err := tx.QueryRowContext(ctx, "SELECT pk FROM sessions WHERE id = ?", sq.o.SessionID).Scan(&pk)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// A plan for this query's words: a cached generic plan may walk
	// every message for a common one instead of the session's.
	if _, err := tx.ExecContext(ctx, "SET LOCAL plan_cache_mode = force_custom_plan"); err != nil {
		return nil, err
	}
	return pgHits(ctx, tx, sq.q, sq.o, append(sq.args, pk)...)
}

// everywhere searches everyone's messages: FTS5 walks its index newest
// first; GIN has no order. A word common enough to fill the page is found
// among the newest messages by walking them; any other is found through
// the index (the walk is then turned off: the planner, not knowing how
// rare a word is, would walk the whole table for one that is nowhere).
func (sq pgSearchQueries) everywhere(ctx context.Context, tx *sql.Tx, admin bool) ([]SearchHit, error) {
	o := sq.o
	hits, err := pgHits(ctx, tx, sq.newest, o, append(append(sq.args, pgSearchWindow), sq.ws...)...)
	if err != nil || len(hits) == o.Limit {
		return hits, err
	}
	if _, err := tx.ExecContext(ctx, "SET LOCAL enable_indexscan = off"); err != nil {
		return hits, err
	}
	if !admin {
		// Under row-level security the index is not used for @@ (see
		// ak_search in rls.go): the function finds the matches the
		// caller may see through it. (Booleans travel as 0 and 1.)
		return pgHits(ctx, tx, sq.viaIndex, o, sq.query, sq.opts, o.Limit, o.IncludeArchived, o.Workspace, o.Mine)
	}
	return pgHits(ctx, tx, sq.q, o, append(sq.args, sq.ws...)...)
}

// pgSearchWindow is how many of the newest messages a search walks before
// it asks the index.
const pgSearchWindow = 20000

func pgHits(ctx context.Context, tx *sql.Tx, q string, o SearchOptions, args ...any) ([]SearchHit, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var hits []SearchHit
	for rows.Next() {
		var h SearchHit
		var text, frag string
		if err := rows.Scan(&h.SessionID, &h.TS, &h.Type, &h.Kind, &h.Role, &text, &frag); err != nil {
			return nil, err
		}
		h.Snippet = headlineSnippet(text, frag, o.Before, o.After)
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// headlineSnippet turns a ts_headline fragment of text, marked with \x02
// and \x03, into a snippet marked with before and after. Where the fragment
// stops short of the start or the end of the text it gets "…", unless only
// punctuation was left out, which is put back (as FTS5's snippet does).
func headlineSnippet(text, frag, before, after string) string {
	plain := strings.TrimSpace(strings.NewReplacer("\x02", "", "\x03", "").Replace(frag))
	out := strings.TrimSpace(strings.NewReplacer("\x02", before, "\x03", after).Replace(frag))
	i := strings.Index(text, plain)
	if i < 0 {
		return out
	}
	if head := text[:i]; hasWord(head) {
		out = "…" + out
	} else {
		out = head + out
	}
	if tail := text[i+len(plain):]; hasWord(tail) {
		out += "…"
	} else {
		out += tail
	}
	return out
}

func hasWord(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}
