package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
)

const sessionsUsage = `Usage: agentkernel sessions SUBCOMMAND [flags]

Subcommands:
  list [--all | --archived] [--search TEXT] [--limit N] [--dir DIR]
                                                          your sessions of this directory (--all: all
                                                          you may see, archived included, and whose
                                                          each is), newest first
  show ID [--last N] [--before TS|#N] [--role ROLE]       a session's details and history: all of it, or
                                                          the last N messages (before TS or #N; of ROLE:
                                                          user, assistant, tool, system or meta)
  search TEXT [--session ID] [--all] [--limit N] [--dir DIR]
                                                          full-text search of your sessions of this
                                                          directory (--all: of all you may see)
  export ID [--format jsonl|ipynb] [-o FILE] [--kernel K] a session as JSONL (import format) or a notebook
  import FILE | -                                         a session exported as JSONL
  rm ID [--purge]                                         archive a session (restorable), or delete it for good
  restore ID                                              bring an archived session back
  rename ID TITLE                                         name a session ("" drops the name: the title is
                                                          its first prompt again)
  rewind ID #N|TS [--conversation-only|--no-files|--no-kernel] [--force]
                                                          go back to before message #N (see show): both
                                                          histories and the files the agent changed; the
                                                          kernel is rebuilt when the session next runs code
  fork ID #N|TS [same flags]                              a new session holding the history before #N
                                                          (of another user's session: the conversation)
  share ID ROLE                                           let ROLE (a PostgreSQL role or group) read
                                                          your session and fork it, never write it
  unshare ID ROLE                                         take that back

Every subcommand takes --json for output that scripts read. ID may be a
unique prefix of the id. The store is $AGENTKERNEL_DATA_DIR/agentkernel.db
(default ~/.local/share/agentkernel), yours alone; or a shared PostgreSQL
($AGENTKERNEL_STORE), where you see your own sessions and those shared with
you, read-only.
`

// runSessions is `agentkernel sessions`.
func runSessions(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, sessionsUsage)
		return errors.New("sessions: no subcommand given")
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, sessionsUsage)
		return nil
	case "list", "ls", "show", "search", "export", "import", "rm", "restore", "rename", "rewind", "fork", "share", "unshare":
	default:
		fmt.Fprint(stderr, sessionsUsage)
		return fmt.Errorf("sessions: unknown subcommand %q", sub)
	}
	c := &sessionsCmd{stdin: stdin, stdout: stdout, stderr: stderr}
	fs := newFlagSet("sessions "+sub, "sessions "+sub+" [flags]", stderr)
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	storeArg := app.StoreFlag(fs)
	f := addSessionsFlags(fs, sub)
	pos, err := parseArgs(fs, rest)
	if err != nil {
		return err
	}
	if err := f.checkShow(); err != nil {
		return fmt.Errorf("sessions %s: %w", sub, err)
	}
	c.json = *asJSON
	want := 1
	switch sub {
	case "list", "ls":
		want = 0
	case "rewind", "fork", "rename", "share", "unshare":
		want = 2
	}
	if len(pos) != want {
		fs.Usage()
		if want == 0 {
			return fmt.Errorf("sessions %s: unexpected argument %q", sub, pos[0])
		}
		return fmt.Errorf("sessions %s: want one argument, got %d", sub, len(pos))
	}
	log, err := newLogger(stderr)
	if err != nil {
		return err
	}
	cfg := app.Load(app.Flags{Store: *storeArg}, log)
	if err := cfg.Err(); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	ctx := context.Background()
	a, err := app.Open(ctx, cfg, app.Surface{StoreNow: true, NoHost: true, Logger: log})
	if err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	defer a.Close()
	c.app, c.st = a, a.Store
	err = c.run(ctx, sub, pos, f, log)
	if err != nil {
		return fmt.Errorf("sessions %s: %w", sub, err)
	}
	return nil
}

// sessionsFlags are the flags of the sessions subcommands (each has its
// own; the others stay zero).
type sessionsFlags struct {
	all, archived, purge     bool
	search, format, out, dir string
	kernelName, inSession    string
	limit                    int
	rewind                   session.RewindOptions
	page                     showPage
}

func addSessionsFlags(fs *flag.FlagSet, sub string) *sessionsFlags {
	f := &sessionsFlags{}
	switch sub {
	case "list", "ls":
		fs.BoolVar(&f.all, "all", false, "all the sessions you may see (yours and those shared with you, of every directory, archived ones included)")
		fs.BoolVar(&f.archived, "archived", false, "only archived sessions")
		fs.StringVar(&f.search, "search", "", "only sessions whose title, first message or id contains `TEXT`")
		fs.IntVar(&f.limit, "limit", 50, "at most `N` sessions (0: all)")
		fs.StringVar(&f.dir, "dir", ".", "the sessions started in `DIR`")
	case "search":
		fs.BoolVar(&f.all, "all", false, "search all the sessions you may see, archived ones included")
		fs.StringVar(&f.dir, "dir", ".", "search the sessions started in `DIR`")
		fs.StringVar(&f.inSession, "session", "", "search only the session `ID`")
		fs.IntVar(&f.limit, "limit", 20, "at most `N` hits")
	case "export":
		fs.StringVar(&f.format, "format", "jsonl", "jsonl (what import reads) or ipynb (a notebook of the session)")
		fs.StringVar(&f.out, "o", "", "write to `FILE` (atomically) instead of stdout")
		fs.StringVar(&f.kernelName, "kernel", "", "ipynb: the kernelspec `NAME` recorded in the notebook's metadata")
	case "show":
		fs.IntVar(&f.page.last, "last", 0, "only the last `N` messages of those --before and --role keep; 0: all")
		fs.StringVar(&f.page.before, "before", "", "only the messages older than `TS`: a ts, or #N as show numbers messages")
		fs.StringVar(&f.page.role, "role", "", "only the messages of `ROLE`: user, assistant, tool, system or meta")
	case "rm":
		fs.BoolVar(&f.purge, "purge", false, "delete the session and its histories for good instead of archiving it")
	case "rewind", "fork":
		fs.BoolVar(&f.rewind.ConversationOnly, "conversation-only", false, "leave the files and the kernel as they are")
		fs.BoolVar(&f.rewind.NoFiles, "no-files", false, "leave the files and the notebooks' cells as they are")
		fs.BoolVar(&f.rewind.NoKernel, "no-kernel", false, "leave the kernel's state (no replay when the session next runs code)")
		fs.BoolVar(&f.rewind.Force, "force", false, "overwrite files and cells changed outside the agent since (conflicts)")
	}
	return f
}

// run runs the subcommand sub with its arguments pos.
func (c *sessionsCmd) run(ctx context.Context, sub string, pos []string, f *sessionsFlags, log hclog.Logger) error {
	workspace := ""
	if !f.all {
		workspace = session.CanonicalWorkspace(f.dir)
	}
	switch sub {
	case "list", "ls":
		filter := store.LiveOnly
		if f.all {
			filter = store.AllSessions
		}
		if f.archived {
			filter = store.ArchivedOnly
		}
		return c.list(ctx, store.ListOptions{Search: f.search, Limit: limitOrAll(f.limit), Archived: filter, Workspace: workspace, Mine: !f.all})
	case "show":
		return c.show(ctx, pos[0], f.page)
	case "search":
		return c.search(ctx, pos[0], f.inSession, workspace, f.all, f.limit)
	case "export":
		return c.export(ctx, pos[0], f.format, f.out, f.kernelName)
	case "import":
		return c.importFile(ctx, pos[0])
	case "rm":
		return c.remove(ctx, pos[0], f.purge)
	case "restore":
		return c.restore(ctx, pos[0])
	case "rename":
		return c.rename(ctx, pos[0], pos[1])
	case "rewind", "fork":
		return c.rewind(ctx, pos[0], pos[1], f.rewind, sub == "fork", log)
	case "share", "unshare":
		return c.share(ctx, pos[0], pos[1], sub == "share")
	}
	return nil
}

func limitOrAll(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

type sessionsCmd struct {
	app    *app.App
	st     *store.Store
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	json   bool
}

// sessionJSON is a session as --json prints it.
type sessionJSON struct {
	ID               string     `json:"id"`
	Title            string     `json:"title"`
	DisplayName      string     `json:"display_name,omitempty"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
	Model            string     `json:"model"`
	Provider         string     `json:"provider"`
	Mode             string     `json:"mode"`
	Workspace        string     `json:"workspace"`
	Messages         int        `json:"messages"`
	APIMessages      int        `json:"api_messages"`
	InputTokens      int64      `json:"input_tokens"`
	OutputTokens     int64      `json:"output_tokens"`
	CacheReadTokens  int64      `json:"cache_read_tokens"`
	CacheWriteTokens int64      `json:"cache_write_tokens"`
	CostUSD          float64    `json:"cost_usd"`
	FirstUserMessage string     `json:"first_user_message,omitempty"`
	LastMessage      string     `json:"last_message,omitempty"`
	Archived         bool       `json:"archived"`
	ArchivedAt       *time.Time `json:"archived_at,omitempty"`
	ArchiveReason    string     `json:"archive_reason,omitempty"`
	ParentID         string     `json:"parent_id,omitempty"`
	Owner            string     `json:"owner"`
	OwnerName        string     `json:"owner_name,omitempty"`
}

func toJSON(s store.Session) sessionJSON {
	j := sessionJSON{
		ID: s.ID, Title: s.Title, DisplayName: s.DisplayName, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		Model: s.Model, Provider: s.Provider, Mode: s.Mode, Workspace: s.Workspace,
		Messages: s.MessageCount, APIMessages: s.APICount,
		InputTokens: s.Usage.TokensIn, OutputTokens: s.Usage.TokensOut,
		CacheReadTokens: s.Usage.CacheReads, CacheWriteTokens: s.Usage.CacheWrites, CostUSD: s.Usage.Cost,
		FirstUserMessage: s.FirstUserMessage, LastMessage: s.LastMessage,
		Archived: s.Archived(), ArchiveReason: s.ArchiveReason, ParentID: s.ParentID,
		Owner: s.Owner, OwnerName: s.OwnerName,
	}
	if s.Archived() {
		t := s.ArchivedAt
		j.ArchivedAt = &t
	}
	return j
}

func (c *sessionsCmd) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (c *sessionsCmd) find(ctx context.Context, ref string) (store.Session, error) {
	s, err := c.st.FindSession(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		return s, fmt.Errorf("%w (see agentkernel sessions list --all)", err)
	}
	return s, err
}

func (c *sessionsCmd) list(ctx context.Context, o store.ListOptions) error {
	list, err := c.st.ListSessions(ctx, o)
	if err != nil {
		return err
	}
	if c.json {
		out := make([]sessionJSON, 0, len(list))
		for _, s := range list {
			out = append(out, toJSON(s))
		}
		return c.printJSON(out)
	}
	if len(list) == 0 {
		if o.Workspace != "" {
			fmt.Fprintf(c.stdout, "No sessions of yours in %s (--all lists all you may see).\n", o.Workspace)
			return nil
		}
		fmt.Fprintln(c.stdout, "No sessions.")
		return nil
	}
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	head := "ID\tUPDATED\tMSGS\tCOST\tMODEL\tTITLE"
	if o.Workspace == "" {
		head += "\tOWNER\tWORKSPACE"
	}
	fmt.Fprintln(w, head)
	for _, s := range list {
		title := s.Title
		if s.Archived() {
			title = "[archived] " + title
		}
		if s.ParentID != "" {
			title = "↳ fork of " + messages.ShortID(s.ParentID) + ": " + title
		}
		line := fmt.Sprintf("%s\t%s\t%d\t$%.4f\t%s\t%s", messages.ShortID(s.ID), s.UpdatedAt.Local().Format("2006-01-02 15:04"),
			s.MessageCount, s.Usage.Cost, orDash(s.Model), messages.FirstLine(title, 60))
		if o.Workspace == "" {
			line += "\t" + orDash(s.Whose()) + "\t" + orDash(messages.Printable(s.Workspace, 0))
		}
		fmt.Fprintln(w, line)
	}
	return w.Flush()
}

func (c *sessionsCmd) search(ctx context.Context, query, session, workspace string, all bool, limit int) error {
	o := store.SearchOptions{IncludeArchived: all, Limit: limit, Workspace: workspace, Mine: !all}
	if session != "" {
		s, err := c.find(ctx, session)
		if err != nil {
			return err
		}
		o.SessionID = s.ID
	}
	if !c.json {
		o.Before, o.After = "\x1b[1m", "\x1b[0m"
		if !isTerminal(c.stdout) {
			o.Before, o.After = "**", "**"
		}
	}
	hits, err := c.st.Search(ctx, query, o)
	if err != nil {
		return err
	}
	if c.json {
		type hitJSON struct {
			SessionID string `json:"session_id"`
			TS        int64  `json:"ts"`
			Type      string `json:"type"`
			Kind      string `json:"kind"`
			Role      string `json:"role"`
			Snippet   string `json:"snippet"`
		}
		out := make([]hitJSON, 0, len(hits))
		for _, h := range hits {
			out = append(out, hitJSON{h.SessionID, h.TS, h.Type, h.Kind, h.Role, h.Snippet})
		}
		return c.printJSON(out)
	}
	if len(hits) == 0 {
		fmt.Fprintln(c.stdout, "No matches.")
		return nil
	}
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "SESSION\tWHEN\tROLE\tTEXT")
	for _, h := range hits {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", messages.ShortID(h.SessionID), time.UnixMilli(h.TS).Local().Format("2006-01-02 15:04"),
			h.Role, strings.Join(strings.Fields(h.Snippet), " "))
	}
	return w.Flush()
}

func (c *sessionsCmd) remove(ctx context.Context, ref string, purge bool) error {
	s, err := c.find(ctx, ref)
	if err != nil {
		return err
	}
	action := "archived"
	if purge {
		action = "purged"
		err = c.st.Purge(ctx, s.ID)
	} else {
		err = c.st.Archive(ctx, s.ID, "deleted with agentkernel sessions rm")
	}
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]any{"id": s.ID, "action": action})
	}
	if purge {
		fmt.Fprintf(c.stdout, "Deleted session %s for good.\n", s.ID)
	} else {
		fmt.Fprintf(c.stdout, "Archived session %s (agentkernel sessions restore %s brings it back).\n", s.ID, messages.ShortID(s.ID))
	}
	return nil
}

func (c *sessionsCmd) restore(ctx context.Context, ref string) error {
	s, err := c.find(ctx, ref)
	if err != nil {
		return err
	}
	if !s.Archived() {
		return fmt.Errorf("session %s is not archived", s.ID)
	}
	if err := c.st.Restore(ctx, s.ID); err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]any{"id": s.ID, "action": "restored"})
	}
	fmt.Fprintf(c.stdout, "Restored session %s.\n", s.ID)
	return nil
}

// rename names a session: its display name, which is its title.
func (c *sessionsCmd) rename(ctx context.Context, ref, title string) error {
	s, err := c.find(ctx, ref)
	if err != nil {
		return err
	}
	title = strings.Join(strings.Fields(title), " ")
	if err := c.st.UpdateSession(ctx, s.ID, store.SessionUpdate{DisplayName: &title}); err != nil {
		return err
	}
	s, err = c.st.GetSession(ctx, s.ID)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]any{"id": s.ID, "action": "renamed", "title": s.Title})
	}
	fmt.Fprintf(c.stdout, "Session %s is now %q.\n", messages.ShortID(s.ID), s.Title)
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// share is sessions share and unshare: read access to the user's session
// for a role or a group role (PostgreSQL).
func (c *sessionsCmd) share(ctx context.Context, ref, role string, grant bool) error {
	s, err := c.find(ctx, ref)
	if err != nil {
		return err
	}
	if grant {
		err = c.st.Share(ctx, s.ID, role)
	} else {
		err = c.st.Unshare(ctx, s.ID, role)
	}
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]any{"id": s.ID, "role": role, "shared": grant})
	}
	if grant {
		fmt.Fprintf(c.stdout, "Session %s is shared with %s: they may read and fork it, never write it "+
			"(agentkernel sessions unshare %s %s takes it back).\n", messages.ShortID(s.ID), role, messages.ShortID(s.ID), role)
	} else {
		fmt.Fprintf(c.stdout, "Session %s is no longer shared with %s.\n", messages.ShortID(s.ID), role)
	}
	return nil
}
