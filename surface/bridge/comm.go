package bridge

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// The comms the bridge serves itself — the agent panel's today (panel.go),
// each target a commTarget — are told apart from the backing kernel's
// (widgets, …) in one place: commRouter.classify decodes a comm message
// once and says whose it is. Every message of ours skips the shell queue
// (Intercept): one worker goroutine hands them to their target in arrival
// order, also while a cell runs, whose ask the panel may be the one to
// answer. The replies to the kernel's own requests (a replyTarget's
// comm_msg: the notebook comm's) skip the worker too, handed over at once:
// a message on the worker may be the one waiting for them (a rewind from
// the panel puts cells back through the notebook comm). So do a
// replyTarget's comm_open and comm_close, so that the shell's next request
// sees them. The backing
// kernel's comms are proxied as any other message.

// commMsg is a comm message, decoded once.
type commMsg struct {
	r      *kernel.Request
	typ    string // comm_open, comm_msg, comm_close or comm_info_request
	id     string // comm_id
	target string // the target: comm_open's and comm_info_request's, and the one a known comm id was opened to
	data   json.RawMessage
}

// commTarget serves the comms frontends open to one target name. Its
// methods are called on the router's worker goroutine, one at a time.
type commTarget interface {
	open(ctx context.Context, m commMsg)
	message(ctx context.Context, m commMsg)
	// closed is told that the frontend closed comm id.
	closed(id string)
	// shutdown ends every comm of the target (the kernel is going down).
	shutdown()
}

// replyTarget is a commTarget whose frontends' comm_msg are only replies
// to the kernel's requests: reply takes one at once, on the goroutine that
// received it, and must not block. Its comm_open and comm_close are handed
// over at once too (open and closed must not block either), so that a
// request right behind a comm_open finds the comm open: agentkernel run
// opens the notebook comm and sends the first cell at once, and the
// agent's first model request, offered the notebook tools or not, must not
// depend on whether the worker had come to the open yet.
type replyTarget interface {
	reply(m commMsg)
}

// commRouter routes the bridge's comm messages to their targets. It is
// safe for concurrent use.
type commRouter struct {
	targets map[string]commTarget // by target name; fixed once made

	mu     sync.Mutex
	ids    map[string]string // comm id → target name, from comm_open on
	work   chan commMsg
	stop   context.CancelFunc
	done   chan struct{}
	closed bool
	log    func(msg string, args ...any)
}

func newCommRouter(targets map[string]commTarget, warn func(msg string, args ...any)) *commRouter {
	return &commRouter{targets: targets, ids: map[string]string{}, log: warn}
}

// classify decodes r, if it is a comm message, and reports whether it is
// ours: a comm_open to one of our targets (whose id is ours from then on),
// a comm_msg or comm_close of such a comm, a comm_info_request for one of
// our targets. Anything else is not decoded (it is on the path of every
// execute_request).
func (cr *commRouter) classify(r *kernel.Request) (commMsg, bool) {
	switch r.Type() {
	case wire.MsgCommOpen, wire.MsgCommMsg, wire.MsgCommClose, wire.MsgCommInfoRequest:
	default:
		return commMsg{}, false
	}
	var c struct {
		CommID     string          `json:"comm_id"`
		TargetName string          `json:"target_name"`
		Data       json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(r.Msg.Content, &c)
	m := commMsg{r: r, typ: r.Type(), id: c.CommID, target: c.TargetName, data: c.Data}
	cr.mu.Lock()
	defer cr.mu.Unlock()
	switch m.typ {
	case wire.MsgCommOpen:
		if cr.targets[m.target] == nil || m.id == "" {
			return m, false
		}
		cr.ids[m.id] = m.target
		return m, true
	case wire.MsgCommInfoRequest:
		return m, m.target != "" && cr.targets[m.target] != nil
	default: // comm_msg, comm_close
		t, ok := cr.ids[m.id]
		m.target = t
		if ok && m.typ == wire.MsgCommClose {
			delete(cr.ids, m.id)
		}
		return m, ok
	}
}

// Intercept implements kernel.Interceptor: the comm messages that are the
// bridge's own go to the comm worker at once, past the shell queue.
func (b *Bridge) Intercept(r *kernel.Request) bool {
	m, ok := b.comms.classify(r)
	if !ok {
		return false
	}
	if t, ok := b.comms.targets[m.target].(replyTarget); ok {
		switch m.typ {
		case wire.MsgCommMsg:
			t.reply(m)
			return true
		case wire.MsgCommOpen, wire.MsgCommClose:
			b.comms.dispatch(context.Background(), m)
			return true
		}
	}
	b.comms.enqueue(m)
	return true
}

func (cr *commRouter) enqueue(m commMsg) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if cr.closed {
		return // going down: dropped
	}
	if cr.work == nil {
		ctx, cancel := context.WithCancel(context.Background())
		cr.work, cr.stop, cr.done = make(chan commMsg, 4096), cancel, make(chan struct{})
		go cr.worker(ctx, cr.work, cr.done)
	}
	select {
	case cr.work <- m:
	default:
		cr.log("comm: too many messages queued; dropped one", "msg_type", m.typ, "target", m.target)
	}
}

// worker hands the messages to their targets in order.
func (cr *commRouter) worker(ctx context.Context, work <-chan commMsg, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case m := <-work:
			cr.dispatch(ctx, m)
		case <-ctx.Done():
			return
		}
	}
}

func (cr *commRouter) dispatch(ctx context.Context, m commMsg) {
	t := cr.targets[m.target]
	switch m.typ {
	case wire.MsgCommOpen:
		t.open(ctx, m)
	case wire.MsgCommMsg:
		t.message(ctx, m)
	case wire.MsgCommClose:
		t.closed(m.id)
	case wire.MsgCommInfoRequest:
		// No status around it: the shell may be busy with a cell, and an
		// idle would tell the frontend it is not.
		if err := m.r.Reply(wire.MsgCommInfoReply, map[string]any{"status": "ok", "comms": cr.open(m.target)}); err != nil {
			cr.log("comm: reply to comm_info_request", "error", err)
		}
	}
}

// open lists our open comms of target ("" for every target) as
// comm_info_reply's comms.
func (cr *commRouter) open(target string) map[string]any {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	out := map[string]any{}
	for id, t := range cr.ids {
		if target == "" || t == target {
			out[id] = map[string]string{"target_name": t}
		}
	}
	return out
}

// withOurs adds our open comms to a comm_info_reply of the backing kernel
// (a comm_info_request for every target goes to it).
func (cr *commRouter) withOurs(content json.RawMessage) json.RawMessage {
	ours := cr.open("")
	if len(ours) == 0 {
		return content
	}
	var rep map[string]any
	if err := json.Unmarshal(content, &rep); err != nil {
		return content
	}
	all, _ := rep["comms"].(map[string]any)
	if all == nil {
		all = map[string]any{}
	}
	for id, c := range ours {
		all[id] = c
	}
	rep["comms"] = all
	b, err := json.Marshal(rep)
	if err != nil {
		return content
	}
	return b
}

// forget drops comm id, closed from the kernel's side.
func (cr *commRouter) forget(id string) {
	cr.mu.Lock()
	delete(cr.ids, id)
	cr.mu.Unlock()
}

// close stops the worker and ends every target's comms.
func (cr *commRouter) close() {
	cr.mu.Lock()
	stop, done := cr.stop, cr.done
	cr.closed = true
	cr.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	for _, t := range cr.targets {
		t.shutdown()
	}
}

// commTransport sends a comm's messages as comm_msg on iopub, under the
// comm_open request, and closes it from the kernel's side.
type commTransport struct {
	b  *Bridge
	r  *kernel.Request
	id string
}

// send sends data as a comm_msg of the comm.
func (t *commTransport) send(data any) error {
	content, err := json.Marshal(map[string]any{"comm_id": t.id, "data": data})
	if err != nil {
		return err
	}
	return t.r.PublishRaw(wire.MsgCommMsg, content, nil, nil)
}

// close closes the comm from the kernel's side, saying why.
func (t *commTransport) close(reason string) {
	t.b.comms.forget(t.id)
	content, _ := json.Marshal(map[string]any{"comm_id": t.id, "data": map[string]string{"reason": reason}})
	if err := t.r.PublishRaw(wire.MsgCommClose, content, nil, nil); err != nil {
		t.b.log.Debug("comm_close", "error", err)
	}
}
