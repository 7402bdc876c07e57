// Package eventlog is agentkernel's daily log of what went into and came out
// of its agent sessions: one JSONL file per day, logs/YYYY-MM-DD.jsonl under
// the data directory, each line an [Entry] with its time, session and source.
//
// Use [New] to get a [Log] and [Log.Write] to add entries; the session host
// writes them for every surface. Secrets are scrubbed from every entry's
// text (package internal/redact), and files older than the retention are
// removed when a day's file is opened. [Files] and [Read] are for readers
// (agentkernel logs).
//
// The log is its user's: it is written only into a directory of theirs
// (0700, under their data directory), in files of theirs (0600); a
// directory another user owns, or a file that is a link or not theirs, is
// not written (the failure is logged once a day), so that no one's prompts
// land in a shared place.
package eventlog

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/internal/private"
	"github.com/agentkernel/agentkernel/internal/redact"
)

// Source is the surface an entry came from.
type Source string

// The sources.
const (
	SourceNotebook Source = "notebook" // a Jupyter frontend: prompt cells, magics, stdin
	SourcePanel    Source = "panel"    // the web panel
	SourceAsk      Source = "ask"      // agentkernel ask
	SourceRun      Source = "run"      // agentkernel run
)

// The events of an entry. Inputs: EventPrompt, EventAnswer, EventCommand;
// the rest are outputs.
const (
	EventPrompt          = "prompt"           // Text: the user's prompt; Images: how many it has
	EventAnswer          = "answer"           // Kind: the response; By: who; TS: the ask
	EventCommand         = "command"          // Kind: cancel, rewind, fork, edit, mode, model, new, resume; Text: its argument
	EventMessageCreated  = "message_created"  // Kind: say:… or ask:…; TS; Text unless it is still streaming
	EventMessageFinished = "message_finished" // Kind; TS; Text: the finished message
	EventToolStart       = "tool_start"       // Tool, ToolID
	EventToolEnd         = "tool_end"         // Tool, ToolID, OK
	EventHook            = "hook"             // Kind: blocked; Tool; Text: the event and the reason
	EventResult          = "result"           // the turn ended: Kind completed|ended|cancelled, cost and tokens of the turn
	EventError           = "error"            // Kind: tool or hook; Text
)

// Entry is one line of the log.
type Entry struct {
	Time      time.Time `json:"time"`
	SessionID string    `json:"session_id,omitempty"`
	Source    Source    `json:"source,omitempty"`
	Event     string    `json:"event"`
	Kind      string    `json:"kind,omitempty"`
	TS        int64     `json:"ts,omitempty"`
	Tool      string    `json:"tool,omitempty"`
	ToolID    string    `json:"tool_id,omitempty"`
	OK        *bool     `json:"ok,omitempty"`
	By        string    `json:"by,omitempty"`
	Text      string    `json:"text,omitempty"`
	// Truncated is set when Text was cut to the log's limit.
	Truncated bool `json:"truncated,omitempty"`
	// Images counts the images attached to a prompt or an answer; the
	// images themselves are not logged.
	Images    int      `json:"images,omitempty"`
	CostUSD   *float64 `json:"cost_usd,omitempty"`
	TokensIn  int      `json:"tokens_in,omitempty"`
	TokensOut int      `json:"tokens_out,omitempty"`
}

// Options configures a Log. The zero value of every field but Dir works.
type Options struct {
	// Dir holds the day files (the data directory's "logs"). Required. It
	// is created (0700) on the first write; an existing one must be the
	// user's (it is tightened to 0700).
	Dir string
	// RetentionDays is how many days of files are kept, today's included.
	// Default 30.
	RetentionDays int
	// MaxText caps an entry's text, in characters. Default 4,000.
	MaxText int
	// Now is the clock; default time.Now. Days are local dates.
	Now func() time.Time
	// Logger receives write errors (once per day file). Default: a null
	// logger.
	Logger hclog.Logger
}

// Log appends entries to the day's file. Write only queues an entry: a
// goroutine the Log owns scrubs, encodes and writes it, so a session's turn
// does not wait for the disk. Its methods are safe for concurrent use, also
// by several processes on one directory (each line is one append). A write
// error is logged, never returned: the log never stops a session. Close
// writes what is queued and stops the goroutine; it is idempotent.
type Log struct {
	o   Options
	sc  *redact.Scrubber
	log hclog.Logger

	mu     sync.RWMutex // Write holds it shared while it queues; Close exclusively
	closed bool
	queue  chan item
	start  sync.Once     // starts the writer, on the first Write or in Close
	done   chan struct{} // closed when the writer has stopped

	// The writer goroutine's own:
	day    string
	f      *os.File
	failed string // the day whose file failed to open: not retried that day
}

// item is an entry to write, or (flushed set) a request to say when what
// was queued before it is written.
type item struct {
	e       Entry
	flushed chan struct{}
}

// New returns a Log writing to o.Dir. It touches nothing until the first
// Write.
func New(o Options) *Log {
	if o.RetentionDays <= 0 {
		o.RetentionDays = 30
	}
	if o.MaxText <= 0 {
		o.MaxText = 4000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return &Log{o: o, sc: redact.New(nil, true), log: o.Logger.Named("eventlog"),
		queue: make(chan item, 1024), done: make(chan struct{})}
}

// Dir returns the directory of the day files.
func (l *Log) Dir() string { return l.o.Dir }

// Write queues e, stamped now when its Time is zero, to be written with
// its text scrubbed of secrets and cut to MaxText. It waits only when 1,024
// entries are already queued. After Close it does nothing.
func (l *Log) Write(e Entry) {
	if l == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = l.o.Now()
	}
	l.send(item{e: e})
}

// Flush returns once every entry queued before it is written.
func (l *Log) Flush() {
	if l == nil {
		return
	}
	ch := make(chan struct{})
	if l.send(item{flushed: ch}) {
		<-ch
	}
}

// send queues it, starting the writer on first use; false after Close.
func (l *Log) send(it item) bool {
	l.start.Do(func() { go l.writer() })
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return false
	}
	l.queue <- it
	return true
}

// writer writes the queued entries until Close.
func (l *Log) writer() {
	defer close(l.done)
	for it := range l.queue {
		if it.flushed != nil {
			close(it.flushed)
			continue
		}
		l.write(it.e)
	}
	if l.f != nil {
		if err := l.f.Close(); err != nil {
			l.log.Warn("close the event log", "error", err)
		}
	}
}

// write writes one entry to its day's file.
func (l *Log) write(e Entry) {
	e.Text = l.sc.String(e.Text)
	if utf8.RuneCountInString(e.Text) > l.o.MaxText {
		e.Text, e.Truncated = string([]rune(e.Text)[:l.o.MaxText]), true
	}
	line, err := json.Marshal(e)
	if err != nil {
		l.log.Warn("encode an entry", "error", err)
		return
	}
	line = append(line, '\n')
	f := l.file(e.Time.Local().Format(time.DateOnly))
	if f == nil {
		return
	}
	if _, err := f.Write(line); err != nil {
		l.log.Warn("write the event log", "file", f.Name(), "error", err)
	}
}

// file returns the file of day, opening it (and removing files past the
// retention) when the day changes.
func (l *Log) file(day string) *os.File {
	if day == l.day && l.f != nil {
		return l.f
	}
	if day == l.failed {
		return nil
	}
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	if err := private.Dir(l.o.Dir); err != nil {
		l.failed = day
		l.log.Warn("the event log's directory is not private: not written (set AGENTKERNEL_DATA_DIR to a directory of yours)",
			"dir", l.o.Dir, "error", err)
		return nil
	}
	f, err := openPrivate(filepath.Join(l.o.Dir, day+".jsonl"))
	if err != nil {
		l.failed = day
		l.log.Warn("open the event log", "error", err)
		return nil
	}
	l.f, l.day = f, day
	l.prune(day)
	return f
}

// openPrivate opens a day file to append, creating it 0600: never through
// a symbolic link, and only a regular file of the user's (put back to 0600
// if something widened it).
func openPrivate(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && (!st.Mode().IsRegular() || !private.Owned(st)) {
		err = fmt.Errorf("%s is not a file of yours", path)
	}
	if err == nil && st.Mode().Perm()&0o077 != 0 {
		err = f.Chmod(0o600)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// prune removes the day files older than the retention, counted back
// from today.
func (l *Log) prune(today string) {
	t, err := time.ParseInLocation(time.DateOnly, today, time.Local)
	if err != nil {
		return
	}
	oldest := t.AddDate(0, 0, -(l.o.RetentionDays - 1)).Format(time.DateOnly)
	files, err := Files(l.o.Dir)
	if err != nil {
		l.log.Warn("list the event log", "error", err)
		return
	}
	for _, f := range files {
		if day := dayOf(f); day < oldest {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				l.log.Warn("remove an old event log", "file", f, "error", err)
			}
		}
	}
}

// Close writes what is queued, closes the day's file and stops the
// writer. Writes after Close are dropped. A second call returns
// net.ErrClosed (a nil Log's, nil).
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return net.ErrClosed
	}
	l.closed = true
	close(l.queue)
	l.mu.Unlock()
	l.start.Do(func() { go l.writer() }) // one that never wrote stops at once
	<-l.done
	return nil
}

// Files returns the day files in dir, oldest first. A missing dir has none.
func Files(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.Type().IsRegular() && filepath.Ext(name) == ".jsonl" {
			if _, err := time.Parse(time.DateOnly, dayOf(name)); err == nil {
				out = append(out, filepath.Join(dir, name))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// dayOf returns the YYYY-MM-DD of a day file's path.
func dayOf(path string) string {
	base := filepath.Base(path)
	return base[:len(base)-len(filepath.Ext(base))]
}

// Read calls f for each entry of r, in order, with its line. A line that
// is not an entry is passed with ok false (a log written by another
// version, or cut short by a crash), and reading goes on.
func Read(r io.Reader, f func(e Entry, line []byte, ok bool) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var e Entry
			ok := json.Unmarshal(line, &e) == nil && e.Event != ""
			if ferr := f(e, line, ok); ferr != nil {
				return ferr
			}
		} else if len(line) > 0 {
			// A line still being written: left for the next read.
			return errPartial{n: len(line)}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("eventlog: read: %w", err)
		}
	}
}

// errPartial reports a last line without its newline, n bytes long.
type errPartial struct{ n int }

func (e errPartial) Error() string { return fmt.Sprintf("eventlog: a partial line of %d bytes", e.n) }

// PartialTail returns the length of an unfinished last line that Read
// stopped at, if that is why it returned err.
func PartialTail(err error) (int, bool) {
	var p errPartial
	if errors.As(err, &p) {
		return p.n, true
	}
	return 0, false
}
