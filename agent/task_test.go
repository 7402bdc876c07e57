package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/agentstore"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/replay"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/rewind"
	"github.com/agentkernel/agentkernel/store"
)

// model is a scripted model: each call takes the next turn from the
// script. A turn is either events or an error; block makes the stream wait
// for ctx (a slow stream). It records every request.
type model struct {
	mu       sync.Mutex
	turns    []turn
	requests []provider.Request
	window   int
	vision   bool
}

type turn struct {
	events []provider.Event
	err    error
	block  bool // after the events, wait until ctx ends
}

func (m *model) Name() string { return "test" }
func (m *model) Model() provider.ModelInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	return provider.ModelInfo{ID: "test-model", ContextWindow: m.window, InputPrice: 1, OutputPrice: 2, Vision: m.vision}
}

func (m *model) setWindow(n int) {
	m.mu.Lock()
	m.window = n
	m.mu.Unlock()
}

func (m *model) Stream(ctx context.Context, req provider.Request) (provider.Stream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, req)
	if len(m.turns) == 0 {
		return nil, errors.New("test model: script exhausted")
	}
	tr := m.turns[0]
	m.turns = m.turns[1:]
	if tr.err != nil && len(tr.events) == 0 {
		return nil, tr.err
	}
	return &stream{ctx: ctx, t: tr, closed: make(chan struct{})}, nil
}

func (m *model) reqs() []provider.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]provider.Request(nil), m.requests...)
}

type stream struct {
	ctx    context.Context
	t      turn
	i      int
	once   sync.Once
	closed chan struct{}
}

func (s *stream) Next() (provider.Event, error) {
	if s.i < len(s.t.events) {
		s.i++
		return s.t.events[s.i-1], nil
	}
	if s.t.block {
		select {
		case <-s.ctx.Done():
			return provider.Event{}, s.ctx.Err()
		case <-s.closed:
			return provider.Event{}, errors.New("stream closed")
		}
	}
	if s.t.err != nil {
		return provider.Event{}, s.t.err
	}
	return provider.Event{}, io.EOF
}

func (s *stream) Close() error { s.once.Do(func() { close(s.closed) }); return nil }

func text(s string) provider.Event { return provider.Event{Type: provider.EventText, Text: s} }
func done(r provider.StopReason) provider.Event {
	return provider.Event{Type: provider.EventDone, StopReason: r}
}
func usage(in, out int) provider.Event {
	return provider.Event{Type: provider.EventUsage, Usage: &provider.Usage{InputTokens: in, OutputTokens: out}}
}
func call(id, name string, input any) provider.Event {
	b, _ := json.Marshal(input)
	return provider.Event{Type: provider.EventToolCall, ToolCall: &provider.ToolCall{ID: id, Name: name, Input: b}}
}

// say replies with text and ends the turn.
func say(s string) turn {
	return turn{events: []provider.Event{text(s), usage(10, 5), done(provider.StopEndTurn)}}
}

type env struct {
	t     *testing.T
	task  *agent.Task
	model *model
	store *store.Store
	dir   string
	id    string

	mu     sync.Mutex
	events []agent.Event
}

type setup struct {
	turns  []turn
	window int
	vision bool
	mode   agent.PermissionMode
	answer func(*env, messages.UIMessage) // answers interactive asks
	cfg    func(*agent.Config)
	// notebook, when set, is the notebook the agent works in, its cells
	// in prompt mode with prompt; allow and deny are the policy's rules.
	notebook    agent.Notebook
	prompt      bool
	allow, deny []string
}

func newEnv(t *testing.T, s setup) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), store.Options{Dir: filepath.Join(dir, ".data")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sess, err := st.CreateSession(context.Background(), store.NewSession{Model: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := agent.NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	opts := agent.ToolboxOptions{Workspace: ws, PromptCells: s.prompt}
	if s.notebook != nil {
		opts.Notebook = func() agent.Notebook { return s.notebook }
	}
	tb, err := agent.NewToolbox(opts)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := agent.NewPolicy(tb, agent.PolicyOptions{Mode: s.mode, Allow: s.allow, Deny: s.deny})
	if err != nil {
		t.Fatal(err)
	}
	m := &model{turns: s.turns, window: s.window, vision: s.vision}
	cfg := agent.Config{SessionID: sess.ID, Store: agentstore.New(st), Toolbox: tb, Provider: m, Policy: pol,
		RetryBase: time.Millisecond}
	if s.cfg != nil {
		s.cfg(&cfg)
	}
	task, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, task: task, model: m, store: st, dir: dir, id: sess.ID}
	task.Listen(func(ev agent.Event) {
		e.mu.Lock()
		e.events = append(e.events, ev)
		e.mu.Unlock()
		if ev.Kind == agent.EventTaskInteractive && s.answer != nil {
			s.answer(e, *ev.Message)
		}
	})
	t.Cleanup(func() { task.Close() })
	return e
}

func (e *env) run(text string) (agent.State, error) {
	e.t.Helper()
	if err := start(e.task, text); err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		// An ask answered by a listener pauses the turn only briefly.
		st, err := e.task.Wait(ctx)
		if st != agent.StateWaiting || ctx.Err() != nil {
			return st, err
		}
		time.Sleep(time.Millisecond)
	}
}

func kinds(ui []messages.UIMessage) string {
	var s []string
	for _, m := range ui {
		if m.Type == messages.TypeAsk {
			s = append(s, "ask:"+string(m.Ask))
		} else {
			s = append(s, string(m.Say))
		}
	}
	return strings.Join(s, ",")
}

// checkStored asserts the store holds exactly the task's histories and the
// API history pairs every tool_use with its result.
func (e *env) checkStored() {
	e.t.Helper()
	h, err := e.store.Load(context.Background(), e.id)
	if err != nil {
		e.t.Fatal(err)
	}
	ui, api := e.task.UI(), e.task.API()
	gotUI, _ := json.Marshal(h.UI)
	wantUI, _ := json.Marshal(ui)
	if string(gotUI) != string(wantUI) {
		e.t.Fatalf("stored UI differs:\n got %s\nwant %s", gotUI, wantUI)
	}
	gotAPI, _ := json.Marshal(h.API)
	wantAPI, _ := json.Marshal(api)
	if string(gotAPI) != string(wantAPI) {
		e.t.Fatalf("stored API differs:\n got %s\nwant %s", gotAPI, wantAPI)
	}
	checkPaired(e.t, api)
}

func checkPaired(t *testing.T, api []messages.APIMessage) {
	t.Helper()
	uses, results := map[string]bool{}, map[string]bool{}
	for _, m := range api {
		for _, b := range m.Content {
			switch b.Type {
			case messages.BlockToolUse:
				uses[b.ID] = true
			case messages.BlockToolResult:
				results[b.ToolUseID] = true
			}
		}
	}
	for id := range uses {
		if !results[id] {
			t.Fatalf("tool_use %s has no tool_result", id)
		}
	}
	for id := range results {
		if !uses[id] {
			t.Fatalf("tool_result %s has no tool_use", id)
		}
	}
}

func TestTextTurn(t *testing.T) {
	e := newEnv(t, setup{turns: []turn{{events: []provider.Event{text("Hel"), text("lo"), usage(100, 20), done(provider.StopEndTurn)}}}})
	state, err := e.run("hi")
	if err != nil || state != agent.StateIdle {
		t.Fatalf("state %s err %v", state, err)
	}
	ui := e.task.UI()
	if got, want := kinds(ui), "text,api_req_started,text,api_req_finished"; got != want {
		t.Fatalf("ui = %s, want %s", got, want)
	}
	if ui[2].Text != "Hello" || ui[2].Partial {
		t.Fatalf("answer %+v", ui[2])
	}
	api := e.task.API()
	if len(api) != 2 || api[0].TS != ui[0].TS || api[1].Role != messages.RoleAssistant {
		t.Fatalf("api %+v", api)
	}
	tot := e.task.Totals()
	if tot.InputTokens != 100 || tot.OutputTokens != 20 || tot.Cost != (100*1+20*2)/1e6 {
		t.Fatalf("totals %+v", tot)
	}
	e.checkStored()
	sess, _ := e.store.GetSession(context.Background(), e.id)
	if sess.Usage.TokensIn != 100 {
		t.Fatalf("stored usage %+v", sess.Usage)
	}
	// A second prompt is user_feedback in the UI and a user message to the model.
	e.model.turns = append(e.model.turns, say("again"))
	e.run("more")
	ui = e.task.UI()
	if ui[4].Say != messages.SayUserFeedback || ui[4].Text != "more" {
		t.Fatalf("second prompt %+v", ui[4])
	}
	reqs := e.model.reqs()
	if n := len(reqs[1].Messages); n != 3 {
		t.Fatalf("second request has %d messages", n)
	}
}

func TestToolApprovalLoop(t *testing.T) {
	var asked []messages.UIMessage
	e := newEnv(t, setup{
		turns: []turn{
			{events: []provider.Event{text("writing"), call("c1", "write_file", map[string]any{"path": "out.txt", "content": "data"}), done(provider.StopToolUse)}},
			say("written"),
		},
		answer: func(e *env, m messages.UIMessage) {
			asked = append(asked, m)
			if err := e.task.Respond(m.TS, agent.Response{Kind: agent.ResponseYes, By: "test"}); err != nil {
				t.Errorf("respond: %v", err)
			}
		},
	})
	if _, err := e.run("make a file"); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0].Ask != messages.AskTool {
		t.Fatalf("asks %+v", asked)
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "out.txt")); err != nil || string(b) != "data" {
		t.Fatalf("file %q %v", b, err)
	}
	reqs := e.model.reqs()
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != messages.RoleUser || last.Content[0].Type != messages.BlockToolResult || last.Content[0].IsError {
		t.Fatalf("second request ends with %+v", last)
	}
	ui := e.task.UI()
	for _, m := range ui {
		if m.Type == messages.TypeAsk && !m.IsAnswered {
			t.Fatalf("ask left open: %+v", m)
		}
	}
	e.checkStored()
}

func TestToolDenied(t *testing.T) {
	e := newEnv(t, setup{
		turns: []turn{
			{events: []provider.Event{call("c1", "write_file", map[string]any{"path": "x.txt", "content": "d"}), done(provider.StopToolUse)}},
			say("ok, not writing"),
		},
		answer: func(e *env, m messages.UIMessage) {
			e.task.Respond(m.TS, agent.Response{Kind: agent.ResponseMessage, Text: "no, use y.txt"})
		},
	})
	e.run("go")
	if _, err := os.Stat(filepath.Join(e.dir, "x.txt")); err == nil {
		t.Fatal("denied write happened")
	}
	res := e.model.reqs()[1].Messages
	tr := res[len(res)-1].Content[0]
	if !tr.IsError || !strings.Contains(tr.Content[0].Text, "use y.txt") {
		t.Fatalf("tool result %+v", tr)
	}
	e.checkStored()
}

func TestHardRefusalNeverAsks(t *testing.T) {
	e := newEnv(t, setup{
		mode: agent.PermissionBypass,
		turns: []turn{
			{events: []provider.Event{call("c1", "read_file", map[string]any{"path": ".env"}), done(provider.StopToolUse)}},
			say("fine"),
		},
		answer: func(e *env, m messages.UIMessage) { t.Errorf("asked: %+v", m) },
	})
	os.WriteFile(filepath.Join(e.dir, ".env"), []byte("KEY=sk-secret"), 0o600)
	e.run("read my env")
	res := e.model.reqs()[1].Messages
	tr := res[len(res)-1].Content[0]
	if !tr.IsError || strings.Contains(tr.Content[0].Text, "sk-secret") {
		t.Fatalf("tool result %+v", tr)
	}
	if !strings.Contains(kinds(e.task.UI()), "error") {
		t.Fatalf("refusal not recorded: %s", kinds(e.task.UI()))
	}
}

func TestCancelDuringStream(t *testing.T) {
	e := newEnv(t, setup{turns: []turn{{events: []provider.Event{text("partial ans")}, block: true}}})
	if err := start(e.task, "slow"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(kinds(e.task.UI()), "api_req_started,text") {
		if time.Now().After(deadline) {
			t.Fatal("stream never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.task.Cancel()
	if s := e.task.State(); s != agent.StateIdle {
		t.Fatalf("state %s", s)
	}
	ui := e.task.UI()
	for _, m := range ui {
		if m.Partial {
			t.Fatalf("partial message left: %+v", m)
		}
	}
	api := e.task.API()
	if last := api[len(api)-1]; last.Role != messages.RoleAssistant || last.Content[0].Text != "partial ans" {
		t.Fatalf("api %+v", api)
	}
	e.checkStored()
	e.mu.Lock()
	defer e.mu.Unlock()
	aborted := false
	for _, ev := range e.events {
		aborted = aborted || ev.Kind == agent.EventTaskAborted
	}
	if !aborted {
		t.Fatal("no taskAborted event")
	}
}

// TestCloseDuringStream: a task closed mid-stream (the kernel shuts down
// because its server died) stores what streamed, still marked partial,
// after every message completed before it.
func TestCloseDuringStream(t *testing.T) {
	e := newEnv(t, setup{turns: []turn{{events: []provider.Event{text("cut short")}, block: true}}})
	if err := start(e.task, "slow"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(kinds(e.task.UI()), "api_req_started,text") {
		if time.Now().After(deadline) {
			t.Fatal("stream never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := e.task.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	h, err := e.store.Load(context.Background(), e.id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range h.UI {
		got = append(got, fmt.Sprintf("%s:%s:%v", m.Say, m.Text, m.Partial))
	}
	if len(h.UI) == 0 || h.UI[0].Text != "slow" {
		t.Fatalf("the prompt is not stored first: %q", got)
	}
	last := h.UI[len(h.UI)-1]
	for _, m := range h.UI {
		if m.Say == messages.SayText && m.Text == "cut short" {
			last = m
		}
	}
	if last.Text != "cut short" || !last.Partial {
		t.Fatalf("streamed text not stored as partial: %q", got)
	}
}

func TestCancelWhileAsking(t *testing.T) {
	e := newEnv(t, setup{turns: []turn{
		{events: []provider.Event{call("c1", "write_file", map[string]any{"path": "a", "content": "1"}),
			call("c2", "write_file", map[string]any{"path": "b", "content": "2"}), done(provider.StopToolUse)}},
	}})
	start(e.task, "two files")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if st, _ := e.task.Wait(ctx); st != agent.StateWaiting {
		t.Fatalf("state %s", st)
	}
	e.task.Cancel()
	if _, ok := e.task.PendingAsk(); ok {
		t.Fatal("ask still pending after cancel")
	}
	api := e.task.API()
	last := api[len(api)-1]
	if len(last.Content) != 2 || !last.Content[0].IsError || !last.Content[1].IsError {
		t.Fatalf("tool results %+v", last)
	}
	e.checkStored()
}

func TestRetriesThenFails(t *testing.T) {
	rl := &provider.APIError{Provider: "test", Status: 429, Message: "slow down", Retryable: true}
	e := newEnv(t, setup{turns: []turn{{err: rl}, {err: rl}, {err: rl}, {err: rl}, say("back")}})
	state, err := e.run("hi")
	if !errors.Is(err, agent.ErrAPIFailed) || state != agent.StateIdle {
		t.Fatalf("state %s err %v", state, err)
	}
	k := kinds(e.task.UI())
	if strings.Count(k, "api_req_retry_delayed") != 3 || strings.Count(k, "api_req_retried") != 3 || !strings.HasSuffix(k, "ask:api_req_failed") {
		t.Fatalf("ui %s", k)
	}
	// An empty prompt answers the failed request: retry.
	if _, err := e.run(""); err != nil {
		t.Fatal(err)
	}
	if k := kinds(e.task.UI()); !strings.HasSuffix(k, "api_req_started,text,api_req_finished") {
		t.Fatalf("after retry: %s", k)
	}
	e.checkStored()
}

// TestRetryBudget: no retry starts later than RetryBudget after the first
// attempt: behind a proxy that retries on its own, a model that is down
// fails the cell in bounded time, not after three more rounds of the
// proxy's retries.
func TestRetryBudget(t *testing.T) {
	down := &provider.APIError{Provider: "test", Status: 503, Message: "overloaded", Retryable: true}
	e := newEnv(t, setup{turns: []turn{{err: down}, {err: down}, {err: down}, {err: down}},
		cfg: func(c *agent.Config) { c.RetryBase, c.RetryBudget = 300*time.Millisecond, 800*time.Millisecond }})
	if _, err := e.run("hi"); !errors.Is(err, agent.ErrAPIFailed) {
		t.Fatalf("err %v", err)
	}
	// The first retry (300 ms in) fits the budget, with 500 ms to spare
	// for a loaded machine; the second (600 ms after it, 900 ms in at the
	// earliest) does not, however fast the machine.
	k := kinds(e.task.UI())
	if strings.Count(k, "api_req_retry_delayed") != 1 || len(e.model.reqs()) != 2 {
		t.Fatalf("%d requests, ui %s", len(e.model.reqs()), k)
	}
	for _, m := range e.task.UI() {
		if m.Say == messages.SayAPIReqRetryDelayed && !strings.Contains(m.Text, "The request to test") {
			t.Errorf("the retry does not say what it retries: %q", m.Text)
		}
	}
}

func TestCompletionAndFeedback(t *testing.T) {
	e := newEnv(t, setup{turns: []turn{
		{events: []provider.Event{call("c1", "attempt_completion", map[string]any{"result": "All done."}), done(provider.StopToolUse)}},
		say("adjusted"),
	}})
	e.run("do it")
	k := kinds(e.task.UI())
	if !strings.HasSuffix(k, "completion_result,ask:completion_result") {
		t.Fatalf("ui %s", k)
	}
	if _, ok := e.task.PendingAsk(); !ok {
		t.Fatal("completion ask not pending")
	}
	e.mu.Lock()
	var completedEv *agent.Event
	for i := range e.events {
		if e.events[i].Kind == agent.EventTaskCompleted {
			completedEv = &e.events[i]
		}
	}
	e.mu.Unlock()
	if completedEv == nil || completedEv.Text != "All done." || completedEv.ToolUsage["attempt_completion"].Attempts != 1 {
		t.Fatalf("taskCompleted event %+v", completedEv)
	}
	e.run("one more thing")
	if _, ok := e.task.PendingAsk(); ok {
		t.Fatal("completion ask still pending after feedback")
	}
	e.checkStored()
}

func TestFollowup(t *testing.T) {
	e := newEnv(t, setup{
		turns: []turn{
			{events: []provider.Event{call("c1", "ask_followup_question", map[string]any{"question": "Which file?", "suggestions": []string{"a.csv", "b.csv"}}), done(provider.StopToolUse)}},
			say("using b"),
		},
		answer: func(e *env, m messages.UIMessage) {
			if m.Ask != messages.AskFollowup || !strings.Contains(m.Text, "b.csv") {
				t.Errorf("ask %+v", m)
			}
			e.task.Respond(m.TS, agent.Response{Kind: agent.ResponseMessage, Text: "b.csv"})
		},
	})
	e.run("analyse")
	res := e.model.reqs()[1].Messages
	if got := res[len(res)-1].Content[0].Content[0].Text; !strings.Contains(got, "b.csv") {
		t.Fatalf("followup result %q", got)
	}
	e.checkStored()
}

func TestNoModel(t *testing.T) {
	e := newEnv(t, setup{cfg: func(c *agent.Config) { c.Provider = nil }})
	_, err := e.run("hi")
	if !errors.Is(err, agent.ErrNoProvider) {
		t.Fatalf("err %v", err)
	}
	ui := e.task.UI()
	last := ui[len(ui)-1]
	if last.Say != messages.SayError || !strings.Contains(last.Text, "AGENTKERNEL_MODEL") {
		t.Fatalf("ui %+v", ui)
	}
	// The settings come first, and the message says the settings mend it
	// (the panel offers them; no "Fix with the agent").
	if i, j := strings.Index(last.Text, "Settings"), strings.Index(last.Text, "AGENTKERNEL_MODEL"); i < 0 || i > j || !last.Settings {
		t.Errorf("the no-model message does not point to the settings first: settings=%v %q", last.Settings, last.Text)
	}
}

func TestCondenseWhenOverWindow(t *testing.T) {
	long := strings.Repeat("x", 12000)
	e := newEnv(t, setup{window: 4500, turns: []turn{
		say(long),
		say("the summary"), // the condense request
		say("short answer"),
	}})
	e.run("first")
	e.run("second")
	ui := e.task.UI()
	if !strings.Contains(kinds(ui), "condense_context") {
		t.Fatalf("no condense: %s", kinds(ui))
	}
	reqs := e.model.reqs()
	last := reqs[len(reqs)-1].Messages
	if !last[0].IsSummary || !strings.Contains(last[0].Content[0].Text, "the summary") {
		t.Fatalf("request after condense starts with %+v", last[0])
	}
	e.checkStored()
}

func TestTruncateWhenCondenseFails(t *testing.T) {
	long := strings.Repeat("y", 4000)
	e := newEnv(t, setup{turns: []turn{
		say(long), say(long),
		{err: errors.New("summariser down")},
		say("answer"),
	}})
	e.run("one")
	e.run("two")
	e.model.setWindow(1500) // now the history no longer fits
	if _, err := e.run("three"); err != nil {
		t.Fatal(err)
	}
	k := kinds(e.task.UI())
	if !strings.Contains(k, "condense_context_error,sliding_window_truncation,api_req_started,text") {
		t.Fatalf("ui %s", k)
	}
	reqs := e.model.reqs()
	sent := reqs[len(reqs)-1].Messages
	for _, m := range sent {
		if strings.Contains(m.PlainText(), "one") && m.Role == messages.RoleUser && !m.IsTruncationMarker && m.PlainText() != "one" {
			t.Fatalf("unexpected %+v", m)
		}
	}
	if len(sent) >= 5 {
		t.Fatalf("truncation hid nothing: %d messages sent", len(sent))
	}
	checkPaired(t, sent)
	e.checkStored()
}

func TestRewindAffectsNextRequest(t *testing.T) {
	e := newEnv(t, setup{turns: []turn{say("A1"), say("A2"), say("A3")}})
	e.run("Q1")
	e.run("Q2 secret")
	var q2 int64
	for _, m := range e.task.UI() {
		if m.Text == "Q2 secret" {
			q2 = m.TS
		}
	}
	if _, err := e.task.Rewind(context.Background(), q2, rewind.Options{}); err != nil {
		t.Fatal(err)
	}
	e.checkStored()
	e.run("Q3")
	last := e.model.reqs()[2].Messages
	for _, m := range last {
		if strings.Contains(m.PlainText(), "Q2 secret") || strings.Contains(m.PlainText(), "A2") {
			t.Fatalf("rewound message sent: %+v", m)
		}
	}
	if len(last) != 3 {
		t.Fatalf("request has %d messages", len(last))
	}
}

func TestResume(t *testing.T) {
	e := newEnv(t, setup{turns: []turn{say("A1")}})
	e.run("Q1")
	h, _ := e.store.Load(context.Background(), e.id)
	e.task.Close()
	m := &model{turns: []turn{say("A2")}}
	ws, _ := agent.NewWorkspace(e.dir)
	tb, _ := agent.NewToolbox(agent.ToolboxOptions{Workspace: ws})
	task, err := agent.New(agent.Config{SessionID: e.id, Store: agentstore.New(e.store), Toolbox: tb, Provider: m, UI: h.UI, API: h.API})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close()
	start(task, "Q2")
	task.Wait(context.Background())
	if n := len(m.reqs()[0].Messages); n != 3 {
		t.Fatalf("resumed request has %d messages", n)
	}
	ui := task.UI()
	if ui[len(ui)-1].TS <= h.UI[len(h.UI)-1].TS {
		t.Fatal("timestamps went backwards after resume")
	}
}

func TestRecordAndReplayApprovals(t *testing.T) {
	var cassette bytes.Buffer
	script := func() []turn {
		return []turn{
			{events: []provider.Event{call("c1", "write_file", map[string]any{"path": "r.txt", "content": "v"}), done(provider.StopToolUse)}},
			say("written"),
		}
	}
	var rec *replay.Recorder
	e := newEnv(t, setup{
		turns: script(),
		cfg: func(c *agent.Config) {
			var err error
			rec, err = replay.NewRecorder(c.Provider, &cassette, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.Provider = rec
		},
		answer: func(e *env, m messages.UIMessage) {
			e.task.Respond(m.TS, agent.Response{Kind: agent.ResponseYes, By: "test"})
		},
	})
	e.run("write it")
	rec.Close()
	if !strings.Contains(cassette.String(), `"kind":"approval"`) || !strings.Contains(cassette.String(), `"kind":"tool_result"`) {
		t.Fatalf("cassette lacks approval or tool result:\n%s", cassette.String())
	}

	// Replay: nobody is asked; the recorded answer applies.
	play := func(prompt string) (*env, error) {
		p, err := replay.Load(bytes.NewReader(cassette.Bytes()), "test.cassette")
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, setup{
			cfg:    func(c *agent.Config) { c.Provider = p },
			answer: func(e *env, m messages.UIMessage) { t.Errorf("replay asked: %+v", m) },
		})
		_, err = e.run(prompt)
		return e, err
	}
	e2, err := play("write it")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(e2.dir, "r.txt")); err != nil || string(b) != "v" {
		t.Fatalf("replayed write: %q %v", b, err)
	}
	e2.checkStored()

	// A different conversation diverges with a clear error.
	_, err = play("something else")
	var de *replay.DivergenceError
	if !errors.As(err, &de) {
		t.Fatalf("divergence: err = %v", err)
	}
}

// TestAnsweredAskIsNotPending: once an answer is accepted the ask is no
// longer offered, so no frontend asks the user twice.
func TestAnsweredAskIsNotPending(t *testing.T) {
	e := newEnv(t, setup{turns: []turn{
		{events: []provider.Event{call("c1", "write_file", map[string]any{"path": "p.txt", "content": "1"}), done(provider.StopToolUse)}},
		say("ok"),
	}})
	start(e.task, "go")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if st, _ := e.task.Wait(ctx); st != agent.StateWaiting {
		t.Fatalf("state %s", st)
	}
	ask, _ := e.task.PendingAsk()
	if err := e.task.Respond(ask.TS, agent.Response{Kind: agent.ResponseYes}); err != nil {
		t.Fatal(err)
	}
	if again, ok := e.task.PendingAsk(); ok && again.TS == ask.TS {
		t.Fatal("the answered ask is still pending")
	}
	if err := e.task.Respond(ask.TS, agent.Response{Kind: agent.ResponseNo}); !errors.Is(err, agent.ErrNoAsk) {
		t.Fatalf("second answer: %v", err)
	}
	if st, err := e.task.Wait(ctx); st != agent.StateIdle || err != nil {
		t.Fatalf("state %s err %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "p.txt")); err != nil {
		t.Fatalf("the approved write did not happen: %v", err)
	}
}

// TestSetProviderDuringTurns: the model can be switched (the panel's model
// menu, %agent model) while turns run; -race shows any unlocked read.
func TestSetProviderDuringTurns(t *testing.T) {
	const turns = 30
	var script []turn
	for i := 0; i < turns; i++ {
		script = append(script, say(fmt.Sprintf("answer %d", i)))
	}
	e := newEnv(t, setup{turns: script})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				e.task.SetProvider(e.model)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < turns; i++ {
		if err := start(e.task, fmt.Sprintf("question %d", i)); err != nil {
			t.Fatal(err)
		}
		if st, err := e.task.Wait(ctx); st != agent.StateIdle || err != nil {
			t.Fatalf("turn %d: state %s, error %v", i, st, err)
		}
	}
	close(stop)
	wg.Wait()
	if n := len(e.model.reqs()); n != turns {
		t.Fatalf("%d model requests, want %d", n, turns)
	}
}

// TestListenerReadsOnRewound: a listener may read the task (UI, API) when
// it hears of a rewind; the task holds no lock while it tells it.
func TestListenerReadsOnRewound(t *testing.T) {
	e := newEnv(t, setup{turns: []turn{say("one"), say("two")}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, q := range []string{"first", "second"} {
		if err := start(e.task, q); err != nil {
			t.Fatal(err)
		}
		if _, err := e.task.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	seen := make(chan int, 1)
	remove := e.task.Listen(func(ev agent.Event) {
		if ev.Kind == agent.EventRewound {
			seen <- len(e.task.UI()) + len(e.task.API())
		}
	})
	defer remove()
	var target int64
	for _, m := range e.task.UI() {
		if m.Text == "second" {
			target = m.TS
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.task.Rewind(ctx, target, rewind.Options{})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Rewind did not return: a listener that reads the task deadlocks it")
	}
	if n := <-seen; n != len(e.task.UI())+len(e.task.API()) {
		t.Fatalf("the listener saw %d messages, the task holds %d", n, len(e.task.UI())+len(e.task.API()))
	}
	e.checkStored()
}

// imageRunner is a backing kernel whose every cell shows two images.
type imageRunner struct{}

func (imageRunner) Run(context.Context, string, func(agent.CodeOutput)) (agent.CodeResult, error) {
	png := agent.Image{MIME: "image/png", Width: 1, Height: 1, Bytes: 67,
		Data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}
	return agent.CodeResult{Stdout: "plotted\n", Images: []agent.Image{png, png}}, nil
}

// TestImagesToVisionModels: the images the agent's code shows reach a
// model that takes images as image content in the tool result; another
// model gets only the text, which names them.
func TestImagesToVisionModels(t *testing.T) {
	for _, vision := range []bool{true, false} {
		t.Run(fmt.Sprintf("vision=%v", vision), func(t *testing.T) {
			e := newEnv(t, setup{
				vision: vision,
				mode:   agent.PermissionBypass,
				turns: []turn{
					{events: []provider.Event{call("c1", "execute_code", map[string]any{"code": "plot()"}), done(provider.StopToolUse)}},
					say("Two dots."),
				},
				cfg: func(c *agent.Config) {
					tb, err := agent.NewToolbox(agent.ToolboxOptions{Workspace: c.Toolbox.Workspace(), Runner: imageRunner{}})
					if err != nil {
						t.Fatal(err)
					}
					c.Toolbox = tb
				},
			})
			if _, err := e.run("plot it"); err != nil {
				t.Fatal(err)
			}
			reqs := e.model.reqs()
			last := reqs[1].Messages[len(reqs[1].Messages)-1]
			res := last.Content[0]
			if res.Type != messages.BlockToolResult || !strings.Contains(res.Content[0].Text, "[image/png 1x1") {
				t.Fatalf("tool result %+v", res)
			}
			var images int
			for _, b := range res.Content[1:] {
				if b.Type == messages.BlockImage && b.Source != nil && b.Source.MediaType == "image/png" && b.Source.Data != "" {
					images++
				}
			}
			if want := map[bool]int{true: 2, false: 0}[vision]; images != want || len(res.Content) != 1+want {
				t.Fatalf("vision %v: %d images in the tool result (%d blocks), want %d", vision, images, len(res.Content), want)
			}
			e.checkStored()
		})
	}
}

// pixelURL is a 1x1 PNG as a data: URL.
const pixelURL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

func runPrompt(t *testing.T, e *env, p agent.Prompt) {
	t.Helper()
	if _, err := e.task.Start(p, agent.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		if st, _ := e.task.Wait(ctx); st != agent.StateWaiting || ctx.Err() != nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPromptImages: images attached to a prompt reach a vision model as
// image blocks of the user's message; another model is told, in the text,
// that they were attached. The UI history shows them either way.
func TestPromptImages(t *testing.T) {
	im, err := agent.ImageFromDataURL(pixelURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, vision := range []bool{true, false} {
		t.Run(fmt.Sprintf("vision=%v", vision), func(t *testing.T) {
			e := newEnv(t, setup{vision: vision, turns: []turn{say("A dot.")}})
			runPrompt(t, e, agent.Prompt{Text: "What is this?", Images: []agent.Image{im, im}})
			msgs := e.model.reqs()[0].Messages
			user := msgs[len(msgs)-1]
			var images int
			for _, b := range user.Content[1:] {
				if b.Type == messages.BlockImage && b.Source.MediaType == "image/png" && b.Source.Data == im.Data {
					images++
				}
			}
			text := user.Content[0].Text
			if vision && (images != 2 || len(user.Content) != 3 || strings.Contains(text, "attached")) {
				t.Fatalf("vision model got %+v", user.Content)
			}
			if !vision && (len(user.Content) != 1 || !strings.Contains(text, "attached 2 images") || !strings.Contains(text, "[image/png 1x1")) {
				t.Fatalf("text model got %+v", user.Content)
			}
			ui := e.task.UI()
			if ui[0].Say != messages.SayText || len(ui[0].Images) != 2 || ui[0].Images[0] != pixelURL {
				t.Fatalf("the prompt's UI message %+v", ui[0])
			}
			e.checkStored()
		})
	}
}

// TestFollowupImages: an answer to a followup question may carry images;
// a vision model gets them in the tool result.
func TestFollowupImages(t *testing.T) {
	im, err := agent.ImageFromDataURL(pixelURL)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, setup{
		vision: true,
		turns: []turn{
			{events: []provider.Event{call("c1", "ask_followup_question", map[string]any{"question": "Show me?"}), done(provider.StopToolUse)}},
			say("I see it."),
		},
		answer: func(e *env, m messages.UIMessage) {
			e.task.Respond(m.TS, agent.Response{Kind: agent.ResponseMessage, Text: "this one", Images: []agent.Image{im}})
		},
	})
	e.run("look")
	res := e.model.reqs()[1].Messages
	tr := res[len(res)-1].Content[0]
	if len(tr.Content) != 2 || tr.Content[1].Type != messages.BlockImage || !strings.Contains(tr.Content[0].Text, "this one") {
		t.Fatalf("followup result %+v", tr)
	}
	var shown bool
	for _, m := range e.task.UI() {
		if m.Say == messages.SayUserFeedback && len(m.Images) == 1 {
			shown = true
		}
	}
	if !shown {
		t.Fatalf("the answer's image is not in the UI history: %s", kinds(e.task.UI()))
	}
	e.checkStored()
}

func TestImageFromDataURL(t *testing.T) {
	im, err := agent.ImageFromDataURL(pixelURL)
	if err != nil || im.MIME != "image/png" || im.Width != 1 || im.Height != 1 || im.Bytes != 70 {
		t.Fatalf("ImageFromDataURL = %+v, %v", im, err)
	}
	big := "data:image/png;base64," + strings.Repeat("A", (agent.MaxAttachedImageBytes+3)/3*4+8)
	webp := "data:image/webp;base64,UklGRiQAAABXRUJQVlA4IBgAAAAwAQCdASoBAAEAAwA0JaQAA3AA/vuUAAA="
	if im, err := agent.ImageFromDataURL(webp); err != nil || im.MIME != "image/webp" {
		t.Errorf("WebP: %+v, %v", im, err)
	}
	for name, u := range map[string]string{
		"not data":   "https://example.com/a.png",
		"no comma":   "data:image/png;base64",
		"not base64": "data:image/png,abc",
		"svg":        "data:image/svg+xml;base64,PHN2Zy8+",
		"broken":     "data:image/png;base64,!!!!",
		"not a png":  "data:image/png;base64,R0lGODlhAQABAAAAACw=",
		"not a webp": "data:image/webp;base64,iVBORw0KGgoAAAANSUhEUg==",
		"too large":  big,
	} {
		if _, err := agent.ImageFromDataURL(u); !errors.Is(err, agent.ErrBadImage) {
			t.Errorf("%s: err = %v, want ErrBadImage", name, err)
		}
	}
}

// start begins a turn of text, as a prompt does.
func start(t *agent.Task, text string) error {
	_, err := t.Start(agent.Prompt{Text: text}, agent.TurnOptions{})
	return err
}

// echoRunner is a backing kernel that shows each cell's code as a stream
// output, to the sink it is given.
type echoRunner struct{}

func (echoRunner) Run(_ context.Context, code string, out func(agent.CodeOutput)) (agent.CodeResult, error) {
	if out != nil {
		out(agent.CodeOutput{Type: "stream", Content: []byte(fmt.Sprintf(`{"name": "stdout", "text": %q}`, code))})
	}
	return agent.CodeResult{Stdout: code}, nil
}

// TestTurnOutputIsItsOwn: the outputs of the code a turn runs go to that
// turn's sink (TurnOptions.Output), those of a later turn's code never do,
// and a Call's code reports to the Call's own sink.
func TestTurnOutputIsItsOwn(t *testing.T) {
	code := func(id, c string) turn {
		return turn{events: []provider.Event{call(id, "execute_code", map[string]any{"code": c}), done(provider.StopToolUse)}}
	}
	e := newEnv(t, setup{
		mode:  agent.PermissionBypass,
		turns: []turn{code("c1", "first()"), say("One."), code("c2", "second()"), say("Two.")},
		cfg: func(c *agent.Config) {
			tb, err := agent.NewToolbox(agent.ToolboxOptions{Workspace: c.Toolbox.Workspace(), Runner: echoRunner{}})
			if err != nil {
				t.Fatal(err)
			}
			c.Toolbox = tb
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	var first, second, called []string
	sink := func(into *[]string) func(agent.CodeOutput) {
		return func(o agent.CodeOutput) {
			mu.Lock()
			defer mu.Unlock()
			*into = append(*into, string(o.Content))
		}
	}
	for _, r := range []struct {
		text string
		into *[]string
	}{{"one", &first}, {"two", &second}} {
		turn, err := e.task.Start(agent.Prompt{Text: r.text}, agent.TurnOptions{Output: sink(r.into)})
		if err != nil {
			t.Fatal(err)
		}
		if _, asks, err := turn.Next(ctx); asks || err != nil {
			t.Fatalf("turn %q: ask %v, error %v", r.text, asks, err)
		}
	}
	in, _ := json.Marshal(map[string]string{"code": "called()"})
	if _, err := e.task.Call(ctx, provider.ToolCall{ID: "x1", Name: "execute_code", Input: in}, agent.ApproveAll.Approver(), sink(&called)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range []struct {
		got  []string
		want string
	}{{first, "first()"}, {second, "second()"}, {called, "called()"}} {
		if len(c.got) != 1 || !strings.Contains(c.got[0], c.want) {
			t.Errorf("outputs %q, want only those of %s", c.got, c.want)
		}
	}
}
