package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/store"
)

// envAdminURL names the variable that may hold --admin-url, so that the
// administrator's password stays off command lines.
const envAdminURL = "AGENTKERNEL_ADMIN_URL"

const storeUsage = `Usage: agentkernel store SUBCOMMAND [flags]

A shared PostgreSQL store: each user connects as a role of their own, and
row-level security shows them their own sessions and those shared with them.

Subcommands:
  init --admin-url URL [--existing-owner ROLE]
                      create or upgrade the schema and its row-level security, as
                      the role that owns it (a superuser, or a role with CREATEROLE);
                      safe to run again: it repairs the policies and grants, and
                      takes away (and names) any beyond the documented set
  grant ROLE [--admin] --admin-url URL
                      let the login ROLE use the store (a member of ` + store.UserRole + `),
                      or with --admin see and clean up every user's sessions
                      (` + store.AdminRole + `)
  revoke ROLE --admin-url URL
                      take both away (ROLE's sessions stay)
  whoami [--store URL]
                      open the store as you would and say who you are in it

--admin-url defaults to $` + envAdminURL + `. Users' kernels never get it: they
get a URL of their own role (docs/scale-out.md).
`

// runStore is `agentkernel store`.
func runStore(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, storeUsage)
		return errors.New("store: no subcommand given")
	}
	sub, rest := args[0], args[1:]
	fs := newFlagSet("store "+sub, "store "+sub+" [flags]", stderr)
	adminURL := fs.String("admin-url", os.Getenv(envAdminURL), "the database as the schema owner or an administrator: a postgres:// `URL`")
	var existing *string
	var admin *bool
	var storeArg *string
	want := 0
	switch sub {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, storeUsage)
		return nil
	case "init":
		existing = fs.String("existing-owner", "", "the `ROLE` that owns the rows written before sessions had owners "+
			"(default: the tables' owner, unless a superuser; then "+store.AdminRole+")")
	case "grant":
		admin = fs.Bool("admin", false, "make ROLE an administrator ("+store.AdminRole+"), who sees every user's sessions")
		want = 1
	case "revoke":
		want = 1
	case "whoami":
		storeArg = app.StoreFlag(fs)
	default:
		fmt.Fprint(stderr, storeUsage)
		return fmt.Errorf("store: unknown subcommand %q", sub)
	}
	pos, err := parseArgs(fs, rest)
	if err != nil {
		return err
	}
	if len(pos) != want {
		fs.Usage()
		return fmt.Errorf("store %s: want %d arguments, got %d", sub, want, len(pos))
	}
	if sub != "whoami" && *adminURL == "" {
		return fmt.Errorf("store %s: no --admin-url (or $%s)", sub, envAdminURL)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch sub {
	case "init":
		return storeInit(ctx, store.InitOptions{AdminURL: *adminURL, ExistingOwner: *existing}, stdout)
	case "grant":
		return storeGrant(ctx, *adminURL, pos[0], *admin, stdout)
	case "revoke":
		if err := store.Revoke(ctx, *adminURL, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s can no longer use the store (their sessions stay).\n", pos[0])
		return nil
	}
	return whoami(ctx, *storeArg, stdout, stderr)
}

// storeInit is store init: the schema brought up to date with its
// row-level security, and what that did and what the administrator does
// next.
func storeInit(ctx context.Context, o store.InitOptions, stdout io.Writer) error {
	rep, err := store.Init(ctx, o)
	if err != nil {
		return err
	}
	if rep.From == rep.To {
		fmt.Fprintf(stdout, "The store at %s is at schema %d; its row-level security is in place.\n", store.RedactURL(o.AdminURL), rep.To)
	} else {
		fmt.Fprintf(stdout, "The store at %s went from schema %d to %d, with row-level security on every table.\n",
			store.RedactURL(o.AdminURL), rep.From, rep.To)
	}
	for _, r := range rep.Removed {
		fmt.Fprintf(stdout, "Removed, as wider than documented: %s.\n", r)
	}
	if rep.ExistingOwner != "" {
		fmt.Fprintf(stdout, "The sessions written before owners are %s's.\n", rep.ExistingOwner)
	}
	fmt.Fprintf(stdout, "The tables are %s's: use that role for init only. Give each user a login role of their own:\n"+
		"  CREATE ROLE alice LOGIN PASSWORD '…';  agentkernel store grant alice\n", rep.Owner)
	return nil
}

// storeGrant is store grant ROLE [--admin]: the role made a user (or an
// administrator) of the store.
func storeGrant(ctx context.Context, adminURL, role string, admin bool, stdout io.Writer) error {
	if err := store.Grant(ctx, adminURL, role, admin); err != nil {
		return err
	}
	what := "a user of the store: they see their own sessions and those shared with them"
	if admin {
		what = "an administrator of the store: they see every user's sessions"
	}
	fmt.Fprintf(stdout, "%s is %s.\n", role, what)
	return nil
}

// whoami opens the store as the sessions command does and says whose
// sessions it shows.
func whoami(ctx context.Context, storeURL string, stdout, stderr io.Writer) error {
	log, err := newLogger(stderr)
	if err != nil {
		return err
	}
	cfg := app.Load(app.Flags{Store: storeURL}, log)
	if err := cfg.Err(); err != nil {
		return fmt.Errorf("store whoami: %w", err)
	}
	a, err := app.Open(ctx, cfg, app.Surface{StoreNow: true, NoHost: true, Logger: log})
	if err != nil {
		return fmt.Errorf("store whoami: %w", err)
	}
	defer a.Close()
	st := a.Store
	switch {
	case !st.Postgres():
		fmt.Fprintf(stdout, "%s: a SQLite file of the OS user %s, private to them.\n", st.Path(), st.User())
	case st.Admin():
		fmt.Fprintf(stdout, "%s: you are %s, an administrator: you see every user's sessions.\n", st.Path(), st.User())
	default:
		fmt.Fprintf(stdout, "%s: you are %s: you see your own sessions and those shared with you.\n", st.Path(), st.User())
	}
	return nil
}
