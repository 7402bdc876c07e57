package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/notebooks"
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

// showPage is the part of a session's UI history that sessions show
// prints: with no flag, all of it.
type showPage struct {
	last   int    // the last N messages; 0: all
	before string // TS or #N: only the messages before it
	role   string // only the messages of this role
}

func (p showPage) paged() bool { return p.last != 0 || p.before != "" || p.role != "" }

// checkShow checks the flags of sessions show before the store is opened.
func (f *sessionsFlags) checkShow() error {
	p := f.page
	if p.last < 0 {
		return fmt.Errorf("--last %d: want a number of messages (0: all)", p.last)
	}
	if p.before != "" {
		if _, _, err := parseBefore(p.before); err != nil {
			return err
		}
	}
	if err := store.CheckRole(p.role); err != nil {
		return fmt.Errorf("--role: %w", err)
	}
	return nil
}

// parseBefore parses --before: a message's ts, or #N (its place in the
// history, as show prints it).
func parseBefore(v string) (ts int64, n int, err error) {
	if rest, ok := strings.CutPrefix(v, "#"); ok {
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 {
			return 0, 0, fmt.Errorf("--before %q: want a message's ts or #N (see sessions show)", v)
		}
		return 0, n, nil
	}
	ts, err = strconv.ParseInt(v, 10, 64)
	if err != nil || ts <= 0 {
		return 0, 0, fmt.Errorf("--before %q: want a message's ts or #N (see sessions show)", v)
	}
	return ts, -1, nil
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

// shownPage is the part of the UI history that sessions show prints.
type shownPage struct {
	UI       []messages.UIMessage
	Index    []int // each message's #N: its place in the whole history
	Matching int   // the messages of --role (all without it) in the whole history
	Older    bool  // messages that pass --before and --role lie before the page
	// Hidden counts the bookkeeping rows (requests, reasoning, checkpoints)
	// between the page's messages that a transcript does not list.
	Hidden int
}

// page reads the part p of a session's UI history through Store.PageUI:
// the rows of the page only, however long the session. With listed (a
// transcript's test), --last counts the messages it lists, and the rows it
// does not list between them are counted in Hidden.
func (c *sessionsCmd) page(ctx context.Context, id string, p showPage, listed func(messages.UIMessage) bool) (shownPage, error) {
	var out shownPage
	q := store.UIPage{Last: p.last, Role: p.role}
	if p.before != "" {
		ts, n, err := parseBefore(p.before)
		if err != nil {
			return out, err
		}
		if n >= 0 {
			m, err := c.st.LoadUI(ctx, id, store.Page{Offset: n, Limit: 1})
			if err != nil {
				return out, err
			}
			if len(m) == 0 {
				return out, fmt.Errorf("--before %s: no such message (see sessions show)", p.before)
			}
			ts = m[0].TS
		}
		q.Before = ts
	}
	var ui []messages.UIMessage
	var err error
	if p.last > 0 && listed != nil {
		ui, out.Hidden, err = c.lastListed(ctx, id, q, p.last+1, listed)
	} else {
		if q.Last > 0 {
			q.Last++ // one more tells whether older messages remain
		}
		ui, err = c.st.PageUI(ctx, id, q)
		if listed != nil {
			n := len(ui)
			ui = slices.DeleteFunc(ui, func(m messages.UIMessage) bool { return !listed(m) })
			out.Hidden = n - len(ui)
		}
	}
	if err != nil {
		return out, err
	}
	if p.last > 0 && len(ui) > p.last {
		ui, out.Older = ui[1:], true
	}
	ts := make([]int64, len(ui))
	for i, m := range ui {
		ts[i] = m.TS
	}
	if out.Index, err = c.st.UIIndexes(ctx, id, ts); err != nil {
		return out, err
	}
	if out.Matching, err = c.st.CountUI(ctx, id, p.role); err != nil {
		return out, err
	}
	out.UI = ui
	return out, nil
}

// lastListed returns the last n messages of q (its Before and Role) that
// listed takes, oldest first, reading the history back in pages, and how
// many it passed over between the first n-1 of them (newest first).
func (c *sessionsCmd) lastListed(ctx context.Context, id string, q store.UIPage, n int, listed func(messages.UIMessage) bool) ([]messages.UIMessage, int, error) {
	const batch = 128
	var kept []messages.UIMessage // newest first
	hidden, gap := 0, 0
	for len(kept) < n {
		q.Last = batch
		page, err := c.st.PageUI(ctx, id, q)
		if err != nil {
			return nil, 0, err
		}
		for i := len(page) - 1; i >= 0 && len(kept) < n; i-- {
			if !listed(page[i]) {
				gap++
				continue
			}
			if len(kept) > 0 && len(kept) <= n-2 { // between two of the first n-1
				hidden += gap
			}
			gap = 0
			kept = append(kept, page[i])
		}
		if len(page) < batch {
			break
		}
		q.Before = page[0].TS
	}
	slices.Reverse(kept)
	return kept, hidden, nil
}

func (c *sessionsCmd) show(ctx context.Context, ref string, p showPage) error {
	s, err := c.find(ctx, ref)
	if err != nil {
		return err
	}
	if c.json && !p.paged() {
		h, err := c.st.Load(ctx, s.ID)
		if err != nil {
			return err
		}
		return c.printJSON(struct {
			Session sessionJSON           `json:"session"`
			UI      []messages.UIMessage  `json:"ui"`
			API     []messages.APIMessage `json:"api"`
		}{toJSON(s), nonNil(h.UI), nonNil(h.API)})
	}
	listed := func(m messages.UIMessage) bool { return transcriptLine(m) != "" }
	if c.json {
		listed = nil // the page as stored
	}
	pg, err := c.page(ctx, s.ID, p, listed)
	if err != nil {
		return err
	}
	if c.json {
		// A page of the UI history and where it lies; the API history,
		// as long as the session, is left out.
		type pageJSON struct {
			Index      []int `json:"index"`
			Matching   int   `json:"matching"`
			Older      bool  `json:"older"`
			NextBefore int64 `json:"next_before,omitempty"`
		}
		j := pageJSON{Index: nonNil(pg.Index), Matching: pg.Matching, Older: pg.Older}
		if pg.Older {
			j.NextBefore = pg.UI[0].TS
		}
		return c.printJSON(struct {
			Session sessionJSON          `json:"session"`
			UI      []messages.UIMessage `json:"ui"`
			Page    pageJSON             `json:"page"`
		}{toJSON(s), nonNil(pg.UI), j})
	}
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "ID:\t%s\n", s.ID)
	fmt.Fprintf(w, "Title:\t%s\n", s.Title)
	fmt.Fprintf(w, "Created:\t%s\n", s.CreatedAt.Local().Format(time.DateTime))
	fmt.Fprintf(w, "Updated:\t%s\n", s.UpdatedAt.Local().Format(time.DateTime))
	fmt.Fprintf(w, "Model:\t%s\n", orDash(s.Model))
	fmt.Fprintf(w, "Mode:\t%s\n", orDash(s.Mode))
	fmt.Fprintf(w, "Workspace:\t%s\n", orDash(messages.Printable(s.Workspace, 0)))
	if s.Owner != "" {
		fmt.Fprintf(w, "Owner:\t%s\n", s.Whose())
	}
	if err := c.st.CheckWritable(s); err != nil {
		fmt.Fprintf(w, "Access:\tread-only (fork it to continue: agentkernel sessions fork %s #N)\n", messages.ShortID(s.ID))
	} else if sh, err := c.st.Shares(ctx, s.ID); err != nil {
		return err
	} else if len(sh) > 0 {
		names := make([]string, len(sh))
		for i, g := range sh {
			names[i] = g.Grantee
		}
		fmt.Fprintf(w, "Shared with:\t%s (read-only)\n", strings.Join(names, ", "))
	}
	fmt.Fprintf(w, "Messages:\t%d shown, %d sent to the model\n", s.MessageCount, s.APICount)
	fmt.Fprintf(w, "Tokens:\t%d in, %d out, %d cache read, %d cache write\n", s.Usage.TokensIn, s.Usage.TokensOut, s.Usage.CacheReads, s.Usage.CacheWrites)
	fmt.Fprintf(w, "Cost:\t$%.4f\n", s.Usage.Cost)
	if s.Archived() {
		fmt.Fprintf(w, "Archived:\t%s (%s)\n", s.ArchivedAt.Local().Format(time.DateTime), s.ArchiveReason)
	}
	if s.ParentID != "" {
		fmt.Fprintf(w, "Forked from:\t%s (before the message at ts %d)\n", s.ParentID, s.ForkTS)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout)
	if p.paged() {
		what := "messages"
		if p.role != "" {
			what = p.role + " messages"
		}
		if len(pg.UI) == 0 {
			fmt.Fprintf(c.stdout, "No %s", what)
			if p.before != "" {
				fmt.Fprintf(c.stdout, " before %s", p.before)
			}
			fmt.Fprintf(c.stdout, " (%d in all).\n", pg.Matching)
			return nil
		}
		fmt.Fprintf(c.stdout, "%d of %d %s, #%d to #%d", len(pg.UI), pg.Matching, what, pg.Index[0], pg.Index[len(pg.Index)-1])
		if pg.Hidden > 0 {
			fmt.Fprintf(c.stdout, " (and %d bookkeeping rows between them, not listed: requests, reasoning, checkpoints; --json has them)", pg.Hidden)
		}
		fmt.Fprintln(c.stdout, ":")
	}
	// #N is the message's place in the UI history, as %agent history and
	// sessions rewind/fork take it.
	for i, m := range pg.UI {
		if line := transcriptLine(m); line != "" {
			fmt.Fprintf(c.stdout, "#%-4d %s\n", pg.Index[i], line)
		}
	}
	if pg.Older {
		more := fmt.Sprintf("agentkernel sessions show %s --last %d --before #%d", s.ID, p.last, pg.Index[0])
		if p.role != "" {
			more += " --role " + p.role
		}
		fmt.Fprintf(c.stdout, "\nOlder messages: %s\n", more)
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// transcriptLine is one UI message for people, or "" for bookkeeping.
func transcriptLine(m messages.UIMessage) string {
	when := time.UnixMilli(m.TS).Local().Format("15:04:05")
	text := strings.TrimSpace(m.Text)
	if r := []rune(text); len(r) > 400 {
		text = string(r[:399]) + "…"
	}
	indent := func(s string) string { return strings.ReplaceAll(s, "\n", "\n           ") }
	if m.Type == messages.TypeAsk {
		if m.Ask == messages.AskCompletionResult && text == "" {
			return ""
		}
		return fmt.Sprintf("%s  ask %s: %s", when, m.Ask, indent(text))
	}
	switch m.Say {
	case messages.SayAPIReqStarted, messages.SayAPIReqFinished, messages.SayAPIReqRetried,
		messages.SayCheckpointSaved, messages.SayKernelStatus, messages.SayReasoning:
		return ""
	case messages.SayText, messages.SayUserFeedback:
		if text == "" {
			return ""
		}
		return fmt.Sprintf("%s  %s", when, indent(text))
	}
	if text == "" {
		return ""
	}
	return fmt.Sprintf("%s  [%s] %s", when, m.Say, indent(text))
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

func (c *sessionsCmd) export(ctx context.Context, ref, format, out, kernelName string) error {
	if format != "jsonl" && format != "ipynb" {
		return fmt.Errorf("--format %q: want jsonl or ipynb", format)
	}
	s, err := c.find(ctx, ref)
	if err != nil {
		return err
	}
	var ks *notebooks.KernelspecMeta
	if kernelName != "" {
		if format != "ipynb" {
			return errors.New("--kernel applies to --format ipynb only")
		}
		spec, err := client.FindSpec(kernelName)
		if err != nil {
			return err
		}
		ks = &notebooks.KernelspecMeta{Name: spec.Name, DisplayName: spec.DisplayName, Language: spec.Language}
	}
	if format == "jsonl" {
		if out == "" || out == "-" {
			return c.st.Export(ctx, s.ID, c.stdout)
		}
		return writeAtomic(out, func(w io.Writer) error { return c.st.Export(ctx, s.ID, w) })
	}
	h, err := c.st.Load(ctx, s.ID)
	if err != nil {
		return err
	}
	nb, err := app.SessionNotebook(s, h, ks)
	if err != nil {
		return err
	}
	if out == "" || out == "-" {
		return notebooks.Write(c.stdout, nb)
	}
	return notebooks.WriteFile(out, nb)
}

// writeAtomic writes path through a temporary file in its directory,
// renamed over it when write succeeds; on failure path is untouched.
func writeAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func (c *sessionsCmd) importFile(ctx context.Context, path string) error {
	var r io.Reader = c.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	s, err := c.st.Import(ctx, r)
	if errors.Is(err, store.ErrExists) {
		return fmt.Errorf("%w: the session in %s is already in the store (rm --purge it first to replace it)", err, path)
	}
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(toJSON(s))
	}
	fmt.Fprintf(c.stdout, "Imported session %s (%s)\n", s.ID, s.Title)
	return nil
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

// rewind is sessions rewind and sessions fork: the host's own rewind, with
// no kernel here (the session's kernel state is rebuilt when it next runs
// code) and the files in the workspace the session recorded.
func (c *sessionsCmd) rewind(ctx context.Context, ref, at string, opts session.RewindOptions, fork bool, log hclog.Logger) error {
	s, err := c.find(ctx, ref)
	if err != nil {
		return err
	}
	if err := c.st.CheckWritable(s); err != nil {
		if !fork {
			return err
		}
		return c.forkOthers(ctx, s, at)
	}
	w, err := c.app.OpenWorkspace(s.Workspace, s.Mode)
	if err != nil {
		return err
	}
	defer w.Close()
	h := w.Host
	if _, err := h.ResumeOwn(ctx, s.ID); err != nil {
		return err
	}
	ts, err := h.Conversation().Ref(at)
	if err != nil {
		return err
	}
	var (
		rw   session.Rewound
		info session.Info
	)
	if fork {
		info, rw, err = h.World().Fork(ctx, ts, opts)
	} else {
		rw, err = h.World().Rewind(ctx, ts, opts)
	}
	if err != nil {
		return err
	}
	if c.json {
		out := map[string]any{"session_id": s.ID, "removed": rw.Removed, "ui": rw.UI, "api": rw.API,
			"files": rw.Files, "kernel": rw.Kernel, "kernel_note": rw.KernelNote}
		if fork {
			out["fork_id"] = info.ID
		}
		return c.printJSON(out)
	}
	if fork {
		fmt.Fprintf(c.stdout, "Forked %s at %s: new session %s (%d messages).\n", messages.ShortID(s.ID), at, info.ID, info.Messages)
		if rw.Files != nil || rw.KernelNote != "" {
			if _, rest, ok := strings.Cut(rw.Summary(), "\n"); ok {
				fmt.Fprintln(c.stdout, rest)
			}
		}
		return nil
	}
	fmt.Fprintln(c.stdout, rw.Summary())
	return nil
}

// forkOthers is sessions fork of another user's session, shared with the
// user: a session of their own with its conversation before at (#N or a
// ts, as show numbers them), never the other's files or kernel.
func (c *sessionsCmd) forkOthers(ctx context.Context, s store.Session, at string) error {
	ts, n, err := parseBefore(at)
	if err != nil {
		return fmt.Errorf("%q: want #N or a message's ts (see sessions show)", at)
	}
	if n >= 0 {
		m, err := c.st.LoadUI(ctx, s.ID, store.Page{Offset: n, Limit: 1})
		if err != nil {
			return err
		}
		if len(m) == 0 {
			return fmt.Errorf("%s: no such message (see sessions show %s)", at, messages.ShortID(s.ID))
		}
		ts = m[0].TS
	}
	fork, err := c.st.ForkSession(ctx, s.ID, ts)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]any{"session_id": s.ID, "fork_id": fork.ID, "ui": fork.MessageCount, "owner": s.Owner})
	}
	fmt.Fprintf(c.stdout, "Forked %s's session %s at %s: your own session %s (%d messages). Its files and kernel stay %s's.\n",
		s.Whose(), messages.ShortID(s.ID), at, fork.ID, fork.MessageCount, s.Owner)
	return nil
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
