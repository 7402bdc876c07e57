package eventlog_test

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentkernel/agentkernel/eventlog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func entries(t *testing.T, path string) []eventlog.Entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []eventlog.Entry
	if err := eventlog.Read(f, func(e eventlog.Entry, line []byte, ok bool) error {
		if !ok {
			t.Errorf("bad line %q", line)
		}
		out = append(out, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDayFilesScrubbingAndLimits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	now := time.Date(2026, 11, 23, 23, 59, 0, 0, time.Local)
	l := eventlog.New(eventlog.Options{Dir: dir, MaxText: 20, Now: func() time.Time { return now }})
	defer l.Close()
	l.Write(eventlog.Entry{SessionID: "s1", Source: eventlog.SourceNotebook, Event: eventlog.EventPrompt, Text: "key sk-abcdefghijklmnop"})
	l.Write(eventlog.Entry{SessionID: "s1", Source: eventlog.SourceNotebook, Event: eventlog.EventMessageFinished, Text: strings.Repeat("é", 30)})
	now = now.Add(2 * time.Minute) // the next day
	ok := true
	l.Write(eventlog.Entry{SessionID: "s1", Source: eventlog.SourceAsk, Event: eventlog.EventToolEnd, Tool: "execute_code", OK: &ok})
	l.Flush()

	files, err := eventlog.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || filepath.Base(files[0]) != "2026-11-23.jsonl" || filepath.Base(files[1]) != "2026-11-24.jsonl" {
		t.Fatalf("files %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v %v", fi.Mode(), err)
	}
	day1 := entries(t, files[0])
	if len(day1) != 2 || day1[0].Event != "prompt" || day1[0].SessionID != "s1" || day1[0].Source != "notebook" || !day1[0].Time.Equal(now.Add(-2*time.Minute)) {
		t.Fatalf("day 1 %+v", day1)
	}
	if strings.Contains(day1[0].Text, "sk-abcdefghijklmnop") || !strings.Contains(day1[0].Text, "[REDACTED]") {
		t.Errorf("not scrubbed: %q", day1[0].Text)
	}
	if day1[1].Text != strings.Repeat("é", 20) || !day1[1].Truncated {
		t.Errorf("not cut: %+v", day1[1])
	}
	day2 := entries(t, files[1])
	if len(day2) != 1 || day2[0].OK == nil || !*day2[0].OK || day2[0].Tool != "execute_code" {
		t.Errorf("day 2 %+v", day2)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatal("second Close:", err, "want net.ErrClosed")
	}
	l.Write(eventlog.Entry{Event: "prompt"}) // dropped, no panic
}

func TestRetention(t *testing.T) {
	dir := t.TempDir()
	for _, day := range []string{"2026-10-01", "2026-11-20", "2026-11-21", "notes"} {
		if err := os.WriteFile(filepath.Join(dir, day+".jsonl"), []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.Local)
	l := eventlog.New(eventlog.Options{Dir: dir, RetentionDays: 3, Now: func() time.Time { return now }})
	defer l.Close()
	l.Write(eventlog.Entry{Event: "prompt"})
	l.Flush()
	var left []string
	des, _ := os.ReadDir(dir)
	for _, d := range des {
		left = append(left, d.Name())
	}
	if got := strings.Join(left, " "); got != "2026-11-21.jsonl 2026-11-23.jsonl notes.jsonl" {
		t.Fatalf("left %s", got)
	}
}

func TestReadKeepsGoingAndStopsAtAPartialLine(t *testing.T) {
	in := "{\"event\":\"prompt\",\"text\":\"a\"}\nnot json\n{\"event\":\"result\"}\n{\"event\":\"pro"
	var got []string
	err := eventlog.Read(strings.NewReader(in), func(e eventlog.Entry, line []byte, ok bool) error {
		got = append(got, map[bool]string{true: e.Event, false: "bad:" + string(bytes.TrimSpace(line))}[ok])
		return nil
	})
	if n, ok := eventlog.PartialTail(err); !ok || n != len(`{"event":"pro`) {
		t.Fatalf("err %v", err)
	}
	if strings.Join(got, ",") != "prompt,bad:not json,result" {
		t.Fatalf("got %v", got)
	}
}

func TestUnwritableDirIsNotFatal(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	l := eventlog.New(eventlog.Options{Dir: filepath.Join(file, "logs")})
	l.Write(eventlog.Entry{Event: "prompt"})
	l.Write(eventlog.Entry{Event: "prompt"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkWrite is the cost of logging one finished message: with the
// queue full, each Write waits for one entry to be written.
func BenchmarkWrite(b *testing.B) {
	l := eventlog.New(eventlog.Options{Dir: b.TempDir()})
	defer l.Close()
	e := eventlog.Entry{SessionID: "0f8e2b7c-1234-4a5b-8c9d-0123456789ab", Source: eventlog.SourceNotebook,
		Event: eventlog.EventMessageFinished, Kind: "say:text", TS: 1763900000000,
		Text: strings.Repeat("The answer is forty-two, computed in the kernel. ", 10)}
	for b.Loop() {
		l.Write(e)
	}
}

// TestOnlyPrivatePlaces: the log is its user's. A directory widened to
// others is put back to 0700 (and its files to 0600); a directory of
// another user, or a day file that is a link to somewhere else, is never
// written, and the log goes on without failing.
func TestOnlyPrivatePlaces(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.Local)
	clock := func() time.Time { return now }
	entry := eventlog.Entry{SessionID: "s1", Event: eventlog.EventPrompt, Text: "my prompt"}

	dir := filepath.Join(t.TempDir(), "logs")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	day := filepath.Join(dir, "2026-11-23.jsonl")
	if err := os.WriteFile(day, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l := eventlog.New(eventlog.Options{Dir: dir, Now: clock})
	l.Write(entry)
	l.Close()
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(day); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if len(entries(t, day)) != 1 {
		t.Fatal("the entry is not in the log")
	}

	// A day file that is a link: not followed.
	link := filepath.Join(t.TempDir(), "logs")
	if err := os.MkdirAll(link, 0o700); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "shared.jsonl")
	if err := os.WriteFile(elsewhere, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(link, "2026-11-23.jsonl")); err != nil {
		t.Fatal(err)
	}
	l = eventlog.New(eventlog.Options{Dir: link, Now: clock})
	l.Write(entry)
	l.Close()
	if b, _ := os.ReadFile(elsewhere); len(b) != 0 {
		t.Errorf("the log followed a link: %q", b)
	}

	if os.Geteuid() != 0 {
		t.Skip("another user's directory needs root to make")
	}
	shared := filepath.Join(t.TempDir(), "logs")
	if err := os.MkdirAll(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(shared, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	l = eventlog.New(eventlog.Options{Dir: shared, Now: clock})
	l.Write(entry)
	l.Close()
	if files, err := eventlog.Files(shared); err != nil || len(files) != 0 {
		t.Errorf("written into another user's directory: %v %v", files, err)
	}
}
