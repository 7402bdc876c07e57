package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/eventlog"
)

// syncBuffer is a bytes.Buffer safe for the follower and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLogsCommand(t *testing.T) {
	data := t.TempDir()
	t.Setenv("AGENTKERNEL_DATA_DIR", data)
	l := eventlog.New(eventlog.Options{Dir: filepath.Join(data, "logs")})
	defer l.Close()
	cost := 0.0123
	yes := true
	l.Write(eventlog.Entry{SessionID: "aaaa1111-x", Source: eventlog.SourceNotebook, Event: eventlog.EventPrompt, Text: "plot it\nplease"})
	l.Write(eventlog.Entry{SessionID: "bbbb2222-y", Source: eventlog.SourceAsk, Event: eventlog.EventToolEnd, Tool: "execute_code", OK: &yes})
	l.Write(eventlog.Entry{SessionID: "aaaa1111-x", Source: eventlog.SourceNotebook, Event: eventlog.EventResult, Kind: "completed", CostUSD: &cost, TokensIn: 100, TokensOut: 20})
	l.Flush()

	var out, errOut bytes.Buffer
	if err := logsCommand(context.Background(), []string{"--session", "aaaa"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "notebook  aaaa1111  prompt: plot it") ||
		!strings.Contains(lines[1], "result completed $0.0123 (100 in, 20 out)") {
		t.Fatalf("output:\n%s", out.String())
	}
	out.Reset()
	if err := logsCommand(context.Background(), []string{"--json"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var e eventlog.Entry
	lines = strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || json.Unmarshal([]byte(lines[1]), &e) != nil || e.Tool != "execute_code" || e.OK == nil || !*e.OK {
		t.Fatalf("json output:\n%s", out.String())
	}
	if err := logsCommand(context.Background(), []string{"extra"}, &out, &errOut); err == nil {
		t.Error("an argument was accepted")
	}
	out.Reset()
	if err := logsCommand(context.Background(), []string{"--session", "cccc"}, &out, &errOut); err != nil || out.Len() != 0 ||
		!strings.Contains(errOut.String(), "No entries in "+filepath.Join(data, "logs")) {
		t.Errorf("no match: %v %q %q", err, out.String(), errOut.String())
	}

	// --follow prints what is written later, until its context ends.
	ctx, cancel := context.WithCancel(context.Background())
	var follow syncBuffer
	done := make(chan error, 1)
	go func() { done <- logsCommand(ctx, []string{"--follow", "--session", "bbbb"}, &follow, &errOut) }()
	l.Write(eventlog.Entry{SessionID: "bbbb2222-y", Source: eventlog.SourcePanel, Event: eventlog.EventCommand, Kind: "cancel"})
	l.Write(eventlog.Entry{SessionID: "aaaa1111-x", Source: eventlog.SourcePanel, Event: eventlog.EventCommand, Kind: "rewind"})
	l.Flush()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(follow.String(), "command cancel") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := follow.String()
	if !strings.Contains(got, "tool_end execute_code ok") || !strings.Contains(got, "panel     bbbb2222  command cancel") || strings.Contains(got, "rewind") {
		t.Fatalf("follow output:\n%s", got)
	}
}
