package webview

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/messages"
)

// hub is the mirror of the session's state and the set of clients. Every
// change to the mirror and its broadcast happen under mu, so every client
// receives the same frames in the same order, and a client registered
// under mu gets a state frame consistent with the frames that follow it.
//
// The event path (publish) never blocks: it applies the event, marshals
// one frame and offers it to each client's buffer, dropping clients whose
// buffer is full.
//
// Rewinds and session switches cannot be mirrored from the event alone:
// publish starts a resync, which the resync goroutine performs by reading
// Snapshot off the event path. Events that arrive meanwhile are applied
// and broadcast as usual and also logged; the snapshot, with the log
// replayed on top (upserts by ts are idempotent in order), becomes the
// mirror, and every client gets it as one messagesRewound or state frame.
// A client that connects during a resync gets nothing until the resync
// lands, then the new mirror as its state frame: never the history the
// rewind removed.
type hub struct {
	mirror Mirror
	log    hclog.Logger

	mu        sync.Mutex
	st        State
	pos       map[int64]int // ts → index in st.Messages
	clients   map[*conn]struct{}
	waiting   map[*conn]struct{} // clients that joined during a resync: no frame before their state
	resyncing bool
	reset     bool   // the pending resync is a session switch
	gen       uint64 // bumped by each rewind/reset event
	pending   []Event

	kick    chan struct{} // cap 1: a resync is wanted
	dropped atomic.Int64
	sent    atomic.Int64

	// onBroadcast, when set (benchmarks), is called under mu after each
	// broadcast frame with the number of clients offered it.
	onBroadcast func(frame []byte)
}

func newHub(m Mirror, log hclog.Logger) *hub {
	return &hub{
		mirror:  m,
		log:     log,
		pos:     map[int64]int{},
		clients: map[*conn]struct{}{},
		waiting: map[*conn]struct{}{},
		kick:    make(chan struct{}, 1),
		// Until the first snapshot lands, events are logged.
		resyncing: true,
		reset:     true,
	}
}

// publish is the Mirror's Subscribe callback.
func (h *hub) publish(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch ev.Kind {
	case EventRewound, EventReset:
		h.gen++
		h.pending = h.pending[:0]
		h.resyncing = true
		if ev.Kind == EventReset {
			h.reset = true
		}
		select {
		case h.kick <- struct{}{}:
		default:
		}
		return
	}
	if h.resyncing {
		h.pending = append(h.pending, cloneEvent(ev))
	}
	if frame := h.applyLocked(ev); frame != nil {
		h.broadcastLocked(frame)
	}
}

func cloneEvent(ev Event) Event {
	if ev.Message != nil {
		m := *ev.Message
		ev.Message = &m
	}
	return ev
}

// applyLocked changes the mirror by ev and returns the frame that makes
// the same change on a client, or nil when nothing changed.
func (h *hub) applyLocked(ev Event) []byte {
	switch ev.Kind {
	case EventMessageCreated:
		if ev.Message == nil {
			return nil
		}
		m := *ev.Message
		h.upsertLocked(m)
		return h.messageFrameLocked("messageCreated", m)
	case EventMessageUpdated:
		if ev.Message == nil {
			return nil
		}
		m := *ev.Message
		i, ok := h.pos[m.TS]
		if !ok {
			return nil // an update of a message a rewind removed
		}
		old := h.st.Messages[i]
		h.st.Messages[i] = m
		if add, addR, ok := appended(old, m); ok {
			return mustJSON(appendFrame{V: ProtocolVersion, Type: "messageUpdated", TS: m.TS, Append: add, Reasoning: addR, Partial: m.Partial})
		}
		return h.messageFrameLocked("messageUpdated", m)
	case EventStatus:
		if h.st.KernelStatus == ev.Status {
			return nil
		}
		h.st.KernelStatus = ev.Status
		return mustJSON(statusFrame{V: ProtocolVersion, Type: "kernelStatus", Status: ev.Status})
	case EventTotals:
		h.st.Totals = ev.Totals
		return mustJSON(totalsFrame{V: ProtocolVersion, Type: "tokenUsage", Totals: ev.Totals})
	case EventSettings:
		if ev.Title != "" && ev.Title == h.st.Title && ev.PermissionMode == h.st.PermissionMode && ev.Model == h.st.Model && ev.AgentMode == h.st.AgentMode {
			return nil // a title that did not change
		}
		h.st.PermissionMode, h.st.Model, h.st.AgentMode = ev.PermissionMode, ev.Model, ev.AgentMode
		if ev.Title != "" {
			h.st.Title = ev.Title
		}
		return mustJSON(settingsFrame{V: ProtocolVersion, Type: "settings", PermissionMode: ev.PermissionMode, Model: ev.Model, Title: ev.Title, AgentMode: ev.AgentMode})
	case EventMCP:
		h.st.MCPServers = ev.MCP
		return mustJSON(mcpFrame{V: ProtocolVersion, Type: "mcpServers", Servers: ev.MCP})
	}
	return nil
}

// upsertLocked puts m in the mirror: replacing the message with its ts,
// appending it (the common case), or inserting it in ts order.
func (h *hub) upsertLocked(m messages.UIMessage) {
	if i, ok := h.pos[m.TS]; ok {
		h.st.Messages[i] = m
		return
	}
	n := len(h.st.Messages)
	if n == 0 || h.st.Messages[n-1].TS < m.TS {
		h.st.Messages = append(h.st.Messages, m)
		h.pos[m.TS] = n
		return
	}
	i, _ := slices.BinarySearchFunc(h.st.Messages, m.TS, func(x messages.UIMessage, ts int64) int {
		switch {
		case x.TS < ts:
			return -1
		case x.TS > ts:
			return 1
		}
		return 0
	})
	h.st.Messages = slices.Insert(h.st.Messages, i, m)
	h.reindexLocked()
}

func (h *hub) reindexLocked() {
	clear(h.pos)
	for i, m := range h.st.Messages {
		h.pos[m.TS] = i
	}
}

// messageFrameLocked keeps PendingAsk as m changes it — a complete,
// unanswered, blocking ask becomes pending; the pending ask stops being so
// once answered — and returns the frame of m (typ: messageCreated or
// messageUpdated), which says whether m is now the pending ask. The panel
// follows that word and applies no rule of its own.
func (h *hub) messageFrameLocked(typ string, m messages.UIMessage) []byte {
	open := IsOpenAsk(m)
	if open {
		p := m
		h.st.PendingAsk = &p
	} else if h.st.PendingAsk != nil && h.st.PendingAsk.TS == m.TS {
		h.st.PendingAsk = nil
	}
	w := toWire(m)
	return mustJSON(messageFrame{V: ProtocolVersion, Type: typ, Message: &w, Pending: open})
}

// IsOpenAsk reports whether m is an ask waiting for the user: complete,
// unanswered, and of a kind that blocks the task.
func IsOpenAsk(m messages.UIMessage) bool {
	return m.Type == messages.TypeAsk && !m.Partial && !m.IsAnswered && m.Ask.Blocks()
}

// appended reports whether m differs from old only by text appended to
// Text and Reasoning (and by Partial), and returns the additions. An ask
// is never sent so: its frame says whether it is the pending ask.
func appended(old, m messages.UIMessage) (text, reasoning string, ok bool) {
	if m.Type == messages.TypeAsk {
		return "", "", false
	}
	if !strings.HasPrefix(m.Text, old.Text) || !strings.HasPrefix(m.Reasoning, old.Reasoning) {
		return "", "", false
	}
	if old.Type != m.Type || old.Ask != m.Ask || old.Say != m.Say || old.IsAnswered != m.IsAnswered ||
		old.IsProtected != m.IsProtected || old.Settings != m.Settings || !slices.Equal(old.Images, m.Images) ||
		old.ConversationHistoryIndex != nil || m.ConversationHistoryIndex != nil ||
		old.Checkpoint != nil || m.Checkpoint != nil || old.ProgressStatus != nil || m.ProgressStatus != nil ||
		old.ContextCondense != nil || m.ContextCondense != nil || old.ContextTruncation != nil || m.ContextTruncation != nil {
		return "", "", false
	}
	return m.Text[len(old.Text):], m.Reasoning[len(old.Reasoning):], true
}

// broadcastLocked offers frame to every client without blocking (but
// those waiting for their state).
func (h *hub) broadcastLocked(frame []byte) {
	for c := range h.clients {
		if _, ok := h.waiting[c]; ok {
			continue
		}
		if !c.offer(frame) {
			h.dropLocked(c, "too slow to keep up; reconnect to resync")
		}
	}
	h.sent.Add(1)
	if h.onBroadcast != nil {
		h.onBroadcast(frame)
	}
}

func (h *hub) dropLocked(c *conn, reason string) {
	if _, ok := h.clients[c]; !ok {
		return
	}
	delete(h.clients, c)
	delete(h.waiting, c)
	h.dropped.Add(1)
	h.log.Warn("web panel client dropped", "client", c.id, "reason", reason)
	c.drop(reason)
}

// add registers c and queues the full state as its first frame; during a
// resync, once it lands.
func (h *hub) add(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clients[c] = struct{}{}
	if h.resyncing && len(h.st.Messages) > 0 {
		h.waiting[c] = struct{}{}
		return
	}
	c.offer(h.stateFrameLocked())
}

// stateToWaitingLocked gives the clients that joined during the resync
// their state frame.
func (h *hub) stateToWaitingLocked() {
	if len(h.waiting) == 0 {
		return
	}
	frame := h.stateFrameLocked()
	for c := range h.waiting {
		delete(h.waiting, c)
		if !c.offer(frame) {
			h.dropLocked(c, "too slow to keep up; reconnect to resync")
		}
	}
}

func (h *hub) remove(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.clients, c)
	delete(h.waiting, c)
}

func (h *hub) stateFrameLocked() []byte {
	st := h.st
	st.Messages, st.Older = window(h.st.Messages)
	return mustJSON(stateFrame{V: ProtocolVersion, Type: "state", State: toWireState(st)})
}

// window is the newest StateWindow of msgs, and how many come before them.
func window(msgs []messages.UIMessage) ([]messages.UIMessage, int) {
	if len(msgs) <= StateWindow {
		return msgs, 0
	}
	return msgs[len(msgs)-StateWindow:], len(msgs) - StateWindow
}

// olderFor sends c the page of up to limit messages before ts.
func (h *hub) olderFor(c *conn, id string, ts int64, limit int) {
	h.mu.Lock()
	var before []int
	for i := range h.st.Messages {
		if h.st.Messages[i].TS < ts {
			before = append(before, i)
		}
	}
	start := max(0, len(before)-limit)
	page := make([]messages.UIMessage, 0, len(before)-start)
	for _, i := range before[start:] {
		page = append(page, h.st.Messages[i])
	}
	h.mu.Unlock()
	h.sendTo(c, mustJSON(olderFrame{V: ProtocolVersion, Type: "olderMessages", ID: id, Messages: toWireAll(page), Older: start}))
}

// sendTo offers a frame to one client (replies, errors); a full buffer
// drops it like a broadcast would.
func (h *hub) sendTo(c *conn, frame []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.clients[c]; !ok {
		return
	}
	if !c.offer(frame) {
		h.dropLocked(c, "too slow to keep up; reconnect to resync")
	}
}

// stateFor queues a fresh full state for one client (getState).
func (h *hub) stateFor(c *conn) {
	h.mu.Lock()
	frame := h.stateFrameLocked()
	h.mu.Unlock()
	h.sendTo(c, frame)
}

// resync reads a snapshot and makes it the mirror (see hub). It returns
// false when a newer rewind arrived meanwhile and another round is due.
func (h *hub) resync(ctx context.Context) bool {
	h.mu.Lock()
	gen := h.gen
	h.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	st, err := h.mirror.Snapshot(sctx)
	cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gen != gen {
		return false
	}
	if err != nil {
		if ctx.Err() != nil {
			return true
		}
		h.log.Error("web panel: read the session state", "error", err)
		h.stateToWaitingLocked() // what is known, with the error after it
		h.broadcastLocked(mustJSON(errorFrame{V: ProtocolVersion, Type: "error", Code: CodeResyncFailed,
			Message: "could not read the session state: " + err.Error()}))
		return true // keep logging; the next rewind or reset retries
	}
	if st.Messages == nil {
		st.Messages = []messages.UIMessage{}
	}
	h.st = st
	h.reindexLocked()
	for _, ev := range h.pending {
		h.applyLocked(ev)
	}
	h.pending = nil
	h.resyncing = false
	defer h.stateToWaitingLocked()
	if h.reset {
		h.reset = false
		h.broadcastLocked(h.stateFrameLocked())
	} else {
		msgs, older := window(h.st.Messages)
		h.broadcastLocked(mustJSON(rewoundFrame{V: ProtocolVersion, Type: "messagesRewound",
			Messages: toWireAll(msgs), PendingAsk: toWirePtr(h.st.PendingAsk), Older: older}))
	}
	return true
}

// run performs resyncs until ctx ends.
func (h *hub) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.kick:
		}
		for !h.resync(ctx) && ctx.Err() == nil {
		}
	}
}

// snapshot returns a copy of the mirror (tests, Server.State).
func (h *hub) snapshot() State {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.st
	st.Messages = slices.Clone(h.st.Messages)
	return st
}

// closeAll drops every client with reason.
func (h *hub) closeAll(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		delete(h.clients, c)
		c.drop(reason)
	}
}

func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}
