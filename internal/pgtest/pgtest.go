// Package pgtest gives tests a real PostgreSQL server: the one named by
// $AGENTKERNEL_TEST_POSTGRES (a postgres:// URL of a role allowed to create
// schemas), or a throwaway cluster it creates with Debian's initdb in a
// temporary directory, listening on 127.0.0.1 at a free port, run as the
// postgres user when the tests run as root (PostgreSQL refuses root).
// Stop stops the cluster and removes its directory.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names an existing server to use instead of a throwaway cluster.
const EnvURL = "AGENTKERNEL_TEST_POSTGRES"

// EnvRequire, when set, makes a missing PostgreSQL a failure, not a skip
// (`make test` sets it: CI must not pass by skipping).
const EnvRequire = "AGENTKERNEL_REQUIRE_POSTGRES"

// Server is a running PostgreSQL.
type Server struct {
	URL  string // the server's URL, database postgres
	dir  string
	cmd  *exec.Cmd
	exit chan struct{}
	n    atomic.Int64
}

// ErrUnavailable: no server named and no initdb found.
var ErrUnavailable = errors.New("no PostgreSQL: set " + EnvURL + " or install Debian's postgresql")

// Start returns the server named by $AGENTKERNEL_TEST_POSTGRES, or starts
// a throwaway cluster with the server settings given ("name=value", as
// postgres -c takes them; a named server keeps its own).
func Start(settings ...string) (*Server, error) {
	if u := os.Getenv(EnvURL); u != "" {
		return &Server{URL: u}, nil
	}
	initdb := findBin("initdb")
	if initdb == "" {
		return nil, ErrUnavailable
	}
	dir, err := os.MkdirTemp("", "agentkernel-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, exit: make(chan struct{})}
	if err := s.start(filepath.Dir(initdb), settings); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// start makes a cluster in s.dir with the binaries in bin, starts its
// server on a free port and waits until it accepts connections.
func (s *Server) start(bin string, settings []string) error {
	cred, err := credential(s.dir)
	if err != nil {
		return err
	}
	data := filepath.Join(s.dir, "data")
	out, err := run(cred, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	if err != nil {
		return fmt.Errorf("initdb: %v: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	if err := s.launch(cred, bin, data, port, settings); err != nil {
		return err
	}
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return s.waitReady()
}

// launch starts the server of the cluster in data, with settings, its
// output to postgres.log in s.dir; s.exit closes when it exits.
func (s *Server) launch(cred *syscall.Credential, bin, data string, port int, settings []string) error {
	args := []string{"-D", data, "-k", s.dir, "-h", "127.0.0.1", "-p", strconv.Itoa(port),
		"-c", "max_connections=300", "-c", "logging_collector=off"}
	for _, kv := range settings {
		args = append(args, "-c", kv)
	}
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), args...)
	s.cmd.SysProcAttr = procAttr(cred)
	logf, err := os.Create(filepath.Join(s.dir, "postgres.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	// The server is started, and waited for, from a goroutine locked to
	// its thread for the server's whole life: its parent-death signal
	// comes when the thread that forked it ends, and Go ends a thread
	// whenever a goroutine locked to it returns (procguard's starter
	// does), so a server forked from any shared thread could be killed in
	// the middle of a test.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends after the server
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.cmd.Wait() //nolint:errcheck // exit is the signal
		close(s.exit)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	return nil
}

// waitReady waits up to 30 seconds for the server to accept connections,
// and fails at once when it exits.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := pgx.Connect(ctx, s.URL)
		cancel()
		if err == nil {
			c.Close(context.Background())
			return nil
		}
		select {
		case <-s.exit:
			log, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
			return fmt.Errorf("postgres exited: %s", log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept connections in 30s: %v", err)
		}
	}
}

// NewSchema creates a fresh schema and returns a URL whose search_path is
// it: an empty database for one test, at the price of a CREATE SCHEMA.
func (s *Server) NewSchema(ctx context.Context, prefix string) (string, error) {
	name := fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), s.n.Add(1))
	c, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return WithParam(s.URL, "search_path", name), nil
}

// Exec runs sql on the server's postgres database.
func (s *Server) Exec(ctx context.Context, sql string, args ...any) error {
	c, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, sql, args...)
	return err
}

// WithUser returns u with its user set to name (and no password).
func WithUser(u, name string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	p.User = url.User(name)
	return p.String()
}

// EnsureRole creates the login role name when it is missing (without a
// password: the throwaway cluster trusts local connections), grants it
// the roles in groups, and returns the server's URL as name.
func (s *Server) EnsureRole(ctx context.Context, name string, groups ...string) (string, error) {
	c, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	id := pgx.Identifier{name}.Sanitize()
	lit := "'" + strings.ReplaceAll(name, "'", "''") + "'"
	if _, err := c.Exec(ctx, `DO $$ BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = `+lit+`) THEN CREATE ROLE `+id+` LOGIN; END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $$`); err != nil {
		return "", fmt.Errorf("create role %s: %w", name, err)
	}
	for _, g := range groups {
		if _, err := c.Exec(ctx, "GRANT "+pgx.Identifier{g}.Sanitize()+" TO "+id); err != nil {
			return "", fmt.Errorf("grant %s to %s: %w", g, name, err)
		}
	}
	return WithUser(s.URL, name), nil
}

// WithParam returns u with the query parameter k set to v.
func WithParam(u, k, v string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	q.Set(k, v)
	p.RawQuery = q.Encode()
	return p.String()
}

// Stop stops a cluster Start created (fast shutdown) and removes its files.
func (s *Server) Stop() {
	if s == nil || s.dir == "" {
		return
	}
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Signal(syscall.SIGINT) //nolint:errcheck // may be gone
		select {
		case <-s.exit:
		case <-time.After(10 * time.Second):
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) //nolint:errcheck // last resort
			<-s.exit
		}
	}
	os.RemoveAll(s.dir)
}

// findBin finds a PostgreSQL server binary: on PATH, else the newest
// /usr/lib/postgresql/N/bin.
func findBin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	if len(dirs) > 0 {
		return dirs[0]
	}
	return ""
}

func version(p string) int {
	n, _ := strconv.Atoi(strings.Split(strings.TrimPrefix(p, "/usr/lib/postgresql/"), "/")[0])
	return n
}

// credential returns the user to run PostgreSQL as: nil (ourselves)
// unless we are root, then postgres, who is given dir.
func credential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a postgres user to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func run(cred *syscall.Credential, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = os.TempDir()
	return cmd.CombinedOutput()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
