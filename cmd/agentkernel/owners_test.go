package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/internal/pgtest"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/surface/mcpserve"
	"github.com/agentkernel/agentkernel/surface/webview/hostagent"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// sharedStore starts a throwaway PostgreSQL with a fresh schema set up by
// store init (as the server's superuser, whose URL it returns).
func sharedStore(t *testing.T) (*pgtest.Server, string) {
	t.Helper()
	srv, err := pgtest.Start()
	if errors.Is(err, pgtest.ErrUnavailable) && os.Getenv(pgtest.EnvRequire) == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	admin, err := srv.NewSchema(context.Background(), "owners")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runStore([]string{"init", "--admin-url", admin}, &out, &out); err != nil {
		t.Fatalf("store init: %v\n%s", err, out.String())
	}
	return srv, admin
}

// roleURL returns the schema of admin as the login role name, made a user
// of the store (or an administrator with admin).
func roleURL(t *testing.T, srv *pgtest.Server, admin, name string, asAdmin ...bool) string {
	t.Helper()
	if _, err := srv.EnsureRole(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	args := []string{"grant", name, "--admin-url", admin}
	if len(asAdmin) > 0 && asAdmin[0] {
		args = append(args, "--admin")
	}
	var out bytes.Buffer
	if err := runStore(args, &out, &out); err != nil {
		t.Fatalf("store grant: %v\n%s", err, out.String())
	}
	return pgtest.WithUser(admin, name)
}

// TestSessionsBelongToTheirUser: two users of one shared PostgreSQL store,
// working in the same directory (every pod's /home/jovyan). Alice's ask,
// sessions command, MCP server and panel see nothing of Bob's session:
// they cannot list, search, show, resume, fork or export it. Shared with
// her, she reads it everywhere (whose it is said), and goes on only in a
// fork of her own; unshared, it is gone again. The administrator sees both.
func TestSessionsBelongToTheirUser(t *testing.T) {
	srv, admin := sharedStore(t)
	bob := roleURL(t, srv, admin, "ak_bob")
	alice := roleURL(t, srv, admin, "ak_alice")
	carol := roleURL(t, srv, admin, "ak_carol", true)
	model, ws := askEnv(t)
	as := func(u string) { t.Helper(); t.Setenv(store.EnvStore, u) }
	sessions := func(args ...string) (string, error) {
		t.Helper()
		var o, e bytes.Buffer
		err := runSessions(args, strings.NewReader(""), &o, &e)
		return o.String() + e.String(), err
	}
	mustSessions := func(args ...string) string {
		t.Helper()
		out, err := sessions(args...)
		if err != nil {
			t.Fatalf("sessions %v: %v\n%s", args, err, out)
		}
		return out
	}

	as(bob)
	t.Setenv("KERNEL_USERNAME", "Bob B.")
	model.Enqueue(scripted.Reply(scripted.Text("The zanzibar plan is ready.")))
	bid, err := askIn(t, ws, "Draft the zanzibar plan")
	if err != nil {
		t.Fatal(err)
	}
	if out := mustSessions("show", bid); !strings.Contains(out, "Owner:") || !strings.Contains(out, "ak_bob (Bob B.)") {
		t.Fatalf("bob's show:\n%s", out)
	}

	as(alice)
	t.Setenv("KERNEL_USERNAME", "Alice A.")
	model.Enqueue(scripted.Reply(scripted.Text("Alice's own answer.")))
	aid, err := askIn(t, ws, "Something of my own")
	if err != nil {
		t.Fatal(err)
	}
	// --continue in the same directory never picks Bob's.
	model.Enqueue(scripted.Reply(scripted.Text("Continued.")))
	if got, err := askIn(t, ws, "Go on", "--continue"); err != nil || got != aid {
		t.Fatalf("alice's --continue: %s, %v; want her own %s", got, err, aid)
	}
	// The MCP server and the panel, over a host of Alice's, as a kernel
	// or `mcp serve` opens them.
	a, err := app.Open(context.Background(), app.Load(app.Flags{}, hclog.NewNullLogger()), app.Surface{Kind: "mcp", StoreNow: true, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	panel := hostagent.New(a.Host)
	mcp := connectMCP(t, mcpserve.New(mcpserve.Options{Host: a.Host, Version: "test"}))
	searchMCP := func() string {
		t.Helper()
		res, err := mcp.CallTool(context.Background(), &sdk.CallToolParams{Name: "search_sessions", Arguments: map[string]any{"query": "zanzibar"}})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}

	// noneOfBobs checks that nothing of Bob's session shows; before
	// Alice forked it, not even its words.
	noneOfBobs := func(t *testing.T, forked bool) {
		t.Helper()
		// A row of Bob's session (a fork of hers names it as its parent).
		seen := func(out string) bool {
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, bid[:8]) || strings.Contains(line, `"session":"`+bid) {
					return true
				}
			}
			return !forked && strings.Contains(out, "zanzibar")
		}
		for _, args := range [][]string{{"list"}, {"list", "--all"}, {"search", "zanzibar"}, {"search", "zanzibar", "--all"}} {
			if out := mustSessions(args...); seen(out) {
				t.Errorf("alice's sessions %v:\n%s", args, out)
			}
		}
		for _, args := range [][]string{{"show", bid}, {"export", bid}, {"fork", bid, "#0"}, {"rewind", bid, "#0"},
			{"share", bid, "ak_alice"}, {"rm", bid}} {
			if out, err := sessions(args...); err == nil || !strings.Contains(err.Error(), "no such session") {
				t.Errorf("alice's sessions %v: %v\n%s", args, err, out)
			}
		}
		if _, err := askIn(t, ws, "Go on", "--session", bid); err == nil || !strings.Contains(err.Error(), "no such session") {
			t.Errorf("alice's ask --session %s: %v", bid[:8], err)
		}
		var o, e bytes.Buffer
		if err := runMCP([]string{"serve", "--session", bid}, app.Env{Stdin: strings.NewReader(""), Stdout: &o, Stderr: &e}); err == nil ||
			!strings.Contains(err.Error(), "no such session") {
			t.Errorf("alice's mcp serve --session %s: %v", bid[:8], err)
		}
		if out := searchMCP(); seen(out) {
			t.Errorf("alice's search_sessions: %s", out)
		}
		list, err := panel.Sessions.ListSessions(context.Background(), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if s.ID == bid {
				t.Errorf("alice's panel lists bob's session")
			}
		}
		hits, err := panel.Sessions.SearchMessages(context.Background(), "zanzibar", 20)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if h.SessionID == bid || !forked {
				t.Errorf("alice's panel search: %+v", h)
			}
		}
		if err := panel.Sessions.LoadSession(context.Background(), bid); err == nil {
			t.Errorf("alice's panel loads bob's session")
		}
	}
	noneOfBobs(t, false)

	// Shared with her: she reads it, is told whose it is, and goes on only
	// in forks of her own.
	as(bob)
	if out := mustSessions("share", bid, "ak_alice"); !strings.Contains(out, "shared with ak_alice") {
		t.Fatalf("share: %s", out)
	}
	if out := mustSessions("show", bid); !strings.Contains(out, "Shared with:") || !strings.Contains(out, "ak_alice") {
		t.Fatalf("bob's show after share:\n%s", out)
	}
	as(alice)
	if out := mustSessions("list", "--all"); !strings.Contains(out, bid[:8]) || !strings.Contains(out, "ak_bob (Bob B.)") || !strings.Contains(out, "OWNER") {
		t.Fatalf("alice's list --all:\n%s", out)
	}
	if out := mustSessions("list"); strings.Contains(out, bid[:8]) {
		t.Fatalf("alice's own list holds bob's session:\n%s", out)
	}
	if out := mustSessions("search", "zanzibar", "--all"); !strings.Contains(out, bid[:8]) {
		t.Fatalf("alice's search --all:\n%s", out)
	}
	if out := mustSessions("show", bid); !strings.Contains(out, "read-only") || !strings.Contains(out, "zanzibar") {
		t.Fatalf("alice's show:\n%s", out)
	}
	if out := mustSessions("export", bid); !strings.Contains(out, "zanzibar") {
		t.Fatalf("alice's export:\n%s", out)
	}
	for _, args := range [][]string{{"rewind", bid, "#0"}, {"rm", bid}, {"rename", bid, "mine"}, {"share", bid, "ak_carol"}} {
		if out, err := sessions(args...); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("alice's sessions %v on a shared session: %v\n%s", args, err, out)
		}
	}
	if out := mustSessions("fork", bid, "#1"); !strings.Contains(out, "your own session") {
		t.Fatalf("alice's fork:\n%s", out)
	}
	model.Enqueue(scripted.Reply(scripted.Text("Going on in my fork.")))
	fid, err := askIn(t, ws, "Go on", "--session", bid)
	if err != nil || fid == bid || fid == "" {
		t.Fatalf("alice's ask --session on a shared session: %s, %v; want a fork of her own", fid, err)
	}
	if out := searchMCP(); !strings.Contains(out, bid) {
		t.Errorf("alice's search_sessions after share: %s", out)
	}
	if err := panel.Sessions.LoadSession(context.Background(), bid); err != nil {
		t.Fatalf("alice's panel loads a shared session: %v", err)
	}
	if cur, err := a.Host.Current(context.Background()); err != nil || cur.ForkOf != bid || cur.ID == bid {
		t.Fatalf("the panel's session: %+v, %v; want a fork of %s", cur, err, bid)
	}
	as(bob)
	if out := mustSessions("show", bid); strings.Contains(out, "Going on") {
		t.Fatalf("alice wrote into bob's session:\n%s", out)
	}

	// Unshared: gone again; her forks stay hers.
	mustSessions("unshare", bid, "ak_alice")
	as(alice)
	noneOfBobs(t, true)
	if out := mustSessions("show", fid); !strings.Contains(out, "Going on in my fork") || !strings.Contains(out, "ak_alice") {
		t.Fatalf("alice's fork after unshare:\n%s", out)
	}

	// The administrator sees everyone's, and says whose.
	as(carol)
	out := mustSessions("list", "--all")
	for _, want := range []string{bid[:8], aid[:8], fid[:8], "ak_bob (Bob B.)", "ak_alice (Alice A.)"} {
		if !strings.Contains(out, want) {
			t.Errorf("carol's list --all lacks %q:\n%s", want, out)
		}
	}
	if out := mustSessions("search", "zanzibar", "--all"); !strings.Contains(out, bid[:8]) || !strings.Contains(out, fid[:8]) {
		t.Errorf("carol's search --all:\n%s", out)
	}
	if out := mustSessions("list"); strings.Contains(out, bid[:8]) {
		t.Errorf("carol's own list:\n%s", out)
	}
	// Going on with Bob's, she is told the truth: nothing was shared with her.
	model.Enqueue(scripted.Reply(scripted.Text("Audited.")))
	var ao, ae bytes.Buffer
	t.Chdir(ws)
	if err := runAsk([]string{"--model", askModel, "--session", bid, "Audit it"}, strings.NewReader(""), &ao, &ae); err != nil {
		t.Fatalf("carol's ask --session: %v\n%s", err, ae.String())
	}
	if e := ae.String(); !strings.Contains(e, "which you read as an administrator of the store (it was not shared with you)") ||
		strings.Contains(e, "shared with you to read") {
		t.Errorf("carol's ask --session on bob's session says:\n%s", e)
	}
	var who bytes.Buffer
	if err := runStore([]string{"whoami"}, &who, &who); err != nil || !strings.Contains(who.String(), "administrator") {
		t.Errorf("carol's whoami: %v %s", err, who.String())
	}
}

// connectMCP connects a client to s over in-memory transports.
func connectMCP(t *testing.T, s *mcpserve.Server) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(ctx, st) //nolint:errcheck // ends with the test
	}()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

// TestOwnerNamesCannotForgeRows: Bob's display name ($KERNEL_USERNAME) is
// his to choose. With a newline, terminal escape codes and a bidi override
// in it, the session he shares with Alice is still one row of her
// sessions list --all, and one Owner: line of sessions show, with none of
// the codes reaching her terminal.
func TestOwnerNamesCannotForgeRows(t *testing.T) {
	srv, admin := sharedStore(t)
	bob := roleURL(t, srv, admin, "ak_bob")
	alice := roleURL(t, srv, admin, "ak_alice")
	model, ws := askEnv(t)
	sessions := func(args ...string) string {
		t.Helper()
		var o, e bytes.Buffer
		if err := runSessions(args, strings.NewReader(""), &o, &e); err != nil {
			t.Fatalf("sessions %v: %v\n%s%s", args, err, o.String(), e.String())
		}
		return o.String()
	}
	t.Setenv(store.EnvStore, bob)
	t.Setenv("KERNEL_USERNAME", "Bob\n0badc0de  2026-01-01 00:00  1  $0.0000  m  pay alice's bill\x1b[1A\x1b[2K\x1b]0;owned\x07\u202e")
	model.Enqueue(scripted.Reply(scripted.Text("Done.")))
	bid, err := askIn(t, ws, "A plan")
	if err != nil {
		t.Fatal(err)
	}
	sessions("share", bid, "ak_alice")

	t.Setenv(store.EnvStore, alice)
	t.Setenv("KERNEL_USERNAME", "Alice")
	clean := func(what, out string) {
		t.Helper()
		if strings.ContainsAny(out, "\x1b\x07\u202e\r") {
			t.Fatalf("%s passes control characters through: %q", what, out)
		}
	}
	list := sessions("list", "--all")
	clean("sessions list --all", list)
	if lines := strings.Split(strings.TrimRight(list, "\n"), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "ak_bob (Bob 0badc0de") {
		t.Fatalf("sessions list --all: want the header and Bob's one row, got %d lines:\n%s", len(lines), list)
	}
	show := sessions("show", bid)
	clean("sessions show", show)
	owner := 0
	for i, l := range strings.Split(show, "\n") {
		if strings.HasPrefix(l, "Owner:") {
			owner++
			if next := strings.Split(show, "\n")[i+1]; !strings.Contains(next, ":") {
				t.Fatalf("sessions show: the Owner: line goes on in %q:\n%s", next, show)
			}
		}
	}
	if owner != 1 || !strings.Contains(show, "pay alice's bill") {
		t.Fatalf("sessions show: want one Owner: line with the whole name on it:\n%s", show)
	}
}
