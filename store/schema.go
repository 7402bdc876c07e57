package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations[i] moves the schema from user_version i to i+1. Append only:
// never edit a migration that has shipped.
var migrations = []string{
	// 1: sessions, both histories, FTS5 over UI text.
	`
CREATE TABLE sessions (
	pk                 INTEGER PRIMARY KEY,
	id                 TEXT    NOT NULL UNIQUE,      -- uuid
	created_at         INTEGER NOT NULL,             -- unix ms
	updated_at         INTEGER NOT NULL,             -- unix ms
	display_name       TEXT    NOT NULL DEFAULT '',
	title              TEXT    NOT NULL DEFAULT '',  -- DeriveTitle, kept current on write
	model              TEXT    NOT NULL DEFAULT '',
	provider           TEXT    NOT NULL DEFAULT '',
	mode               TEXT    NOT NULL DEFAULT '',
	workspace          TEXT    NOT NULL DEFAULT '',
	tokens_in          INTEGER NOT NULL DEFAULT 0,
	tokens_out         INTEGER NOT NULL DEFAULT 0,
	cache_writes       INTEGER NOT NULL DEFAULT 0,
	cache_reads        INTEGER NOT NULL DEFAULT 0,
	cost               REAL    NOT NULL DEFAULT 0,
	message_count      INTEGER NOT NULL DEFAULT 0,   -- UI history rows
	api_count          INTEGER NOT NULL DEFAULT 0,   -- API history rows
	first_user_message TEXT    NOT NULL DEFAULT '',  -- denormalised, cut to firstUserKeep
	last_message       TEXT    NOT NULL DEFAULT '',  -- denormalised preview source
	last_role          TEXT    NOT NULL DEFAULT '',
	archived_at        INTEGER,                      -- unix ms, NULL when live
	archive_reason     TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX sessions_updated ON sessions(updated_at);

CREATE TABLE ui_messages (
	seq        INTEGER PRIMARY KEY,   -- append order; a history is ORDER BY seq
	session_pk INTEGER NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
	ts         INTEGER NOT NULL,
	type       TEXT    NOT NULL,      -- ask | say
	kind       TEXT    NOT NULL,      -- the ask or say kind
	role       TEXT    NOT NULL,      -- user | assistant | tool | system (for previews)
	text       TEXT    NOT NULL,      -- full text (text, else reasoning), FTS source
	partial    INTEGER NOT NULL,
	payload    TEXT    NOT NULL       -- the message as JSON
);
CREATE UNIQUE INDEX ui_session_ts ON ui_messages(session_pk, ts);
CREATE INDEX ui_session ON ui_messages(session_pk);

CREATE TABLE api_messages (
	seq        INTEGER PRIMARY KEY,
	session_pk INTEGER NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
	ts         INTEGER NOT NULL,      -- 0 when the message has none
	role       TEXT    NOT NULL,      -- user | assistant
	kind       TEXT    NOT NULL,      -- summary | truncation_marker | first block type
	text       TEXT    NOT NULL,      -- PlainText()
	payload    TEXT    NOT NULL
);
CREATE INDEX api_session_ts ON api_messages(session_pk, ts);
CREATE INDEX api_session ON api_messages(session_pk);

CREATE VIRTUAL TABLE ui_fts USING fts5(
	text, content='ui_messages', content_rowid='seq',
	tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER ui_fts_ai AFTER INSERT ON ui_messages BEGIN
	INSERT INTO ui_fts(rowid, text) VALUES (new.seq, new.text);
END;
CREATE TRIGGER ui_fts_ad AFTER DELETE ON ui_messages BEGIN
	INSERT INTO ui_fts(ui_fts, rowid, text) VALUES ('delete', old.seq, old.text);
END;
CREATE TRIGGER ui_fts_au AFTER UPDATE OF text ON ui_messages BEGIN
	INSERT INTO ui_fts(ui_fts, rowid, text) VALUES ('delete', old.seq, old.text);
	INSERT INTO ui_fts(rowid, text) VALUES (new.seq, new.text);
END;
`,
	// 2: the world beside the conversation: content-addressed file blobs,
	// the code run in the backing kernel, the files each step changed, and
	// forks.
	`
CREATE TABLE blobs (
	hash TEXT    PRIMARY KEY,          -- sha256, hex
	size INTEGER NOT NULL,
	data BLOB    NOT NULL
) WITHOUT ROWID;

CREATE TABLE code_runs (
	seq        INTEGER PRIMARY KEY,
	session_pk INTEGER NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
	anchor     INTEGER NOT NULL,       -- the session clock when it ran (UI ts order)
	origin     TEXT    NOT NULL,       -- agent | cell | user
	code       TEXT    NOT NULL,
	status     TEXT    NOT NULL,       -- ok | error | aborted | ''
	rewound    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX code_runs_session ON code_runs(session_pk, anchor);

CREATE TABLE file_changes (
	seq        INTEGER PRIMARY KEY,
	session_pk INTEGER NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
	anchor     INTEGER NOT NULL,       -- the step that changed it (UI ts order)
	path       TEXT    NOT NULL,       -- workspace-relative, slash-separated
	before     TEXT,                   -- blob hash; NULL: the file did not exist
	after      TEXT,                   -- blob hash; NULL: the step removed it
	rewound    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX file_changes_session ON file_changes(session_pk, anchor);

ALTER TABLE sessions ADD COLUMN parent_id      TEXT    NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN fork_ts        INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN replay_pending INTEGER NOT NULL DEFAULT 0;
`,
	// 3: the workspace trackers' index (like git's): what each file's stat
	// was when its content was last read, so that a later process reads
	// only what changed.
	`
CREATE TABLE file_index (
	workspace TEXT    NOT NULL,        -- the workspace root, absolute
	path      TEXT    NOT NULL,        -- workspace-relative, slash-separated
	size      INTEGER NOT NULL,        -- -1: read it again (racy)
	mtime     INTEGER NOT NULL,        -- ns
	ctime     INTEGER NOT NULL,        -- ns
	inode     INTEGER NOT NULL,
	hash      TEXT    NOT NULL,        -- blob hash, or "-": not kept (over the limits)
	PRIMARY KEY (workspace, path)
) WITHOUT ROWID;
`,
	// 4: paging a session's UI history by role (Store.PageUI with a role,
	// CountUI): the newest messages of one role without walking the others.
	`
CREATE INDEX ui_session_role_ts ON ui_messages(session_pk, role, ts);
`,
	// 5: no secret in the store: purgeSecrets (migrationCode) takes out the
	// contents of .env files, keys and tokens that earlier checkpoints kept.
	``,
	// 6: the notebook's cells beside the files: what each step did to a
	// cell of a notebook a frontend shows (a rewind puts the cells back
	// through the frontend).
	`
CREATE TABLE cell_changes (
	seq        INTEGER PRIMARY KEY,
	session_pk INTEGER NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
	anchor     INTEGER NOT NULL,       -- the step that changed it (UI ts order)
	notebook   TEXT    NOT NULL,       -- the notebook, as its frontend names it
	op         TEXT    NOT NULL,       -- insert | edit | move | delete
	cell_id    TEXT    NOT NULL,
	before     TEXT,                   -- the cell (JSON) before; NULL: an insert
	after      TEXT,                   -- the cell (JSON) after; NULL: a delete
	rewound    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX cell_changes_session ON cell_changes(session_pk, anchor);
`,
	// 7: sessions belong to their user: ownSessions (migrationCode) adds
	// the owner and the name shown in listings.
	``,
}

// migration is what a migration step's code is told: the engine, and the
// owner given to the rows written before sessions had one.
type migration struct {
	pg    bool
	owner string
}

// migrationCode[v] runs after the SQL of the migration to version v, in
// its transaction, on either engine (m.pg says which): what SQL alone
// cannot decide. The versions are SQLite's; pgVersion maps PostgreSQL's.
var migrationCode = map[int]func(ctx context.Context, tx *sql.Tx, m migration) error{
	5: purgeSecrets,
	7: ownSessions,
}

// SchemaVersion is the user_version this build writes.
var SchemaVersion = len(migrations)

// migrate brings the schema to version upTo (SchemaVersion but in tests of
// migrations), one transaction per step; m.owner owns the rows written
// before sessions had an owner. A database written by a newer build is
// refused rather than guessed at. Each step re-reads user_version under the
// write lock, so two processes opening a fresh data directory at once
// migrate it exactly once.
func migrate(ctx context.Context, db *sql.DB, upTo int, m migration) error {
	for {
		done, err := migrateStep(ctx, db, upTo, m)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}

func migrateStep(ctx context.Context, db *sql.DB, upTo int, m migration) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE on the writer
	if err != nil {
		return false, fmt.Errorf("begin migration: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return false, fmt.Errorf("read schema version: %w", err)
	}
	switch {
	case v > len(migrations):
		return false, fmt.Errorf("schema version %d is newer than this build supports (%d)", v, len(migrations))
	case v >= upTo:
		return true, nil
	}
	if migrations[v] != "" {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return false, fmt.Errorf("migrate schema %d→%d: %w", v, v+1, err)
		}
	}
	if fn := migrationCode[v+1]; fn != nil {
		if err := fn(ctx, tx, m); err != nil {
			return false, fmt.Errorf("migrate schema %d→%d: %w", v, v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
		return false, fmt.Errorf("migrate schema %d→%d: %w", v, v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate schema %d→%d: commit: %w", v, v+1, err)
	}
	return false, nil
}
