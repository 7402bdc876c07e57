package store

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Sentinel errors. An *Error matches the sentinel for its cause with
// errors.Is, so callers can write errors.Is(err, store.ErrLocked).
var (
	// ErrNotFound: the session or message does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists: a session with that id already exists (Import, CreateSession).
	ErrExists = errors.New("already exists")
	// ErrCorrupt: the file is not a SQLite database or its pages are malformed.
	ErrCorrupt = errors.New("database is corrupt")
	// ErrLocked: another process holds a lock longer than Options.BusyTimeout.
	ErrLocked = errors.New("database is locked")
	// ErrFull: the disk (or the database's page limit) is full.
	ErrFull = errors.New("disk is full")
	// ErrStale: ApplyRewind was given histories that no longer match the store.
	ErrStale = errors.New("histories changed since they were loaded")
	// ErrArchived: the session is archived; restore it before writing.
	ErrArchived = errors.New("session is archived")
	// ErrAmbiguous: an id prefix (FindSession) starts several sessions.
	ErrAmbiguous = errors.New("ambiguous session id")
	// ErrReadOnly: the session is another user's, shared with this one
	// read-only (or seen by an administrator): fork it to write.
	ErrReadOnly = errors.New("session is read-only")
)

// Error is what every Store method returns on failure: the operation, the
// database file and the cause.
type Error struct {
	Op   string // e.g. "append ui", "open"
	Path string // the database file
	Err  error  // the cause
}

func (e *Error) Error() string {
	return fmt.Sprintf("store: %s %s: %v", e.Op, e.Path, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Is maps SQLite result codes and PostgreSQL error codes onto the package's sentinels.
func (e *Error) Is(target error) bool {
	if pgIs(e.Err, target) {
		return true
	}
	var se *sqlite.Error
	if !errors.As(e.Err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return target == ErrCorrupt
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return target == ErrLocked
	case sqlite3.SQLITE_FULL:
		return target == ErrFull
	}
	return false
}

// wrap returns nil for nil, else an *Error naming op and the file. An error
// that is already an *Error is returned unchanged.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55P03" {
		err = pgLocked{err}
	}
	return &Error{Op: op, Path: s.path, Err: err}
}

// isConstraint reports a UNIQUE / PRIMARY KEY violation.
func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT || pgConstraint(err)
}
