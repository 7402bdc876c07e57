package webview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentkernel/agentkernel/messages"
)

// fakeAgent is an Agent over an in-memory history. Like agent.Task it
// calls listeners synchronously, and it emits EventRewound with its lock
// held (Task.Rewind does), so the server must not call back from publish.
type fakeAgent struct {
	mu    sync.Mutex
	st    State
	lis   map[int]func(Event)
	next  int
	calls []string
	ts    int64
	// gate, when set, holds Snapshot until it is closed (a slow store).
	gate chan struct{}
}

// parts is f as a panel composes it: every part but the settings view and
// the completion of mentions.
func (f *fakeAgent) parts() Agent {
	return Agent{Mirror: f, Driver: f, Rewinder: f, Modes: f, Sessions: f}
}

func newFake() *fakeAgent {
	return &fakeAgent{st: State{SessionID: "s1", Messages: []messages.UIMessage{}, PermissionMode: "default", Model: "scripted:test",
		KernelStatus: "idle"}, lis: map[int]func(Event){}, ts: 1000}
}

func (f *fakeAgent) emitLocked(ev Event) {
	for _, id := range f.ids() {
		f.lis[id](ev)
	}
}

func (f *fakeAgent) ids() []int {
	ids := make([]int, 0, len(f.lis))
	for id := range f.lis {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// emit calls the listeners outside the lock, as Task does for messages.
func (f *fakeAgent) emit(ev Event) {
	f.mu.Lock()
	var fns []func(Event)
	for _, id := range f.ids() {
		fns = append(fns, f.lis[id])
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(ev)
	}
}

func (f *fakeAgent) nextTS() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ts++
	return f.ts
}

func (f *fakeAgent) create(m messages.UIMessage) {
	f.mu.Lock()
	f.st.Messages = append(f.st.Messages, m)
	if IsOpenAsk(m) {
		p := m
		f.st.PendingAsk = &p
	}
	f.mu.Unlock()
	f.emit(Event{Kind: EventMessageCreated, Message: &m})
}

func (f *fakeAgent) update(m messages.UIMessage) {
	f.mu.Lock()
	for i := range f.st.Messages {
		if f.st.Messages[i].TS == m.TS {
			f.st.Messages[i] = m
		}
	}
	if f.st.PendingAsk != nil && f.st.PendingAsk.TS == m.TS && !IsOpenAsk(m) {
		f.st.PendingAsk = nil
	}
	f.mu.Unlock()
	f.emit(Event{Kind: EventMessageUpdated, Message: &m})
}

func (f *fakeAgent) status(s string) {
	f.mu.Lock()
	f.st.KernelStatus = s
	f.mu.Unlock()
	f.emit(Event{Kind: EventStatus, Status: s})
}

func (f *fakeAgent) totals(t Totals) {
	f.mu.Lock()
	f.st.Totals = t
	f.mu.Unlock()
	f.emit(Event{Kind: EventTotals, Totals: t})
}

func (f *fakeAgent) record(call string) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
}

func (f *fakeAgent) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeAgent) Snapshot(ctx context.Context) (State, error) {
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return State{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.st
	st.Messages = slices.Clone(f.st.Messages)
	return st, nil
}

func (f *fakeAgent) Subscribe(_ context.Context, fn func(Event)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	f.lis[id] = fn
	return func() {
		f.mu.Lock()
		delete(f.lis, id)
		f.mu.Unlock()
	}
}

func (f *fakeAgent) NewTask(ctx context.Context, text string, images []string) error {
	if len(images) > 0 {
		text += fmt.Sprintf(" (+%d images)", len(images))
	}
	f.record("newTask:" + text)
	f.create(messages.UIMessage{TS: f.nextTS(), Type: messages.TypeSay, Say: messages.SayText, Text: text, Images: images})
	return nil
}

func (f *fakeAgent) Respond(ctx context.Context, ts int64, r Response) error {
	f.record(fmt.Sprintf("respond:%d:%s:%s", ts, r.Kind, r.Text))
	f.mu.Lock()
	p := f.st.PendingAsk
	f.mu.Unlock()
	if p == nil || p.TS != ts {
		return errors.New("no such pending ask")
	}
	m := *p
	m.IsAnswered = true
	f.update(m)
	return nil
}

func (f *fakeAgent) Cancel(ctx context.Context) error { f.record("cancel"); return nil }

func (f *fakeAgent) Rewind(ctx context.Context, ts int64, choice RewindChoice) (RewindReport, error) {
	f.record(fmt.Sprintf("rewind:%d:%+v", ts, choice))
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.st.Messages, func(m messages.UIMessage) bool { return m.TS == ts })
	if i < 0 {
		return RewindReport{}, fmt.Errorf("no message %d", ts)
	}
	f.st.Messages = f.st.Messages[:i:i]
	if f.st.PendingAsk != nil && f.st.PendingAsk.TS >= ts {
		f.st.PendingAsk = nil
	}
	f.emitLocked(Event{Kind: EventRewound}) // with the lock held, as the Agent contract allows
	return RewindReport{Summary: fmt.Sprintf("rewound to %d", ts)}, nil
}

func (f *fakeAgent) Fork(ctx context.Context, ts int64, choice RewindChoice) (RewindReport, error) {
	f.record(fmt.Sprintf("fork:%d", ts))
	return RewindReport{Summary: "forked", ForkID: "fork-1"}, nil
}

func (f *fakeAgent) Edit(ctx context.Context, ts int64, text string, choice RewindChoice) (RewindReport, error) {
	rep, err := f.Rewind(ctx, ts, choice)
	if err != nil {
		return rep, err
	}
	return rep, f.NewTask(ctx, text, nil)
}

func (f *fakeAgent) SetAgentMode(ctx context.Context, mode string) error {
	f.record("agentMode:" + mode)
	f.mu.Lock()
	f.st.AgentMode = mode
	st := f.st
	f.mu.Unlock()
	f.emit(Event{Kind: EventSettings, PermissionMode: st.PermissionMode, Model: st.Model, AgentMode: st.AgentMode})
	return nil
}

func (f *fakeAgent) SetPermissionMode(ctx context.Context, mode string) error {
	f.record("mode:" + mode)
	f.mu.Lock()
	f.st.PermissionMode = mode
	st := f.st
	f.mu.Unlock()
	f.emit(Event{Kind: EventSettings, PermissionMode: st.PermissionMode, Model: st.Model})
	return nil
}

func (f *fakeAgent) SetModel(ctx context.Context, model string) error {
	f.record("model:" + model)
	f.mu.Lock()
	f.st.Model = model
	st := f.st
	f.mu.Unlock()
	f.emit(Event{Kind: EventSettings, PermissionMode: st.PermissionMode, Model: st.Model})
	return nil
}

func (f *fakeAgent) ListSessions(ctx context.Context, search string, limit int) ([]SessionInfo, error) {
	f.record("list:" + search)
	return []SessionInfo{{ID: "s1", Title: "first", Current: true}, {ID: "s2", Title: "second"}}, nil
}

func (f *fakeAgent) SearchMessages(ctx context.Context, q string, limit int) ([]SearchHit, error) {
	f.record("search:" + q)
	return []SearchHit{{SessionID: "s2", TS: 5, Kind: "say:text", Snippet: "**" + q + "**"}}, nil
}

func (f *fakeAgent) LoadSession(ctx context.Context, id string) error {
	f.record("load:" + id)
	f.mu.Lock()
	f.st = State{SessionID: id, Messages: []messages.UIMessage{{TS: 1, Type: messages.TypeSay, Say: messages.SayText, Text: "loaded " + id}},
		PermissionMode: f.st.PermissionMode, Model: f.st.Model, KernelStatus: "idle"}
	f.mu.Unlock()
	f.emit(Event{Kind: EventReset})
	return nil
}

// startServer starts a Server over a and closes it at the end of the test.
func startServer(t testing.TB, a Agent, opts Options) *Server {
	t.Helper()
	s, err := Start(a, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func wsURL(s *Server) string {
	return "ws" + strings.TrimPrefix(strings.Replace(s.URL(), "/?", "/ws?", 1), "http")
}

// testClient is a panel client in Go: it applies frames as the panel's
// page does (surface/webview/panel/src/state.js), taking the pending ask from the
// frames, and checks that every ask it is sent says how it is answered.
type testClient struct {
	t    testing.TB
	ws   *websocket.Conn
	st   State
	pos  map[int64]int
	seen int // frames applied
	// queued are frames of a batched message not yet applied
	queued [][]byte
	// other frames (ack, error, sessions, searchResults), in order
	other []map[string]any
}

func dial(t testing.TB, s *Server) *testClient {
	t.Helper()
	ws, _, err := websocket.Dial(context.Background(), wsURL(s), nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(64 << 20)
	c := &testClient{t: t, ws: ws, pos: map[int64]int{}}
	t.Cleanup(func() { ws.CloseNow() })
	return c
}

func (c *testClient) send(v any) {
	c.t.Helper()
	b, _ := json.Marshal(v)
	if err := c.ws.Write(context.Background(), websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
}

// next reads and applies one frame, returning its type.
func (c *testClient) next(ctx context.Context) (string, map[string]any, error) {
	_, typ, raw, err := c.nextRaw(ctx)
	return typ, raw, err
}

// nextRaw is next, with the frame as it was sent.
func (c *testClient) nextRaw(ctx context.Context) ([]byte, string, map[string]any, error) {
	if len(c.queued) == 0 {
		_, data, err := c.ws.Read(ctx)
		if err != nil {
			return nil, "", nil, err
		}
		frames, err := splitFrames(data)
		if err != nil {
			return nil, "", nil, err
		}
		c.queued = frames
	}
	data := c.queued[0]
	c.queued = c.queued[1:]
	typ, raw, err := c.apply(data)
	return data, typ, raw, err
}

// splitFrames returns the frames of one server message: a frame, or a JSON
// array of frames.
func splitFrames(data []byte) ([][]byte, error) {
	if len(data) == 0 || data[0] != '[' {
		return [][]byte{data}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, err
	}
	out := make([][]byte, len(raws))
	for i, r := range raws {
		out[i] = r
	}
	return out, nil
}

func (c *testClient) apply(data []byte) (string, map[string]any, error) {
	var f struct {
		V          int                  `json:"v"`
		Type       string               `json:"type"`
		State      *State               `json:"state"`
		Message    *wireMessage         `json:"message"`
		Pending    bool                 `json:"pending"`
		TS         int64                `json:"ts"`
		Append     string               `json:"append"`
		Reasoning  string               `json:"appendReasoning"`
		Partial    bool                 `json:"partial"`
		Messages   []messages.UIMessage `json:"messages"`
		PendingAsk *messages.UIMessage  `json:"pendingAsk"`
		Status     string               `json:"status"`
		Totals     Totals               `json:"totals"`
		Permission string               `json:"permissionMode"`
		AgentMode  string               `json:"agentMode"`
		Model      string               `json:"model"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return "", nil, err
	}
	if f.V != ProtocolVersion {
		return "", nil, fmt.Errorf("frame version %d", f.V)
	}
	c.seen++
	reindex := func() {
		clear(c.pos)
		for i, m := range c.st.Messages {
			c.pos[m.TS] = i
		}
	}
	// The frame says whether its message is now the pending ask.
	track := func(m messages.UIMessage) {
		if f.Pending {
			c.st.PendingAsk = &m
		} else if c.st.PendingAsk != nil && c.st.PendingAsk.TS == m.TS {
			c.st.PendingAsk = nil
		}
	}
	if m := f.Message; m != nil && m.Type == messages.TypeAsk && m.Ask.Known() && m.Answer == nil {
		return "", nil, fmt.Errorf("ask %d (%s) without its answer: %s", m.TS, m.Ask, data)
	}
	switch f.Type {
	case "state":
		c.st = *f.State
		reindex()
	case "messageCreated":
		m := f.Message.UIMessage
		if i, ok := c.pos[m.TS]; ok {
			c.st.Messages[i] = m
		} else {
			c.st.Messages = append(c.st.Messages, m)
			slices.SortFunc(c.st.Messages, func(a, b messages.UIMessage) int { return int(a.TS - b.TS) })
			reindex()
		}
		track(m)
	case "messageUpdated":
		if f.Message != nil {
			m := f.Message.UIMessage
			i, ok := c.pos[m.TS]
			if !ok {
				return "", nil, fmt.Errorf("update of unknown message %d", m.TS)
			}
			c.st.Messages[i] = m
			track(m)
		} else {
			i, ok := c.pos[f.TS]
			if !ok {
				return "", nil, fmt.Errorf("append to unknown message %d", f.TS)
			}
			m := &c.st.Messages[i]
			if m.Type == messages.TypeAsk {
				return "", nil, fmt.Errorf("an ask (%d) updated by an append frame", f.TS)
			}
			m.Text += f.Append
			m.Reasoning += f.Reasoning
			m.Partial = f.Partial
		}
	case "messagesRewound":
		c.st.Messages = f.Messages
		c.st.PendingAsk = f.PendingAsk
		reindex()
	case "kernelStatus":
		c.st.KernelStatus = f.Status
	case "tokenUsage":
		c.st.Totals = f.Totals
	case "settings":
		c.st.PermissionMode, c.st.AgentMode, c.st.Model = f.Permission, f.AgentMode, f.Model
	default:
		var raw map[string]any
		_ = json.Unmarshal(data, &raw)
		c.other = append(c.other, raw)
		return f.Type, raw, nil
	}
	return f.Type, nil, nil
}

// until reads frames until one of type typ arrives (and returns it).
func (c *testClient) until(typ string) map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		got, raw, err := c.next(ctx)
		if err != nil {
			c.t.Fatalf("waiting for %s: %v", typ, err)
		}
		if got == typ {
			return raw
		}
	}
}

func httpStatus(t testing.TB, req *http.Request) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitFor reads frames until cond holds.
func (c *testClient) waitFor(cond func() bool) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for !cond() {
		if _, _, err := c.next(ctx); err != nil {
			c.t.Fatalf("waiting: %v (state %+v)", err, c.st)
		}
	}
}
