package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/messages"
)

// Session is one conversation: its metadata, running totals and the
// denormalised fields that let listings skip loading the histories.
type Session struct {
	ID          string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	DisplayName string // set by the user; empty when never named
	// Title is derived (DeriveTitle): the display name, else the first user
	// message cut to 60 characters at a word boundary, else id prefix + date.
	Title     string
	Model     string
	Provider  string
	Mode      string
	Workspace string
	Usage     Usage
	// ParentID is the session this one was forked from ("" for none), and
	// ForkTS the UI ts in the parent before which its history was taken.
	ParentID string
	ForkTS   int64
	// ReplayPending is set by a rewind done outside a kernel (agentkernel
	// sessions rewind): the next kernel that runs code for the session
	// first replays its code log.
	ReplayPending bool
	// MessageCount is the number of UI messages; APICount of API messages.
	MessageCount int
	APICount     int
	// FirstUserMessage is the first thing the user wrote (cut to 1,000
	// characters); LastMessage is a preview of the last shown message,
	// cut to ListOptions.PreviewChars in listings.
	FirstUserMessage string
	LastMessage      string
	LastRole         string
	// ArchivedAt is zero for a live session.
	ArchivedAt    time.Time
	ArchiveReason string
	// Owner is who the session belongs to: the PostgreSQL role that
	// created it, or the OS user on SQLite (see Store.User). OwnerName is
	// the name they went by ($KERNEL_USERNAME, $JUPYTERHUB_USER or the OS
	// user; "" for sessions from before owners), for people to read.
	Owner     string
	OwnerName string
}

// Whose returns who the session belongs to, for people: the owner, with
// the name they went by when it says more, in one Printable line (a name
// is the other user's to choose: it must not forge a row of a listing).
func (s Session) Whose() string {
	owner, name := messages.Printable(s.Owner, 0), messages.Printable(s.OwnerName, 0)
	if name == "" || name == owner {
		return owner
	}
	return owner + " (" + name + ")"
}

// Archived reports whether the session is archived.
func (s Session) Archived() bool { return !s.ArchivedAt.IsZero() }

// Usage is a session's token and cost totals.
type Usage struct {
	TokensIn    int64
	TokensOut   int64
	CacheWrites int64
	CacheReads  int64
	Cost        float64 // USD
}

// NewSession describes a session to create. ID defaults to a fresh UUID.
type NewSession struct {
	ID          string
	DisplayName string
	Model       string
	Provider    string
	Mode        string
	Workspace   string
}

// SessionUpdate changes the fields that are non-nil.
type SessionUpdate struct {
	DisplayName *string
	Model       *string
	Provider    *string
	Mode        *string
	Workspace   *string
}

const (
	titleMax      = 60   // runes in a title derived from the first user message
	firstUserKeep = 1000 // runes of the first user message kept on the session row
	lastKeep      = 1000 // runes of the last message kept on the session row
)

func (s *Store) nowMS() int64 { return s.opts.Now().UnixMilli() }

// CreateSession creates a session, owned by the store's user (User). A
// duplicate id gives ErrExists.
func (s *Store) CreateSession(ctx context.Context, ns NewSession) (Session, error) {
	if ns.ID == "" {
		ns.ID = uuid.NewString()
	}
	if err := checkID(ns.ID); err != nil {
		return Session{}, s.wrap("create session", err)
	}
	ns.DisplayName, ns.Model, ns.Provider = noUS(ns.DisplayName), noUS(ns.Model), noUS(ns.Provider)
	ns.Mode, ns.Workspace = noUS(ns.Mode), noUS(ns.Workspace)
	now := s.nowMS()
	err := s.writeTx(ctx, "create session "+ns.ID, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO sessions
			(id, created_at, updated_at, display_name, title, model, provider, mode, workspace, owner, owner_name)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			ns.ID, now, now, ns.DisplayName, DeriveTitle(ns.ID, ns.DisplayName, "", time.UnixMilli(now)),
			ns.Model, ns.Provider, ns.Mode, ns.Workspace, s.user, s.ownerName)
		if isConstraint(err) {
			return fmt.Errorf("session %s: %w", ns.ID, ErrExists)
		}
		return err
	})
	if err != nil {
		return Session{}, err
	}
	return s.GetSession(ctx, ns.ID)
}

const sessionCols = `id, created_at, updated_at, display_name, title, model, provider, mode, workspace,
	tokens_in, tokens_out, cache_writes, cache_reads, cost, message_count, api_count,
	first_user_message, last_message, last_role, archived_at, archive_reason, parent_id, fork_ts, replay_pending,
	owner, owner_name`

// listCols is sessionCols for listings, packed into one text column:
// every column costs the driver a few locked calls per row, which dominates
// a 10,000-session listing. Fields are separated by US (0x1f), which noUS
// keeps out of every packed field on every write; the last message, packed
// last, may contain anything and is cut in SQL. FirstUserMessage is not
// read: Title holds what a listing shows of it.
const listCols = `printf('%s' || char(31) || '%d' || char(31) || '%d' || char(31) || '%d' || char(31) ||
		'%d %d %d %d %d %d %!.17g' || char(31), id, created_at, updated_at, coalesce(archived_at, -1),
		tokens_in, tokens_out, cache_writes, cache_reads, message_count, api_count, cost) ||
	display_name || char(31) || title || char(31) || model || char(31) || provider || char(31) ||
	mode || char(31) || workspace || char(31) || last_role || char(31) || archive_reason || char(31) ||
	parent_id || char(31) || owner || char(31) || owner_name || char(31) || substr(last_message, 1, ?)`

// pgListCols is listCols in PostgreSQL: the same fields, the same packing.
const pgListCols = `concat_ws(chr(31), id, created_at, updated_at, coalesce(archived_at, -1),
		concat_ws(' ', tokens_in, tokens_out, cache_writes, cache_reads, message_count, api_count, cost),
		display_name, title, model, provider, mode, workspace, last_role, archive_reason, parent_id,
		owner, owner_name, substr(last_message, 1, ?))`

// checkID accepts session ids of 1 to 128 printable characters.
func checkID(id string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("session id must have 1 to 128 bytes, got %d", len(id))
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return fmt.Errorf("session id %q: control or invalid character", id)
		}
	}
	return nil
}

// noUS replaces the unit separator used by listCols.
func noUS(s string) string {
	if strings.IndexByte(s, 0x1f) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x1f", " ")
}

func scanSession(sc interface{ Scan(...any) error }) (Session, error) {
	var (
		ss               Session
		created, updated int64
		archived         sql.NullInt64
	)
	err := sc.Scan(&ss.ID, &created, &updated, &ss.DisplayName, &ss.Title, &ss.Model, &ss.Provider, &ss.Mode,
		&ss.Workspace, &ss.Usage.TokensIn, &ss.Usage.TokensOut, &ss.Usage.CacheWrites,
		&ss.Usage.CacheReads, &ss.Usage.Cost, &ss.MessageCount, &ss.APICount,
		&ss.FirstUserMessage, &ss.LastMessage, &ss.LastRole, &archived, &ss.ArchiveReason,
		&ss.ParentID, &ss.ForkTS, &ss.ReplayPending, &ss.Owner, &ss.OwnerName)
	if err != nil {
		return ss, err
	}
	ss.CreatedAt = time.UnixMilli(created)
	ss.UpdatedAt = time.UnixMilli(updated)
	if archived.Valid {
		ss.ArchivedAt = time.UnixMilli(archived.Int64)
	}
	printable(&ss)
	return ss, nil
}

// printable makes the fields of ss that are only ever shown to people
// (the title, the owner's name) Printable, whoever wrote them: one line,
// no escape codes. Fields that name things (owner, workspace) keep their
// value, and are made Printable where they are printed.
func printable(ss *Session) {
	ss.Title = messages.Printable(ss.Title, 0)
	ss.OwnerName = messages.Printable(ss.OwnerName, 0)
}

// listFields is the number of fields listCols packs.
const listFields = 17

func scanListedSession(sc interface{ Scan(...any) error }) (Session, error) {
	var ss Session
	var packed string
	if err := sc.Scan(&packed); err != nil {
		return ss, err
	}
	t := strings.SplitN(packed, "\x1f", listFields)
	if len(t) != listFields {
		return ss, fmt.Errorf("bad packed listing row %.60q", packed)
	}
	ss.ID = t[0]
	bad := fmt.Errorf("session %s: bad packed listing row", ss.ID)
	var nums [3]int64
	for i := range nums {
		var err error
		if nums[i], err = strconv.ParseInt(t[1+i], 10, 64); err != nil {
			return ss, bad
		}
	}
	ss.CreatedAt = time.UnixMilli(nums[0])
	ss.UpdatedAt = time.UnixMilli(nums[1])
	if nums[2] >= 0 {
		ss.ArchivedAt = time.UnixMilli(nums[2])
	}
	f := strings.Fields(t[4])
	if len(f) != 7 {
		return ss, bad
	}
	var err error
	for i, p := range []*int64{&ss.Usage.TokensIn, &ss.Usage.TokensOut, &ss.Usage.CacheWrites, &ss.Usage.CacheReads} {
		if *p, err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return ss, bad
		}
	}
	if ss.MessageCount, err = strconv.Atoi(f[4]); err != nil {
		return ss, bad
	}
	if ss.APICount, err = strconv.Atoi(f[5]); err != nil {
		return ss, bad
	}
	if ss.Usage.Cost, err = strconv.ParseFloat(f[6], 64); err != nil {
		return ss, bad
	}
	ss.DisplayName, ss.Title, ss.Model, ss.Provider, ss.Mode, ss.Workspace, ss.LastRole, ss.ArchiveReason, ss.ParentID =
		t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12], t[13]
	ss.Owner, ss.OwnerName, ss.LastMessage = t[14], t[15], t[16]
	printable(&ss)
	return ss, nil
}

// refreshTitle recomputes the stored derived title of a session.
func refreshTitle(ctx context.Context, tx *sql.Tx, pk int64) error {
	var id, display, first string
	var created int64
	if err := tx.QueryRowContext(ctx, "SELECT id, display_name, first_user_message, created_at FROM sessions WHERE pk = ?", pk).
		Scan(&id, &display, &first, &created); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, "UPDATE sessions SET title = ? WHERE pk = ?",
		DeriveTitle(id, display, first, time.UnixMilli(created)), pk)
	return err
}

// GetSession returns one session, archived or not.
func (s *Store) GetSession(ctx context.Context, id string) (Session, error) {
	var ss Session
	err := s.readTx(ctx, "get session "+id, func(tx *sql.Tx) error {
		var err error
		ss, err = scanSession(tx.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("session %s: %w", id, ErrNotFound)
		}
		return err
	})
	return ss, err
}

// UpdateSession sets the non-nil fields of u and bumps updated_at.
func (s *Store) UpdateSession(ctx context.Context, id string, u SessionUpdate) error {
	return s.writeTx(ctx, "update session "+id, func(tx *sql.Tx) error {
		set := []string{"updated_at = ?"}
		args := []any{s.nowMS()}
		for _, f := range []struct {
			col string
			v   *string
		}{{"display_name", u.DisplayName}, {"model", u.Model}, {"provider", u.Provider}, {"mode", u.Mode}, {"workspace", u.Workspace}} {
			if f.v != nil {
				set = append(set, f.col+" = ?")
				args = append(args, noUS(*f.v))
			}
		}
		args = append(args, id)
		if err := expectOne(tx.ExecContext(ctx, "UPDATE sessions SET "+strings.Join(set, ", ")+" WHERE id = ?"+pgOwn, args...))(ctx, tx, id); err != nil {
			return err
		}
		if u.DisplayName == nil {
			return nil
		}
		pk, err := sessionPK(ctx, tx, id)
		if err != nil {
			return err
		}
		return refreshTitle(ctx, tx, pk)
	})
}

// AddUsage adds u to the session's token and cost totals.
func (s *Store) AddUsage(ctx context.Context, id string, u Usage) error {
	return s.writeTx(ctx, "add usage "+id, func(tx *sql.Tx) error {
		return expectOne(tx.ExecContext(ctx, `UPDATE sessions SET tokens_in = tokens_in + ?,
			tokens_out = tokens_out + ?, cache_writes = cache_writes + ?, cache_reads = cache_reads + ?,
			cost = cost + ?, updated_at = ? WHERE id = ?`+pgOwn,
			u.TokensIn, u.TokensOut, u.CacheWrites, u.CacheReads, u.Cost, s.nowMS(), id))(ctx, tx, id)
	})
}

// pgOwn ends the WHERE of a write to a session's own fields: on
// PostgreSQL only its owner writes them, an administrator too being
// ErrReadOnly (Archive, Restore and Purge are theirs as well; the policies
// decide). SQLite's file is one user's.
const pgOwn = " /*pg AND owner = current_user*/"

// expectOne turns "no row changed" into ErrNotFound for session id, or
// ErrReadOnly when the caller may read it but not write it.
func expectOne(res sql.Result, err error) func(ctx context.Context, tx *sql.Tx, id string) error {
	return func(ctx context.Context, tx *sql.Tx, id string) error {
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return missingSession(ctx, tx, id)
		}
		return nil
	}
}

// Archive is delete: the session leaves listings but stays restorable,
// with the reason and time recorded. Archiving twice keeps the first time.
// Archive, Restore and Purge are the owner's, and an administrator's.
func (s *Store) Archive(ctx context.Context, id, reason string) error {
	if reason == "" {
		reason = "deleted"
	}
	reason = noUS(reason)
	return s.writeTx(ctx, "archive session "+id, func(tx *sql.Tx) error {
		return expectOne(tx.ExecContext(ctx, `UPDATE sessions SET archived_at = coalesce(archived_at, ?),
			archive_reason = ? WHERE id = ?`, s.nowMS(), reason, id))(ctx, tx, id)
	})
}

// Restore undoes Archive.
func (s *Store) Restore(ctx context.Context, id string) error {
	return s.writeTx(ctx, "restore session "+id, func(tx *sql.Tx) error {
		return expectOne(tx.ExecContext(ctx, `UPDATE sessions SET archived_at = NULL, archive_reason = ''
			WHERE id = ?`, id))(ctx, tx, id)
	})
}

// Purge deletes a session and both its histories for good.
func (s *Store) Purge(ctx context.Context, id string) error {
	s.strm.forget(id)
	return s.writeTx(ctx, "purge session "+id, func(tx *sql.Tx) error {
		return expectOne(tx.ExecContext(ctx, "DELETE FROM sessions WHERE id = ?", id))(ctx, tx, id)
	})
}

// ArchiveFilter selects sessions by archive state.
type ArchiveFilter int

const (
	LiveOnly     ArchiveFilter = iota // the default: sessions not archived
	ArchivedOnly                      // only archived sessions
	AllSessions                       // both
)

// ListOptions select and shape ListSessions' answer. The zero value lists
// live sessions, newest first, 50 at most.
type ListOptions struct {
	// Search, when set, keeps sessions whose title, first user message or
	// id contains it (case-insensitive for ASCII).
	Search string
	// Limit caps the answer (default 50; negative means no limit).
	Limit  int
	Offset int
	// Archived selects by archive state (default LiveOnly).
	Archived ArchiveFilter
	// Workspace, when set, keeps the sessions of that workspace (the
	// directory recorded when each was created); "" lists every one.
	Workspace string
	// PreviewChars cuts each LastMessage (default 120 characters).
	PreviewChars int
	// Mine keeps the store's user's own sessions (on PostgreSQL; a SQLite
	// file holds one user's); otherwise a listing holds every session the
	// user may see: theirs and those shared with them (an
	// administrator's, every one).
	Mine bool
}

// ListSessions lists sessions, most recently updated first, with derived
// titles and last-message previews, without loading any history.
func (s *Store) ListSessions(ctx context.Context, o ListOptions) ([]Session, error) {
	if o.Limit == 0 {
		o.Limit = 50
	}
	if o.PreviewChars <= 0 {
		o.PreviewChars = 120
	}
	l := s.newListing(o)
	var out []Session
	list := func(tx querier) error {
		var err error
		out, err = l.read(ctx, tx)
		return err
	}
	var err error
	if l.sized {
		err = s.readTx(ctx, "list sessions", func(tx *sql.Tx) error { return list(tx) })
	} else {
		err = s.readOne(ctx, "list sessions", list)
	}
	return out, err
}

// listing is the statement of one ListSessions, and of its count when the
// answer is sized first.
type listing struct {
	o         ListOptions
	where     []string // the conditions, ANDed
	whereArgs []any
	query     string
	args      []any
	// sized: a long listing is sized first: growing a slice of sessions
	// one append at a time cost a 10,000-session listing a third of its
	// time. Not a search: counting would run it twice.
	sized bool
}

func (s *Store) newListing(o ListOptions) listing {
	l := listing{o: o}
	switch o.Archived {
	case LiveOnly:
		l.where = append(l.where, "archived_at IS NULL")
	case ArchivedOnly:
		l.where = append(l.where, "archived_at IS NOT NULL")
	}
	if o.Workspace != "" {
		l.where = append(l.where, "workspace = ?")
		l.whereArgs = append(l.whereArgs, o.Workspace)
	}
	if o.Mine && s.pg {
		l.where = append(l.where, "owner = current_user")
	}
	if q := strings.TrimSpace(o.Search); q != "" {
		pat := "%" + likeEscape(q) + "%"
		// lower() on both sides: LIKE ignores ASCII case in SQLite, and
		// not at all in PostgreSQL.
		l.where = append(l.where, `(lower(title) LIKE lower(?) ESCAPE '\' OR lower(first_user_message) LIKE lower(?) ESCAPE '\'
			OR lower(id) LIKE lower(?) ESCAPE '\')`)
		l.whereArgs = append(l.whereArgs, pat, pat, pat)
	}
	// Only what a listing shows is read: the counters packed, the long
	// texts cut in SQL.
	cols := listCols
	if s.pg {
		cols = pgListCols
	}
	l.query = "SELECT " + cols + " FROM sessions"
	l.args = append([]any{o.PreviewChars + 1}, l.whereArgs...)
	if len(l.where) > 0 {
		l.query += " WHERE " + strings.Join(l.where, " AND ")
	}
	l.query += " ORDER BY updated_at DESC, pk DESC LIMIT ? OFFSET ?"
	if l.o.Limit < 0 {
		l.o.Limit = math.MaxInt64
	}
	l.args = append(l.args, l.o.Limit, max(o.Offset, 0))
	l.sized = l.o.Limit > 256 && strings.TrimSpace(o.Search) == ""
	return l
}

// read runs the listing (and its count, when sized) on tx.
func (l listing) read(ctx context.Context, tx querier) ([]Session, error) {
	var out []Session
	if l.sized {
		count := "SELECT count(*) FROM sessions"
		if len(l.where) > 0 {
			count += " WHERE " + strings.Join(l.where, " AND ")
		}
		var n int
		if err := tx.QueryRowContext(ctx, count, l.whereArgs...).Scan(&n); err != nil {
			return out, err
		}
		out = make([]Session, 0, max(min(int64(n-max(l.o.Offset, 0)), int64(l.o.Limit)), 0))
	}
	rows, err := tx.QueryContext(ctx, l.query, l.args...)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		ss, err := scanListedSession(rows)
		if err != nil {
			return out, err
		}
		ss.LastMessage = cutRunes(ss.LastMessage, l.o.PreviewChars)
		out = append(out, ss)
	}
	return out, rows.Err()
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// DeriveTitle is the session title rule: displayName when set; else the
// first user message, whitespace collapsed, cut to 60 characters at a word
// boundary with "…" (TruncateTitle); else the first 8 characters of the id
// and the creation date, "1b9d6bcd (2026-11-03)".
func DeriveTitle(id, displayName, firstUser string, created time.Time) string {
	if t := messages.Printable(displayName, 0); t != "" {
		return noUS(t)
	}
	if t := messages.Printable(firstUser, 0); t != "" {
		return noUS(TruncateTitle(t, titleMax))
	}
	prefix := noUS(id)
	if utf8.RuneCountInString(prefix) > 8 {
		prefix = string([]rune(prefix)[:8])
	}
	if created.IsZero() {
		return prefix
	}
	return prefix + " (" + created.UTC().Format("2006-01-02") + ")"
}

// TruncateTitle cuts text to at most maxLen characters: text that fits is
// returned as is; otherwise the first maxLen-1 characters are kept, cut back
// to the last space when that space lies past 60% of maxLen, and "…" is
// appended.
func TruncateTitle(text string, maxLen int) string {
	r := []rune(text)
	if len(r) <= maxLen {
		return text
	}
	cut := r[:maxLen-1]
	last := -1
	for i := len(cut) - 1; i >= 0; i-- {
		if cut[i] == ' ' {
			last = i
			break
		}
	}
	if float64(last) > float64(maxLen)*0.6 {
		return string(cut[:last]) + "…"
	}
	return string(cut) + "…"
}

// cutRunes cuts s to at most n characters, the last being "…" when cut.
func cutRunes(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	// Find the byte offset of rune n-1 and check that more than n runes exist.
	count, cut := 0, 0
	for i := range s {
		if count == n-1 {
			cut = i
		}
		if count == n {
			return s[:cut] + "…"
		}
		count++
	}
	return s
}
