package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/store"
)

const logsSynopsis = `logs [--follow] [--session ID] [--date YYYY-MM-DD] [--json]

Prints the event log, oldest first: what went into the agent's sessions
(prompts, approval answers, commands) and what came out (messages created
and finished, tool calls and whether they succeeded, hook blocks, errors,
each turn's result with its cost), from every surface — notebook, web
panel, ask, run — with its time, session and source. The log is one JSONL
file per day in the data directory's logs/ (kept logRetentionDays days,
default 30, per the config file). --follow keeps printing entries as they
are written; --json prints the lines as they are stored.`

// logsFollowInterval is how often --follow looks for new lines.
const logsFollowInterval = 250 * time.Millisecond

// runLogs is `agentkernel logs`.
func runLogs(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return logsCommand(ctx, args, stdout, stderr)
}

func logsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("logs", logsSynopsis, stderr)
	follow := fs.Bool("follow", false, "keep printing entries as they are written (until interrupted)")
	session := fs.String("session", "", "only the session `ID` (or an id prefix)")
	date := fs.String("date", "", "only the day `YYYY-MM-DD`")
	asJSON := fs.Bool("json", false, "print the stored JSON lines")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("logs: unexpected argument %q", fs.Arg(0))
	}
	if *date != "" {
		if _, err := time.Parse(time.DateOnly, *date); err != nil {
			return fmt.Errorf("logs: --date %q: want YYYY-MM-DD", *date)
		}
	}
	dataDir := os.Getenv(store.EnvDataDir)
	if dataDir == "" {
		d, err := store.DataDir()
		if err != nil {
			return fmt.Errorf("logs: %w", err)
		}
		dataDir = d
	}
	p := &logPrinter{w: stdout, session: *session, json: *asJSON}
	t := logTail{dir: filepath.Join(dataDir, "logs"), date: *date, print: p.print}
	if err := t.catchUp(); err != nil {
		return err
	}
	if p.printed == 0 && p.err == nil {
		fmt.Fprintf(stderr, "No entries in %s.\n", t.dir)
	}
	if p.err != nil || !*follow || *date != "" {
		return p.err
	}
	tick := time.NewTicker(logsFollowInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return p.err
		case <-tick.C:
		}
		if err := t.catchUp(); err != nil {
			return err
		}
		if p.err != nil {
			return p.err
		}
	}
}

// logTail reads the day files from where it last stopped: the file it
// read last from its offset, and any later file from its start.
type logTail struct {
	dir   string
	date  string // only this day's file, if set
	print func(e eventlog.Entry, line []byte, ok bool) error

	file   string
	offset int64
}

func (t *logTail) catchUp() error {
	files, err := eventlog.Files(t.dir)
	if err != nil {
		return fmt.Errorf("logs: %w", err)
	}
	for _, f := range files {
		if f < t.file || (t.date != "" && filepath.Base(f) != t.date+".jsonl") {
			continue
		}
		if f != t.file {
			t.file, t.offset = f, 0
		}
		if err := t.readFrom(f); err != nil {
			return err
		}
	}
	return nil
}

// readFrom prints the complete lines of f after t.offset.
func (t *logTail) readFrom(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // removed by the retention meanwhile
	}
	if err != nil {
		return fmt.Errorf("logs: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return fmt.Errorf("logs: %w", err)
	}
	err = eventlog.Read(f, func(e eventlog.Entry, line []byte, ok bool) error {
		t.offset += int64(len(line))
		return t.print(e, line, ok)
	})
	if _, partial := eventlog.PartialTail(err); partial {
		return nil // read again once it is finished
	}
	return err
}

// logPrinter prints entries for people (or as JSON), keeping the first
// write error.
type logPrinter struct {
	w       io.Writer
	session string
	json    bool
	printed int
	err     error
}

func (p *logPrinter) print(e eventlog.Entry, line []byte, ok bool) error {
	if p.err != nil {
		return p.err
	}
	if !ok || (p.session != "" && !strings.HasPrefix(e.SessionID, p.session)) {
		return nil
	}
	p.printed++
	if p.json {
		_, p.err = p.w.Write(line)
		return p.err
	}
	_, p.err = fmt.Fprintln(p.w, formatEntry(e))
	return p.err
}

// formatEntry is an entry in one line: time, source, session, event and
// what it carries.
func formatEntry(e eventlog.Entry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %-8s  %-8s  %s", e.Time.Local().Format("2006-01-02 15:04:05"), e.Source, messages.ShortID(e.SessionID), e.Event)
	if e.Kind != "" {
		b.WriteString(" " + e.Kind)
	}
	if e.Tool != "" {
		b.WriteString(" " + e.Tool)
	}
	if e.OK != nil {
		b.WriteString(map[bool]string{true: " ok", false: " failed"}[*e.OK])
	}
	if e.By != "" {
		b.WriteString(" by " + e.By)
	}
	if e.CostUSD != nil {
		fmt.Fprintf(&b, " $%.4f (%d in, %d out)", *e.CostUSD, e.TokensIn, e.TokensOut)
	}
	if e.Text != "" {
		b.WriteString(": " + messages.FirstLine(e.Text, 160))
	}
	return b.String()
}
