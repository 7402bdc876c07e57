package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/hooks"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// readLog returns every entry of the log's day files.
func readLog(t *testing.T, l *eventlog.Log) []eventlog.Entry {
	t.Helper()
	l.Flush()
	files, err := eventlog.Files(l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var out []eventlog.Entry
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var e eventlog.Entry
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			out = append(out, e)
		}
	}
	return out
}

// find returns the entries of event (and kind, if given).
func find(log []eventlog.Entry, event, kind string) []eventlog.Entry {
	var out []eventlog.Entry
	for _, e := range log {
		if e.Event == event && (kind == "" || e.Kind == kind) {
			out = append(out, e)
		}
	}
	return out
}

// TestHooksAndEventLogThroughTheHost drives the host as ask does, then as
// the panel does: a PreToolUse hook from the workspace's settings blocks
// execute_code, a user hook sees the prompt, and the log holds the inputs
// and outputs of both surfaces.
func TestHooksAndEventLogThroughTheHost(t *testing.T) {
	srv, open := scriptedModels(t)
	ws := t.TempDir()
	logDir := filepath.Join(t.TempDir(), "logs")
	if err := os.MkdirAll(filepath.Join(ws, ".agentkernel"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := `{"hooks": {"PreToolUse": [{"matcher": "execute_code", "hooks": [{"type": "command",
		"command": "grep -q forbidden && { echo 'forbidden code: ask the admin' >&2; exit 2; } || exit 0"}]}]}}`
	if err := os.WriteFile(filepath.Join(ws, hooks.SettingsPath), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	var user hooks.Config
	seen := filepath.Join(t.TempDir(), "prompts")
	if err := json.Unmarshal([]byte(`{"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "cat >> `+seen+`"}]}]}`), &user); err != nil {
		t.Fatal(err)
	}
	l := eventlog.New(eventlog.Options{Dir: logDir})
	defer l.Close()
	fr := &fakeRunner{}
	h := newHost(t, Config{Store: openStore(t), OpenModel: open, Model: "openai:m", Runner: fr, Workspace: ws,
		Hooks: user, EventLog: l, Source: eventlog.SourceAsk})
	ctx := context.Background()

	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("c1", "execute_code", `{"code":"forbidden()"}`), usage(100, 10)),
		scripted.Reply(scripted.ToolCall("c2", "execute_code", `{"code":"6*7"}`), usage(100, 10)),
		scripted.Reply(scripted.Text("It is 42."), usage(120, 8)),
	)
	res, err := h.Submit(ctx, "Compute 6*7 with my key sk-abcdefghijklmnopqrst", Follow{Approve: agent.ApproveAll.Approver()})
	if err != nil {
		t.Fatal(err)
	}
	if ran := fr.ran(); len(ran) != 1 || ran[0] != "6*7" {
		t.Fatalf("ran %q: the blocked call ran, or the allowed one did not", ran)
	}
	reqs := srv.Requests()
	if !strings.Contains(string(reqs[1].Raw), "forbidden code: ask the admin") {
		t.Errorf("the hook's stderr did not reach the model: %s", reqs[1].Raw)
	}
	if b, _ := os.ReadFile(seen); !strings.Contains(string(b), `"hook_event_name":"UserPromptSubmit"`) || !strings.Contains(string(b), res.SessionID) {
		t.Errorf("the user's hook saw %s", b)
	}

	// The panel starts a turn and cancels; its inputs are the panel's.
	pctx := WithSource(ctx, eventlog.SourcePanel)
	srv.Enqueue(scripted.Reply(scripted.Text("Sure."), usage(10, 2)))
	pixel, err := agent.ImageFromDataURL("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.StartPrompt(pctx, agent.Prompt{Text: "And 7*8?", Images: []agent.Image{pixel}}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, h)
	h.Cancel(pctx)
	if err := h.Modes().SetPermission(pctx, agent.PermissionPlan); err != nil {
		t.Fatal(err)
	}

	log := readLog(t, l)
	prompts := find(log, eventlog.EventPrompt, "")
	if len(prompts) != 2 || prompts[0].Source != eventlog.SourceAsk || prompts[1].Source != eventlog.SourcePanel ||
		prompts[0].SessionID != res.SessionID || prompts[1].Text != "And 7*8?" || prompts[0].Images != 0 || prompts[1].Images != 1 {
		t.Fatalf("prompts %+v", prompts)
	}
	for _, e := range log {
		if strings.Contains(e.Text, "iVBORw0KGgo") {
			t.Errorf("an image's data reached the log: %+v", e)
		}
	}
	if strings.Contains(prompts[0].Text, "sk-abcdefghijklmnopqrst") {
		t.Errorf("a key reached the log: %q", prompts[0].Text)
	}
	if hb := find(log, eventlog.EventHook, "blocked"); len(hb) != 1 || hb[0].Tool != "execute_code" || !strings.Contains(hb[0].Text, "ask the admin") {
		t.Errorf("hook entries %+v", hb)
	}
	starts, ends := find(log, eventlog.EventToolStart, ""), find(log, eventlog.EventToolEnd, "")
	if len(starts) != 1 || len(ends) != 1 || ends[0].ToolID != "c2" || ends[0].OK == nil || !*ends[0].OK {
		t.Errorf("tool entries %+v %+v", starts, ends)
	}
	if a := find(log, eventlog.EventAnswer, ""); len(a) != 1 || a[0].By != "policy:all" || a[0].Kind != string(agent.ResponseYes) {
		t.Errorf("answers %+v", a)
	}
	results := find(log, eventlog.EventResult, "")
	if len(results) != 2 || results[0].CostUSD == nil || *results[0].CostUSD <= 0 || results[0].TokensIn != 320 ||
		results[0].Source != eventlog.SourceAsk || results[1].Source != eventlog.SourcePanel {
		t.Errorf("results %+v", results)
	}
	if c := find(log, eventlog.EventCommand, ""); len(c) != 2 || c[0].Kind != "cancel" || c[1].Kind != "permission_mode" || c[1].Text != "plan" || c[1].Source != eventlog.SourcePanel {
		t.Errorf("commands %+v", c)
	}
	// Finished messages only: the streamed answer is one created (without
	// text) and one finished entry.
	var created, finished int
	for _, e := range log {
		if e.Kind == "say:text" && e.Event == eventlog.EventMessageFinished && e.Text == "It is 42." {
			finished++
		}
		if e.Kind == "say:text" && e.Event == eventlog.EventMessageCreated && e.Text == "" {
			created++
		}
	}
	if finished != 1 || created < 1 {
		t.Errorf("streamed answer: %d finished, %d created entries", finished, created)
	}
}

func waitIdle(t *testing.T, h *Host) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for h.Busy() {
		if time.Now().After(deadline) {
			t.Fatal("the turn did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BenchmarkEventLogStreamedUpdate is what the event log adds to each
// streamed (partial) update of a message.
func BenchmarkEventLogStreamedUpdate(b *testing.B) {
	h, c := benchLogHost(b)
	m := messages.UIMessage{TS: 1, Type: messages.TypeSay, Say: messages.SayText, Text: strings.Repeat("token ", 200), Partial: true}
	e := agent.Event{Kind: agent.EventMessageUpdated, Message: &m}
	for b.Loop() {
		h.logEvent(c, e)
	}
}

// BenchmarkEventLogFinishedMessage is what the event log adds when a
// message is finished: one entry queued (its text mentions tokens, so the
// scrubber's patterns run on it in the writer); with the queue full this
// is the writer's cost per entry.
func BenchmarkEventLogFinishedMessage(b *testing.B) {
	h, c := benchLogHost(b)
	m := messages.UIMessage{TS: 1, Type: messages.TypeSay, Say: messages.SayText, Text: strings.Repeat("token ", 200)}
	e := agent.Event{Kind: agent.EventMessageUpdated, Message: &m}
	for b.Loop() {
		h.logEvent(c, e)
	}
}

func benchLogHost(b *testing.B) (*Host, *current) {
	l := eventlog.New(eventlog.Options{Dir: b.TempDir()})
	b.Cleanup(func() { l.Close() })
	h := New(Config{EventLog: l, Workspace: b.TempDir()})
	return h, &current{id: "0f8e2b7c-1234-4a5b-8c9d-0123456789ab"}
}
