package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/store"
)

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

// show is sessions show: the session's details and its history, or the
// page p of it; with --json, the session and its histories (a page: the
// UI page and where it lies).
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
		return c.printPageJSON(s, pg)
	}
	if err := c.printDetails(ctx, s); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout)
	c.printTranscript(s, p, pg)
	return nil
}

// printPageJSON is sessions show --json of a page: the page of the UI
// history and where it lies; the API history, as long as the session, is
// left out.
func (c *sessionsCmd) printPageJSON(s store.Session, pg shownPage) error {
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

// printDetails prints what sessions show says of a session before its
// history: its names, times, model, whose it is and who may read it, its
// size, tokens and cost, and whether it is archived or a fork.
func (c *sessionsCmd) printDetails(ctx context.Context, s store.Session) error {
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
	return w.Flush()
}

// printTranscript prints the page pg of s's history as sessions show
// lists it: a line per message with its #N, under a line saying which
// messages they are when p asked for a page, and the command for the
// older ones when there are.
func (c *sessionsCmd) printTranscript(s store.Session, p showPage, pg shownPage) {
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
			return
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
