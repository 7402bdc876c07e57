package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/session"
)

const synopsis = `mcp serve [--http ADDR] [--dir DIR] [--session REF | --continue] [--backing KERNELSPEC] [--store URL] [--notebook FILE]

Serves a session's live kernel and agentkernel's stored sessions as an MCP
server: on stdio (what Claude Code, Codex and editors start), or with
--http as streamable HTTP on a loopback address behind a bearer token
($AGENTKERNEL_MCP_TOKEN, else a new one printed on stderr).

Tools: execute_code, list_variables, interrupt_kernel, restart_kernel,
session_info, read_history, search_sessions, rewind, fork_session. The
kernel (--backing, python3 by default) starts in DIR at the first call that
needs it. execute_code is decided by the session's permission policy and
hooks; an ask goes to the client (MCP elicitation) when it can answer, else
to $AGENTKERNEL_APPROVE (none: denied). Every call is recorded in the
session's history and the event log. Logs go to stderr.`

// EnvToken is the bearer token of `mcp serve --http`.
const EnvToken = "AGENTKERNEL_MCP_TOKEN"

// Run is `agentkernel mcp serve` (args after "serve").
func Run(args []string, env app.Env) error {
	fs := app.NewFlagSet("mcp serve", synopsis, env.Stderr)
	addr := fs.String("http", "", "serve streamable HTTP on `ADDR` (127.0.0.1:PORT; port 0 picks one) instead of stdio")
	dir := fs.String("dir", "", "the workspace: the kernel's directory and the session's (default the current directory)")
	ref := fs.String("session", "", "resume this stored session (an id or its prefix) instead of starting a new one")
	cont := fs.Bool("continue", false, "resume the workspace's last session")
	nbPath := fs.String("notebook", "", "offer the notebook tools on the .ipynb `FILE` (read, insert, edit, move, delete, run its cells)")
	bf := app.AddBackingFlags(fs, "kernelspec of the live kernel")
	storeArg := app.StoreFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("mcp serve: unexpected argument %q", fs.Arg(0))
	}
	if *ref != "" && *cont {
		return errors.New("mcp serve: --session and --continue: give one")
	}
	log, err := app.NewLogger(env.Stderr)
	if err != nil {
		return err
	}
	cfg := app.Load(app.Flags{Store: *storeArg}, log)
	if err := cfg.Err(); err != nil {
		return fmt.Errorf("mcp serve: %w", err)
	}
	bo, err := bf.Options("mcp")
	if err != nil {
		return fmt.Errorf("mcp serve: %w", err)
	}
	var cells session.Cells
	if *nbPath != "" {
		if cells, err = app.NotebookFile(*nbPath); err != nil {
			return fmt.Errorf("mcp serve: --notebook: %w", err)
		}
	}
	var ln net.Listener
	if *addr != "" {
		if ln, err = listenLoopback(*addr); err != nil {
			return fmt.Errorf("mcp serve: %w", err)
		}
		defer ln.Close()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	signal.Ignore(syscall.SIGPIPE) // a client that went away is not a crash
	a, err := app.Open(ctx, cfg, app.Surface{Kind: "mcp", Source: Source, Workspace: *dir, StoreNow: true, Logger: log,
		Backing: bo, Cells: cells})
	if err != nil {
		return fmt.Errorf("mcp serve: %w", err)
	}
	defer a.Close()
	switch {
	case *ref != "":
		_, err = a.Host.Resume(ctx, *ref)
	case *cont:
		_, err = a.Host.Continue(ctx)
	}
	if err != nil {
		return fmt.Errorf("mcp serve: %w", err)
	}
	s := New(Options{Host: a.Host, Runner: a.Runner, Version: env.Version, Approve: cfg.Approve, Logger: log, Notebook: cells != nil})
	if ln == nil {
		err = s.Serve(ctx, &sdk.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}})
	} else {
		err = serveHTTP(ctx, s, ln, env.Stderr)
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// serveHTTP serves s on ln at /mcp until ctx ends.
func serveHTTP(ctx context.Context, s *Server, ln net.Listener, stderr io.Writer) error {
	token := os.Getenv(EnvToken)
	if token == "" {
		token = newToken()
		url := "http://" + ln.Addr().String() + "/mcp"
		fmt.Fprintf(stderr, "agentkernel MCP server at %s\ntoken: %s\nClaude Code: claude mcp add --transport http agentkernel %s --header \"Authorization: Bearer %s\"\n",
			url, token, url, token)
	} else {
		fmt.Fprintf(stderr, "agentkernel MCP server at http://%s/mcp (token from $%s)\n", ln.Addr(), EnvToken)
	}
	srv := httpServer(s, token)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// listenLoopback listens on addr, which must be a loopback address: the
// server runs code, and its token is the only guard.
func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--http %q: want HOST:PORT, e.g. 127.0.0.1:0", addr)
	}
	if host == "localhost" {
		addr = net.JoinHostPort("127.0.0.1", addr[len(host)+1:])
	} else if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("--http %q: serve on a loopback address only (127.0.0.1 or ::1); reach it from elsewhere through an SSH tunnel", addr)
	}
	return net.Listen("tcp", addr)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
