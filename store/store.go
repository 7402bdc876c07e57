package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/agentkernel/agentkernel/internal/private"
)

// Store is the session database. All methods are safe for concurrent use by
// multiple goroutines: reads run on a pool of read-only connections and see
// the last committed state (WAL snapshots), while writes are serialised on
// one writer connection. Several processes may open the same file.
//
// The caller must call Close, which flushes debounced streaming updates.
type Store struct {
	path  string
	opts  Options
	log   hclog.Logger
	w     *sql.DB // SQLite: exactly one connection, every write goes through it
	r     *sql.DB // SQLite: the read-only pool; PostgreSQL: w
	pg    bool    // the PostgreSQL store (Options.URL)
	pool  *pgxpool.Pool
	strm  *streamer
	close sync.Once
	done  chan struct{}
	wg    sync.WaitGroup

	// user owns the sessions the store creates (see owners.go); admin is
	// set for a member of AdminRole. ownerName is Options.OwnerName.
	user, ownerName string
	admin           bool

	smallSession int // see search.go
}

// Open opens (creating and migrating when needed) the database named by
// opts. Errors name the file and the cause; a file that is not a database
// matches ErrCorrupt, one held by another process matches ErrLocked.
func Open(ctx context.Context, opts Options) (*Store, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{path: o.Path, opts: o, log: o.Logger.Named("store"), done: make(chan struct{}), smallSession: smallSession,
		ownerName: noUS(o.OwnerName)}
	if o.URL != "" {
		s.pg, s.path = true, RedactURL(o.URL)
		if err := s.openPostgres(ctx); err != nil {
			return nil, err
		}
		s.start()
		return s, nil
	}
	if strings.ContainsAny(o.Path, "?#") {
		return nil, s.wrap("open", errors.New("the path must not contain '?' or '#'"))
	}
	if err := keepPrivate(o.Path, opts.Path == ""); err != nil {
		return nil, s.wrap("open", err)
	}
	if err := s.openPools(ctx); err != nil {
		return nil, err
	}
	s.start()
	return s, nil
}

// keepPrivate makes the SQLite file at path private to its user: created
// 0600 before SQLite opens it (an empty file is a valid new database), its
// mode brought back to 0600 (and its -wal and -shm files') when something
// widened it, and, when dataDir says the directory is agentkernel's own
// data directory (not a Path given by the caller), the directory 0700.
// Another user's file or directory is left as it is: opening it fails with
// a permission error.
func keepPrivate(path string, dataDir bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	if dataDir {
		if err := private.Tighten(dir, 0o700); err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
	}
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	} else if !errors.Is(err, os.ErrExist) {
		return err
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := private.Tighten(p, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// start runs the background writer of streaming updates.
func (s *Store) start() {
	s.strm = newStreamer(s)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.strm.run(s.done)
	}()
	s.log.Debug("opened", "store", s.path)
}

func (s *Store) dsn(readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", s.opts.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous("+s.opts.Sync.pragma()+")")
	// Reads through mmap skip a syscall per page; a 16 MiB page cache per
	// connection keeps listings and searches off the disk path.
	q.Add("_pragma", "mmap_size(268435456)")
	q.Add("_pragma", "cache_size(-16384)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		// IMMEDIATE takes the write lock at BEGIN, so a transaction never
		// fails half-way when it upgrades from read to write.
		q.Set("_txlock", "immediate")
	}
	return s.path + "?" + q.Encode()
}

func (s *Store) openPools(ctx context.Context) error {
	w, err := sql.Open("sqlite", s.dsn(false))
	if err != nil {
		return s.wrap("open", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	fail := func(err error) error {
		w.Close()
		return s.wrap("open", err)
	}
	// journal_mode=WAL is persistent; setting it needs the file, so it is
	// also the first check that the file is a database at all.
	var mode string
	if err := w.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return fail(err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fail(fmt.Errorf("journal_mode is %q, want wal", mode))
	}
	s.user = OSUser()
	if err := migrate(ctx, w, SchemaVersion, migration{owner: s.user}); err != nil {
		return fail(err)
	}
	r, err := sql.Open("sqlite", s.dsn(true))
	if err != nil {
		return fail(err)
	}
	r.SetMaxOpenConns(s.opts.Readers)
	r.SetMaxIdleConns(s.opts.Readers)
	if err := r.PingContext(ctx); err != nil {
		r.Close()
		return fail(err)
	}
	s.w, s.r = w, r
	return nil
}

// Path returns the database file, or the PostgreSQL URL without its
// password.
func (s *Store) Path() string { return s.path }

// Postgres reports whether the store is the PostgreSQL one.
func (s *Store) Postgres() bool { return s.pg }

// Flush writes every pending streaming update now and reports the first
// error a debounced write met since the last Flush. Call it on SIGTERM.
func (s *Store) Flush(ctx context.Context) error {
	if s.isClosed() {
		return s.wrap("flush", net.ErrClosed)
	}
	return s.strm.flush(ctx)
}

// Close flushes pending streaming updates, stops the background writer and
// closes the database. It is idempotent; calls after the first return
// net.ErrClosed.
func (s *Store) Close() error {
	err := error(net.ErrClosed)
	s.close.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.BusyTimeout+time.Second)
		defer cancel()
		ferr := s.strm.flush(ctx)
		close(s.done)
		s.wg.Wait()
		if s.pg {
			err = errors.Join(ferr, s.wrap("close", s.w.Close()))
			s.pool.Close()
			return
		}
		err = errors.Join(ferr, s.wrap("close", s.r.Close()), s.wrap("close", s.w.Close()))
	})
	return err
}

func (s *Store) isClosed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// writeTx runs fn in one write transaction (BEGIN IMMEDIATE on SQLite) and
// commits. When it returns nil the changes are committed (see the package
// doc for what that guarantees). On PostgreSQL it retries (see pgRetry).
func (s *Store) writeTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	if s.isClosed() {
		return s.wrap(op, net.ErrClosed)
	}
	try := func() (bool, error) {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return false, fmt.Errorf("begin: %w", err)
		}
		if err := fn(tx); err != nil {
			tx.Rollback() //nolint:errcheck // the first error is the one to report
			return false, err
		}
		if err := tx.Commit(); err != nil {
			return true, fmt.Errorf("commit: %w", err)
		}
		return false, nil
	}
	if !s.pg {
		_, err := try()
		return s.wrap(op, err)
	}
	return s.wrap(op, s.pgRetry(ctx, op, try))
}

// querier is what a read runs its statements on: a transaction, or the
// database (readOne).
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readOne runs fn, a read of one statement. On PostgreSQL it runs outside
// a transaction (one statement reads one snapshot), which saves BEGIN's
// and ROLLBACK's round trips, and is run again, whole, when its
// connection broke; on SQLite it is readTx.
func (s *Store) readOne(ctx context.Context, op string, fn func(q querier) error) error {
	if !s.pg {
		return s.readTx(ctx, op, func(tx *sql.Tx) error { return fn(tx) })
	}
	if s.isClosed() {
		return s.wrap(op, net.ErrClosed)
	}
	return s.wrap(op, s.pgRetry(ctx, op, func() (bool, error) { return false, fn(s.r) }))
}

// readTx runs fn in one read transaction: a consistent snapshot.
func (s *Store) readTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	if s.isClosed() {
		return s.wrap(op, net.ErrClosed)
	}
	opts := &sql.TxOptions{ReadOnly: true}
	if s.pg {
		opts.Isolation = sql.LevelRepeatableRead
	}
	var tx *sql.Tx
	begin := func() (bool, error) {
		var err error
		if tx, err = s.r.BeginTx(ctx, opts); err != nil {
			return false, fmt.Errorf("begin: %w", err)
		}
		return false, nil
	}
	var err error
	if s.pg {
		// Only BEGIN is retried: fn may have kept what it read before a
		// failure, and a broken connection shows at the first statement.
		err = s.pgRetry(ctx, op, begin)
	} else {
		_, err = begin()
	}
	if err != nil {
		return s.wrap(op, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	return s.wrap(op, fn(tx))
}

// pgRetry runs try until it succeeds, fails for good, or pgRetryBudget has
// passed: a transaction that failed because its connection broke (the
// server restarted, an administrator ended it), or that the server aborted
// to resolve a conflict, is run again on a fresh connection. try reports
// whether the failure came during COMMIT, whose outcome is then unknown: a
// rerun that finds its rows already there (ErrExists) counts as done.
func (s *Store) pgRetry(ctx context.Context, op string, try func() (committing bool, err error)) error {
	deadline := time.Now().Add(pgRetryBudget)
	wait := 20 * time.Millisecond
	unknownCommit := false
	for attempt := 1; ; attempt++ {
		committing, err := try()
		if err == nil || (unknownCommit && errors.Is(err, ErrExists)) {
			if attempt > 1 {
				s.log.Info("database call succeeded after retry", "op", op, "attempts", attempt)
			}
			return nil
		}
		if !pgRetryable(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		unknownCommit = unknownCommit || committing
		s.log.Warn("database call failed, retrying", "op", op, "attempt", attempt, "error", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
		wait = min(wait*2, time.Second)
	}
}

// IntegrityCheck runs PRAGMA integrity_check and checks that the FTS index
// agrees with the UI history. It reads the whole file: for tests and
// `agentkernel sessions check`, not for every open.
func (s *Store) IntegrityCheck(ctx context.Context) error {
	if s.isClosed() {
		return s.wrap("integrity check", net.ErrClosed)
	}
	if s.pg {
		return s.pgIntegrityCheck(ctx)
	}
	rows, err := s.w.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return s.wrap("integrity check", err)
	}
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return s.wrap("integrity check", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return s.wrap("integrity check", err)
	}
	if len(problems) > 0 {
		return s.wrap("integrity check", fmt.Errorf("%w: %s", ErrCorrupt, strings.Join(problems, "; ")))
	}
	if _, err := s.w.ExecContext(ctx, "INSERT INTO ui_fts(ui_fts, rank) VALUES('integrity-check', 1)"); err != nil {
		return s.wrap("integrity check", fmt.Errorf("full-text index: %w", err))
	}
	return nil
}
