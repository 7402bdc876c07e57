package store

import (
	"context"
	"database/sql/driver"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/stdlib"
)

// The store's SQL is written once, in the dialect both engines share, with
// SQLite's "?" and "?N" placeholders. For PostgreSQL, database/sql talks to
// a pgxpool through pgx's stdlib adapter, wrapped here so that:
//   - placeholders become $N (rebind, cached per query text);
//   - a comment /*pg TEXT*/ becomes TEXT, for the few clauses only
//     PostgreSQL has (FOR UPDATE); SQLite reads it as a comment;
//   - Prepare does not create a server-side statement per call (pgx already
//     caches one per connection for every query it runs, so a statement
//     prepared and closed per transaction would cost two round trips);
//   - bool arguments are stored as 0/1, the integer columns SQLite uses,
//     and strings lose NUL bytes and invalid UTF-8, which PostgreSQL's text
//     type refuses.

type pgConnector struct{ inner driver.Connector }

func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &pgConn{Conn: cn.(*stdlib.Conn)}, nil
}

func (c pgConnector) Driver() driver.Driver { return c.inner.Driver() }

type pgConn struct{ *stdlib.Conn }

func (c *pgConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

func (c *pgConn) PrepareContext(_ context.Context, q string) (driver.Stmt, error) {
	return &pgStmt{c: c, q: pgSQL(q)}, nil
}

func (c *pgConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, pgSQL(q), args)
}

func (c *pgConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, pgSQL(q), args)
}

func (c *pgConn) CheckNamedValue(nv *driver.NamedValue) error {
	switch v := nv.Value.(type) {
	case bool:
		if v {
			nv.Value = int64(1)
		} else {
			nv.Value = int64(0)
		}
	case string:
		nv.Value = pgText(v)
	}
	return nil
}

type pgStmt struct {
	c *pgConn
	q string
}

func (s *pgStmt) Close() error  { return nil }
func (s *pgStmt) NumInput() int { return -1 }

func (s *pgStmt) Exec([]driver.Value) (driver.Result, error) { return nil, driver.ErrSkip }

func (s *pgStmt) Query([]driver.Value) (driver.Rows, error) { return nil, driver.ErrSkip }

func (s *pgStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.c.Conn.ExecContext(ctx, s.q, args)
}

func (s *pgStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.c.Conn.QueryContext(ctx, s.q, args)
}

// pgText makes s storable in a PostgreSQL text column.
func pgText(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

var pgQueries sync.Map // query text → rebound text

// pgSQL rebinds q for PostgreSQL (see the top of this file).
func pgSQL(q string) string {
	if r, ok := pgQueries.Load(q); ok {
		return r.(string)
	}
	r := rebind(q)
	pgQueries.Store(q, r)
	return r
}

// rebind turns ? and ?N outside string literals and quoted identifiers
// into $N, and /*pg TEXT*/ into TEXT.
func rebind(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(q) && q[j] != c {
				j++
			}
			b.WriteString(q[i:min(j+1, len(q))])
			i = j
		case strings.HasPrefix(q[i:], "/*pg "):
			end := strings.Index(q[i:], "*/")
			if end < 0 {
				b.WriteString(q[i:])
				return b.String()
			}
			b.WriteString(q[i+len("/*pg ") : i+end])
			i += end + 1
		case c == '?':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			if j > i+1 {
				b.WriteString("$" + q[i+1:j])
			} else {
				n++
				b.WriteString("$" + strconv.Itoa(n))
			}
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
