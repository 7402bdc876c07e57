package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/store"
)

// TestSessionsShowPaging: sessions show --last, --before and --role print a
// page of the history, numbered as the whole history is (#N, as rewind
// takes it), with the way to the page before it; --json prints the page
// and where it lies; bad flags are clear errors.
func TestSessionsShowPaging(t *testing.T) {
	data := t.TempDir()
	t.Setenv("AGENTKERNEL_DATA_DIR", data)
	t.Setenv("AGENTKERNEL_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: data})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := st.CreateSession(ctx, store.NewSession{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	// 30 messages in turns of three: user feedback, a command (tool), an
	// answer (assistant); message i says "msg-i".
	var ui []messages.UIMessage
	for i := range 30 {
		ts := int64(1_700_000_000_000 + 1000*i)
		text := fmt.Sprintf("msg-%d.", i)
		switch i % 3 {
		case 0:
			ui = append(ui, messages.UIMessage{TS: ts, Type: messages.TypeSay, Say: messages.SayUserFeedback, Text: text})
		case 1:
			ui = append(ui, messages.UIMessage{TS: ts, Type: messages.TypeAsk, Ask: messages.AskCommand, Text: text})
		case 2:
			ui = append(ui, messages.UIMessage{TS: ts, Type: messages.TypeSay, Say: messages.SayText, Text: text})
		}
	}
	if err := st.AppendUI(ctx, ss.ID, ui...); err != nil {
		t.Fatal(err)
	}
	st.Close()

	show := func(args ...string) (string, error) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		err := run(append([]string{"sessions", "show", ss.ID}, args...), &stdout, &stderr)
		return stdout.String(), err
	}
	// shown returns the message numbers of the transcript lines, checking
	// that line #N is message N.
	line := regexp.MustCompile(`(?m)^#(\d+)\s.*msg-(\d+)\.$`)
	shown := func(out string) []int {
		t.Helper()
		var ns []int
		for _, m := range line.FindAllStringSubmatch(out, -1) {
			if m[1] != m[2] {
				t.Fatalf("line #%s shows msg-%s:\n%s", m[1], m[2], out)
			}
			n, _ := strconv.Atoi(m[1])
			ns = append(ns, n)
		}
		return ns
	}
	span := func(from, to int) []int {
		var ns []int
		for i := from; i <= to; i++ {
			ns = append(ns, i)
		}
		return ns
	}
	for _, tc := range []struct {
		args  []string
		want  []int
		head  string // the page's headline
		older string // the command for the page before, "" for none
	}{
		{nil, span(0, 29), "", ""},
		{[]string{"--last", "0"}, span(0, 29), "", ""},
		{[]string{"--last", "5"}, span(25, 29), "5 of 30 messages, #25 to #29:", "--last 5 --before #25"},
		{[]string{"--last", "5", "--before", "#25"}, span(20, 24), "5 of 30 messages, #20 to #24:", "--last 5 --before #20"},
		{[]string{"--last", "100"}, span(0, 29), "30 of 30 messages, #0 to #29:", ""},
		{[]string{"--before", strconv.FormatInt(ui[10].TS, 10)}, span(0, 9), "10 of 30 messages, #0 to #9:", ""},
		{[]string{"--before", "#3", "--last", "3"}, span(0, 2), "3 of 30 messages, #0 to #2:", ""},
		{[]string{"--role", "user", "--last", "2"}, []int{24, 27}, "2 of 10 user messages, #24 to #27:", "--last 2 --before #24 --role user"},
		{[]string{"--role", "tool", "--last", "2", "--before", "#24"}, []int{19, 22}, "2 of 10 tool messages, #19 to #22:", "--last 2 --before #19 --role tool"},
		{[]string{"--role", "assistant"}, []int{2, 5, 8, 11, 14, 17, 20, 23, 26, 29}, "10 of 10 assistant messages, #2 to #29:", ""},
	} {
		out, err := show(tc.args...)
		if err != nil {
			t.Fatalf("show %v: %v", tc.args, err)
		}
		if got := shown(out); !slices.Equal(got, tc.want) {
			t.Errorf("show %v: messages %v, want %v:\n%s", tc.args, got, tc.want, out)
		}
		if tc.head != "" && !strings.Contains(out, "\n"+tc.head+"\n") {
			t.Errorf("show %v: no headline %q:\n%s", tc.args, tc.head, out)
		}
		hint := "Older messages: agentkernel sessions show " + ss.ID + " " + tc.older + "\n"
		if has := strings.Contains(out, "Older messages:"); has != (tc.older != "") || has && !strings.Contains(out, hint) {
			t.Errorf("show %v: want the hint %q:\n%s", tc.args, tc.older, out)
		}
	}
	out, err := show("--role", "system")
	if err != nil || !strings.Contains(out, "No system messages (0 in all).") {
		t.Errorf("show --role system: %v\n%s", err, out)
	}

	// --json: without paging flags both histories, as before.
	out, err = show("--json")
	if err != nil {
		t.Fatal(err)
	}
	var whole struct {
		UI  []messages.UIMessage  `json:"ui"`
		API []messages.APIMessage `json:"api"`
	}
	if err := json.Unmarshal([]byte(out), &whole); err != nil || len(whole.UI) != 30 || whole.API == nil {
		t.Fatalf("show --json: %v, %d UI messages, api %v:\n%s", err, len(whole.UI), whole.API, out)
	}
	// With them, the page and where it lies.
	out, err = show("--json", "--last", "3", "--role", "user")
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
		UI   []messages.UIMessage `json:"ui"`
		API  any                  `json:"api"`
		Page struct {
			Index      []int `json:"index"`
			Matching   int   `json:"matching"`
			Older      bool  `json:"older"`
			NextBefore int64 `json:"next_before"`
		} `json:"page"`
	}
	if err := json.Unmarshal([]byte(out), &page); err != nil {
		t.Fatalf("show --json --last 3: %v\n%s", err, out)
	}
	if page.Session.ID != ss.ID || len(page.UI) != 3 || page.UI[0].Text != "msg-21." || page.API != nil ||
		!slices.Equal(page.Page.Index, []int{21, 24, 27}) || page.Page.Matching != 10 || !page.Page.Older ||
		page.Page.NextBefore != ui[21].TS {
		t.Fatalf("show --json --last 3 --role user:\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--role", "robot"}, `sessions show: --role: unknown role "robot" (want user, assistant, tool, system, meta)`},
		{[]string{"--last", "-1"}, "sessions show: --last -1: want a number of messages"},
		{[]string{"--before", "yesterday"}, `sessions show: --before "yesterday": want a message's ts or #N`},
		{[]string{"--before", "#30"}, "sessions show: --before #30: no such message"},
	} {
		if _, err := show(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("show %v: %v, want an error %q", tc.args, err, tc.want)
		}
	}
}

// TestSessionsRename: sessions rename names a session, which list shows;
// "" gives it back its derived title.
func TestSessionsRename(t *testing.T) {
	data := t.TempDir()
	t.Setenv("AGENTKERNEL_DATA_DIR", data)
	t.Setenv("AGENTKERNEL_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: data})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := st.CreateSession(ctx, store.NewSession{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AppendUI(ctx, ss.ID, messages.UIMessage{TS: 1_700_000_000_000, Type: messages.TypeSay, Say: messages.SayText, Text: "Plot the sales"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	sessions := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if err := run(append([]string{"sessions"}, args...), &stdout, &stderr); err != nil {
			t.Fatalf("sessions %v: %v\n%s", args, err, stderr.String())
		}
		return stdout.String()
	}
	if out := sessions("rename", ss.ID[:8], "Quarterly   sales review"); !strings.Contains(out, `"Quarterly sales review"`) {
		t.Errorf("rename: %s", out)
	}
	if out := sessions("list", "--all"); !strings.Contains(out, "Quarterly sales review") {
		t.Errorf("list after the rename:\n%s", out)
	}
	if out := sessions("rename", ss.ID, "", "--json"); !strings.Contains(out, `"title": "Plot the sales"`) {
		t.Errorf("rename to nothing: %s", out)
	}
}

// TestSessionsShowLastCountsListedLines: --last N lists N messages even
// when bookkeeping rows (requests, reasoning, checkpoints), which a
// transcript does not list, lie between them, and the headline agrees
// with the lines, naming the rows it passed over.
func TestSessionsShowLastCountsListedLines(t *testing.T) {
	data := t.TempDir()
	t.Setenv("AGENTKERNEL_DATA_DIR", data)
	t.Setenv("AGENTKERNEL_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: data})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := st.CreateSession(ctx, store.NewSession{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	// 60 turns of four rows: the prompt, a request started, reasoning,
	// the answer; 300 more bookkeeping rows at the start make the pages
	// read back cross a batch.
	var ui []messages.UIMessage
	ts := int64(1_700_000_000_000)
	add := func(m messages.UIMessage) { ts += 1000; m.TS = ts; ui = append(ui, m) }
	for range 300 {
		add(messages.UIMessage{Type: messages.TypeSay, Say: messages.SayAPIReqStarted, Text: `{"request":"…"}`})
	}
	for i := range 60 {
		add(messages.UIMessage{Type: messages.TypeSay, Say: messages.SayUserFeedback, Text: fmt.Sprintf("prompt-%d.", i)})
		add(messages.UIMessage{Type: messages.TypeSay, Say: messages.SayAPIReqStarted, Text: `{"request":"…"}`})
		add(messages.UIMessage{Type: messages.TypeSay, Say: messages.SayReasoning, Text: "thinking"})
		add(messages.UIMessage{Type: messages.TypeSay, Say: messages.SayText, Text: fmt.Sprintf("answer-%d.", i)})
	}
	if err := st.AppendUI(ctx, ss.ID, ui...); err != nil {
		t.Fatal(err)
	}
	st.Close()
	listedLine := regexp.MustCompile(`(?m)^#\d+\s`)
	for _, tc := range []struct {
		args  []string
		lines int
		head  string
	}{
		{[]string{"--last", "5"}, 5, "5 of 540 messages, #531 to #539 (and 4 bookkeeping rows between them, not listed"},
		{[]string{"--last", "120"}, 120, "120 of 540 messages, #300 to #539 (and 120 bookkeeping rows between them"},
		{[]string{"--last", "500"}, 120, "120 of 540 messages, #300 to #539 (and 120 bookkeeping rows between them"},
		// Reasoning is the assistant's too.
		{[]string{"--role", "assistant", "--last", "3"}, 3, "3 of 120 assistant messages, #531 to #539 (and 2 bookkeeping rows"},
		{[]string{"--last", "2", "--before", "#300"}, 0, "No messages before #300 (540 in all)."},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(append([]string{"sessions", "show", ss.ID}, tc.args...), &stdout, &stderr); err != nil {
			t.Fatalf("show %v: %v\n%s", tc.args, err, stderr.String())
		}
		out := stdout.String()
		if got := len(listedLine.FindAllString(out, -1)); got != tc.lines {
			t.Errorf("show %v: %d lines, want %d:\n%s", tc.args, got, tc.lines, out)
		}
		if !strings.Contains(out, "\n"+tc.head) {
			t.Errorf("show %v: no headline %q:\n%s", tc.args, tc.head, out)
		}
	}
}
