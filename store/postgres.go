package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// EnvStore names the environment variable that selects the session store:
// a postgres:// (or postgresql://) URL for PostgreSQL, else the SQLite file
// in the data directory.
const EnvStore = "AGENTKERNEL_STORE"

// IsPostgresURL reports whether u selects the PostgreSQL store.
func IsPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// RedactURL returns u without its password and query (which may hold one),
// for messages and logs.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	p.RawQuery, p.Fragment = "", ""
	if p.User != nil {
		p.User = url.User(p.User.Username())
	}
	return p.String()
}

// openPostgres connects s to the PostgreSQL database at s.opts.URL and
// checks that its schema is this build's and that the role it connected as
// is held to its own rows (pgCheck): a store that would see every user's
// sessions is refused. It never creates or migrates the schema: an
// administrator does, with Init. The same pool serves reads and writes:
// PostgreSQL runs writers concurrently, and a session's rows are
// serialised by a lock on its sessions row (see lockSession).
func (s *Store) openPostgres(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.BusyTimeout+time.Second)
	defer cancel()
	db, pool, err := pgConnect(ctx, s.opts)
	if err != nil {
		return s.wrap("open", err)
	}
	if err := s.pgCheck(ctx, db); err != nil {
		db.Close()
		pool.Close()
		return s.wrap("open", err)
	}
	s.w, s.r, s.pool = db, db, pool
	return nil
}

// pgConnect opens a pool on o.URL (o with its defaults) and a database/sql
// handle over it, and checks that the server answers.
func pgConnect(ctx context.Context, o Options) (*sql.DB, *pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(o.URL)
	if err != nil {
		// pgx's parse errors can quote the URL, password included.
		return nil, nil, errors.New("bad PostgreSQL URL (want postgres://user:password@host:port/database?options)")
	}
	cfg.MaxConns = int32(max(o.Readers+4, 8))
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = o.BusyTimeout
	}
	if cfg.ConnConfig.RuntimeParams["synchronous_commit"] == "" {
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = o.Sync.pgSynchronousCommit()
	}
	// No statement of ours waits without bound on a lock another user
	// holds (a user may LOCK a table they may UPDATE): after BusyTimeout
	// it fails with "the store is locked by another user" (pgLocked).
	if cfg.ConnConfig.RuntimeParams["lock_timeout"] == "" {
		cfg.ConnConfig.RuntimeParams["lock_timeout"] = strconv.FormatInt(o.BusyTimeout.Milliseconds(), 10)
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "agentkernel"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("cannot reach the database: %w", err)
	}
	db := sql.OpenDB(pgConnector{stdlib.GetPoolConnector(pool)})
	db.SetMaxOpenConns(int(cfg.MaxConns))
	db.SetMaxIdleConns(int(cfg.MaxConns))
	return db, pool, nil
}

// pgRetryable reports a failure after which the same transaction may be
// run again: the connection broke (the server restarted, an administrator
// ended it), or PostgreSQL aborted it to resolve a conflict.
func pgRetryable(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "40001", pe.Code == "40P01": // serialization failure, deadlock
			return true
		case strings.HasPrefix(pe.Code, "08"): // connection exception
			return true
		case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // shutdown, crash, starting
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return pgconn.SafeToRetry(err) || errors.Is(err, driver.ErrBadConn) || errors.As(err, &ce) ||
		errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, pgconn.ErrConnClosed)
}

// pgRetryBudget is how long a write, or a read's BEGIN, keeps retrying a broken connection: long
// enough for a database server restart.
const pgRetryBudget = 30 * time.Second

// pgIs maps PostgreSQL error codes onto the package's sentinels.
func pgIs(err error, target error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch {
	case pe.Code == "XX001" || pe.Code == "XX002":
		return target == ErrCorrupt
	case pe.Code == "55P03" || pe.Code == "57014": // lock not available, statement timeout
		return target == ErrLocked
	case pe.Code == "53100":
		return target == ErrFull
	}
	return false
}

// pgLocked is a statement that gave up on a lock (lock_timeout), said as
// what it is on a shared store: another user (or a kernel of the same
// one) holds a lock on a table or row. It matches ErrLocked.
type pgLocked struct{ err error }

func (e pgLocked) Error() string {
	return fmt.Sprintf("the store is locked by another user (a lock held longer than the store's busy timeout; "+
		"try again, and if it lasts, an administrator finds its holder in pg_locks and pg_stat_activity): %v", e.err)
}

func (e pgLocked) Unwrap() error { return e.err }

func pgConstraint(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// pgMigrations[i] moves the PostgreSQL schema from version i to i+1. The
// schema is SQLite's (see migrations) with PostgreSQL types, and full-text
// search by a tsvector column with a GIN index instead of FTS5. Append
// only: never edit a migration that has shipped.
var pgMigrations = []string{
	// 1: SQLite schema 2. Search uses the text search configuration
	// ak_search: 'simple' (lower case, no stemming, as FTS5's unicode61)
	// with diacritics removed by the unaccent extension when the database
	// allows it to be installed (it is trusted since PostgreSQL 13).
	`
DO $$
BEGIN
	BEGIN
		CREATE EXTENSION IF NOT EXISTS unaccent SCHEMA public;
	EXCEPTION WHEN OTHERS THEN
		RAISE NOTICE 'agentkernel: no unaccent extension (%): search will not fold diacritics', SQLERRM;
	END;
END $$;
CREATE TEXT SEARCH CONFIGURATION ak_search (COPY = pg_catalog.simple);
DO $$
DECLARE dict text;
BEGIN
	SELECT quote_ident(n.nspname) || '.unaccent' INTO dict
		FROM pg_ts_dict d JOIN pg_namespace n ON n.oid = d.dictnamespace WHERE d.dictname = 'unaccent' LIMIT 1;
	IF dict IS NOT NULL THEN
		EXECUTE 'ALTER TEXT SEARCH CONFIGURATION ak_search ALTER MAPPING FOR hword, hword_part, word WITH '
			|| dict || ', simple';
	END IF;
END $$;

CREATE TABLE sessions (
	pk                 BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	id                 TEXT    NOT NULL UNIQUE,
	created_at         BIGINT  NOT NULL,
	updated_at         BIGINT  NOT NULL,
	display_name       TEXT    NOT NULL DEFAULT '',
	title              TEXT    NOT NULL DEFAULT '',
	model              TEXT    NOT NULL DEFAULT '',
	provider           TEXT    NOT NULL DEFAULT '',
	mode               TEXT    NOT NULL DEFAULT '',
	workspace          TEXT    NOT NULL DEFAULT '',
	tokens_in          BIGINT  NOT NULL DEFAULT 0,
	tokens_out         BIGINT  NOT NULL DEFAULT 0,
	cache_writes       BIGINT  NOT NULL DEFAULT 0,
	cache_reads        BIGINT  NOT NULL DEFAULT 0,
	cost               DOUBLE PRECISION NOT NULL DEFAULT 0,
	message_count      BIGINT  NOT NULL DEFAULT 0,
	api_count          BIGINT  NOT NULL DEFAULT 0,
	first_user_message TEXT    NOT NULL DEFAULT '',
	last_message       TEXT    NOT NULL DEFAULT '',
	last_role          TEXT    NOT NULL DEFAULT '',
	archived_at        BIGINT,
	archive_reason     TEXT    NOT NULL DEFAULT '',
	parent_id          TEXT    NOT NULL DEFAULT '',
	fork_ts            BIGINT  NOT NULL DEFAULT 0,
	replay_pending     BIGINT  NOT NULL DEFAULT 0
);
CREATE INDEX sessions_updated ON sessions(updated_at DESC, pk DESC);

CREATE TABLE ui_messages (
	seq        BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	session_pk BIGINT  NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
	ts         BIGINT  NOT NULL,
	type       TEXT    NOT NULL,
	kind       TEXT    NOT NULL,
	role       TEXT    NOT NULL,
	text       TEXT    NOT NULL,
	partial    BIGINT  NOT NULL,
	payload    TEXT    NOT NULL,
	tsv        tsvector GENERATED ALWAYS AS (to_tsvector('ak_search', text)) STORED
);
CREATE UNIQUE INDEX ui_session_ts ON ui_messages(session_pk, ts);
CREATE INDEX ui_session ON ui_messages(session_pk, seq);
CREATE INDEX ui_fts ON ui_messages USING GIN (tsv);

CREATE TABLE api_messages (
	seq        BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	session_pk BIGINT  NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
	ts         BIGINT  NOT NULL,
	role       TEXT    NOT NULL,
	kind       TEXT    NOT NULL,
	text       TEXT    NOT NULL,
	payload    TEXT    NOT NULL
);
CREATE INDEX api_session_ts ON api_messages(session_pk, ts);
CREATE INDEX api_session ON api_messages(session_pk, seq);

CREATE TABLE blobs (
	hash TEXT   PRIMARY KEY,
	size BIGINT NOT NULL,
	data BYTEA  NOT NULL
);

CREATE TABLE code_runs (
	seq        BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	session_pk BIGINT NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
	anchor     BIGINT NOT NULL,
	origin     TEXT   NOT NULL,
	code       TEXT   NOT NULL,
	status     TEXT   NOT NULL,
	rewound    BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX code_runs_session ON code_runs(session_pk, anchor);

CREATE TABLE file_changes (
	seq        BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	session_pk BIGINT NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
	anchor     BIGINT NOT NULL,
	path       TEXT   NOT NULL,
	before     TEXT,
	after      TEXT,
	rewound    BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX file_changes_session ON file_changes(session_pk, anchor);
`,
	// 2: SQLite schema 3, the workspace trackers' index.
	`
CREATE TABLE file_index (
	workspace TEXT   NOT NULL,
	path      TEXT   NOT NULL,
	size      BIGINT NOT NULL,
	mtime     BIGINT NOT NULL,
	ctime     BIGINT NOT NULL,
	inode     BIGINT NOT NULL,
	hash      TEXT   NOT NULL,
	PRIMARY KEY (workspace, path)
);
`,
	// 3: SQLite schema 4, paging a session's UI history by role.
	`
CREATE INDEX ui_session_role_ts ON ui_messages(session_pk, role, ts);
`,
	// 4: SQLite schema 5, no secret in the store (purgeSecrets).
	``,
	// 5: SQLite schema 6, the cells' changes.
	`
CREATE TABLE cell_changes (
	seq        BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	session_pk BIGINT NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
	anchor     BIGINT NOT NULL,
	notebook   TEXT   NOT NULL,
	op         TEXT   NOT NULL,
	cell_id    TEXT   NOT NULL,
	before     TEXT,
	after      TEXT,
	rewound    BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX cell_changes_session ON cell_changes(session_pk, anchor);
`,
	// 6: SQLite schema 7, sessions belong to their user (ownSessions,
	// pgOwnSessions); row-level security is set up by pgSecure.
	``,
	// 7 (PostgreSQL only; a SQLite file is one OS user's): owners are
	// bound to their role's identity, its OID, not only its name, so that
	// a new role of a dropped one's name does not inherit its sessions
	// (pgSecure: the policies and ak_bind). oid 0 is a role that is gone.
	`
CREATE TABLE ak_owners (
	name TEXT PRIMARY KEY,
	oid  OID  NOT NULL
);
`,
	// 8 (PostgreSQL only): every owned row carries its owner's role OID
	// (owner_oid), as ak_owners binds the name, so that the policies
	// compare the row with the caller without reading ak_owners (see
	// pgOwnPolicy); new rows get the writer's. Existing rows get their
	// name's binding, else the OID of the role of that name (Init binds it
	// next, pgBindOwners), else 0, which no role has. A session's rows
	// carry its owner_oid too (the foreign key takes it in), so that they
	// are written only into a session of the writer's role.
	pgOwnerOIDs(),
}

// pgOwned are the tables whose rows have an owner (and an owner_oid).
var pgOwned = []string{"sessions", "ui_messages", "api_messages", "code_runs", "file_changes", "cell_changes",
	"blobs", "file_index", "session_shares"}

// pgOwnerOIDs is migration 8.
func pgOwnerOIDs() string {
	var b strings.Builder
	for _, t := range pgOwned {
		fmt.Fprintf(&b, `ALTER TABLE %[1]s ADD COLUMN owner_oid OID NOT NULL DEFAULT 0;
UPDATE %[1]s x SET owner_oid = coalesce((SELECT o.oid FROM ak_owners o WHERE o.name = x.owner),
	(SELECT r.oid FROM pg_roles r WHERE r.rolname = x.owner), 0);
ALTER TABLE %[1]s ALTER COLUMN owner_oid SET DEFAULT to_regrole(quote_ident(current_user));
`, t)
	}
	b.WriteString("ALTER TABLE sessions ADD CONSTRAINT sessions_pk_owner_oid UNIQUE (pk, owner, owner_oid);\n")
	for _, t := range pgSessionRows {
		fmt.Fprintf(&b, `ALTER TABLE %[1]s DROP CONSTRAINT IF EXISTS %[1]s_session_owner_fkey,
	DROP CONSTRAINT IF EXISTS %[1]s_session_pk_owner_fkey,
	ADD CONSTRAINT %[1]s_session_owner_fkey FOREIGN KEY (session_pk, owner, owner_oid)
	REFERENCES sessions(pk, owner, owner_oid) ON DELETE CASCADE ON UPDATE CASCADE;
`, t)
	}
	b.WriteString("ALTER TABLE sessions DROP CONSTRAINT IF EXISTS sessions_pk_owner;\n")
	return b.String()
}

// pgSessionRows are the tables of a session's rows: a foreign key ties
// each to its session, owner and owner_oid included.
var pgSessionRows = []string{"ui_messages", "api_messages", "code_runs", "file_changes", "cell_changes", "session_shares"}

// pgVersion maps a PostgreSQL schema version to the SQLite one it matches
// (migrationCode is keyed by SQLite's).
// From 7 on, PostgreSQL's versions are its own (0: no SQLite code runs).
func pgVersion(v int) int {
	if v > 6 {
		return 0
	}
	return v + 1
}

// pgLockKey is the advisory lock that serialises migrations between
// processes opening a fresh database at once.
const pgLockKey = 0x61676b6e // "agkn"

// migratePG brings the schema to version upTo (len(pgMigrations) but in
// tests of migrations) inside tx, refusing a database written by a newer
// build, and returns the version it found. The version lives in
// agentkernel_schema; an advisory lock serialises processes that migrate
// at once. m.owner owns the rows written before sessions had one.
func migratePG(ctx context.Context, tx *sql.Tx, upTo int, m migration) (from int, err error) {
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", pgLockKey); err != nil {
		return 0, fmt.Errorf("lock schema: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS agentkernel_schema (
		one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), version INTEGER NOT NULL)`); err != nil {
		return 0, fmt.Errorf("create schema table: %w", err)
	}
	var v int
	err = tx.QueryRowContext(ctx, "SELECT version FROM agentkernel_schema").Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		v = 0
		_, err = tx.ExecContext(ctx, "INSERT INTO agentkernel_schema (version) VALUES (0)")
	}
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if v > len(pgMigrations) {
		return v, fmt.Errorf("schema version %d is newer than this build supports (%d): upgrade agentkernel", v, len(pgMigrations))
	}
	m.pg = true
	for from = v; v < upTo; v++ {
		if pgMigrations[v] != "" {
			if _, err := tx.ExecContext(ctx, pgMigrations[v]); err != nil {
				return from, fmt.Errorf("migrate schema %d→%d: %w", v, v+1, err)
			}
		}
		if fn := migrationCode[pgVersion(v+1)]; fn != nil {
			if err := fn(ctx, tx, m); err != nil {
				return from, fmt.Errorf("migrate schema %d→%d: %w", v, v+1, err)
			}
		}
		if _, err := tx.ExecContext(ctx, "UPDATE agentkernel_schema SET version = ?", v+1); err != nil {
			return from, fmt.Errorf("migrate schema %d→%d: %w", v, v+1, err)
		}
	}
	return from, nil
}

// pgIntegrityCheck checks that the search column agrees with the text.
func (s *Store) pgIntegrityCheck(ctx context.Context) error {
	var bad int64
	err := s.r.QueryRowContext(ctx,
		"SELECT count(*) FROM ui_messages WHERE tsv IS DISTINCT FROM to_tsvector('ak_search', text)").Scan(&bad)
	if err != nil {
		return s.wrap("integrity check", err)
	}
	if bad > 0 {
		return s.wrap("integrity check", fmt.Errorf("%w: %d messages are out of the search index", ErrCorrupt, bad))
	}
	return nil
}
