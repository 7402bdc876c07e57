package bridge

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/webview"
	"github.com/agentkernel/agentkernel/webview/hostagent"
)

// PanelTarget is the comm target of the agent panel: a frontend (the
// JupyterLab and Notebook 7 sidebar) opens a comm to it and speaks the web
// panel's protocol (docs/webview-protocol.md) through it, wherever the
// notebook's kernel is reachable (a remote server, JupyterHub, a gateway):
// comm_msg data {"frame": F} carries one client frame in; each message
// out is a comm_msg with data {"frame": F}, F a frame or a JSON array of
// frames. The comm carries what the notebook's user may do already: no
// token, and no key of any model.
const PanelTarget = "agentkernel.panel"

// comms are the bridge's panel comms, by comm id, over one Panel made at
// the first comm_open. Their messages skip the shell queue (Intercept):
// one worker goroutine handles them in arrival order, also while a cell
// runs, whose ask the panel may be the one to answer.
type comms struct {
	mu      sync.Mutex
	panel   *webview.Panel
	ids     map[string]bool // comm ids opened to PanelTarget, known from interception on
	clients map[string]*webview.Client
	work    chan *kernel.Request
	stop    context.CancelFunc
	done    chan struct{}
	closed  bool
}

// Intercept implements kernel.Interceptor: the panel's comm messages go
// to the comm worker at once, past the shell queue.
func (b *Bridge) Intercept(r *kernel.Request) bool {
	switch r.Type() {
	case wire.MsgCommOpen, wire.MsgCommMsg, wire.MsgCommClose:
	default:
		return false
	}
	if !b.ownComm(r) {
		return false
	}
	cs := &b.comms
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return true // going down: dropped
	}
	if cs.work == nil {
		ctx, cancel := context.WithCancel(context.Background())
		cs.work, cs.stop, cs.done = make(chan *kernel.Request, 4096), cancel, make(chan struct{})
		go b.commWorker(ctx, cs.work, cs.done)
	}
	select {
	case cs.work <- r:
	default:
		b.log.Warn("panel comm: too many messages queued; dropped one", "msg_type", r.Type())
	}
	return true
}

// commWorker handles the intercepted comm messages in order.
func (b *Bridge) commWorker(ctx context.Context, work <-chan *kernel.Request, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case r := <-work:
			b.handleComm(ctx, r)
		case <-ctx.Done():
			return
		}
	}
}

// handleComm takes the comm messages that are ours (true): a comm_open to
// PanelTarget, and comm_msg and comm_close of the comms it opened, and
// comm_info_request for PanelTarget. The rest go to the backing kernel.
func (b *Bridge) handleComm(ctx context.Context, r *kernel.Request) bool {
	var c struct {
		CommID     string          `json:"comm_id"`
		TargetName string          `json:"target_name"`
		Data       json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(r.Msg.Content, &c)
	switch r.Type() {
	case wire.MsgCommOpen:
		if c.TargetName != PanelTarget {
			return false
		}
		b.openComm(r, c.CommID)
	case wire.MsgCommMsg:
		cl := b.comms.client(c.CommID)
		if cl == nil {
			return false
		}
		var d struct {
			Frame json.RawMessage `json:"frame"`
		}
		if err := json.Unmarshal(c.Data, &d); err != nil || len(d.Frame) == 0 {
			cl.Error(webview.CodeBadFrame, `a comm_msg of the panel carries {"frame": {...}}`)
			return true
		}
		cl.Handle(ctx, d.Frame)
	case wire.MsgCommClose:
		cl := b.comms.remove(c.CommID)
		if cl == nil {
			return false
		}
		go cl.Detach() // its writer may be mid-write: the worker goes on with the next comm
	case wire.MsgCommInfoRequest:
		if c.TargetName != PanelTarget {
			return false
		}
		out := map[string]any{}
		for _, id := range b.comms.openIDs() {
			out[id] = map[string]string{"target_name": PanelTarget}
		}
		if err := r.Reply(wire.MsgCommInfoReply, map[string]any{"status": "ok", "comms": out}); err != nil {
			b.log.Debug("comm_info_reply", "error", err)
		}
	default:
		return false
	}
	return true
}

// ownComm reports whether r is a comm message handleComm takes; a
// comm_open to PanelTarget makes its id known at once, so that the
// messages that follow it are ours before the worker has opened it.
func (b *Bridge) ownComm(r *kernel.Request) bool {
	switch r.Type() {
	case wire.MsgCommOpen, wire.MsgCommInfoRequest, wire.MsgCommMsg, wire.MsgCommClose:
	default:
		return false // no decoding on the path of every execute_request (DeferBusy)
	}
	var c struct {
		CommID     string `json:"comm_id"`
		TargetName string `json:"target_name"`
	}
	_ = json.Unmarshal(r.Msg.Content, &c)
	cs := &b.comms
	cs.mu.Lock()
	defer cs.mu.Unlock()
	switch r.Type() {
	case wire.MsgCommOpen:
		if c.TargetName == PanelTarget && c.CommID != "" {
			if cs.ids == nil {
				cs.ids = map[string]bool{}
			}
			cs.ids[c.CommID] = true
			return true
		}
	case wire.MsgCommInfoRequest:
		return c.TargetName == PanelTarget
	case wire.MsgCommMsg, wire.MsgCommClose:
		return cs.ids[c.CommID]
	}
	return false
}

// openComm attaches a panel client to the comm id: its first message is
// the session's state.
func (b *Bridge) openComm(r *kernel.Request, id string) {
	t := &commTransport{b: b, r: r, id: id}
	b.comms.mu.Lock()
	defer b.comms.mu.Unlock()
	if b.comms.closed {
		t.Close("the kernel is shutting down", true)
		return
	}
	if b.comms.panel == nil {
		b.comms.panel = webview.NewPanel(hostagent.New(b.host), webview.PanelOptions{Logger: b.log})
		b.comms.clients = map[string]*webview.Client{}
	}
	if old := b.comms.clients[id]; old != nil {
		go old.Detach()
	}
	cl, err := b.comms.panel.Attach(t)
	if err != nil {
		t.Close(err.Error(), true)
		return
	}
	b.comms.clients[id] = cl
	b.log.Debug("panel comm opened", "comm_id", id, "client", cl.ID())
}

func (cs *comms) client(id string) *webview.Client {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.clients[id]
}

func (cs *comms) remove(id string) *webview.Client {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cl := cs.clients[id]
	delete(cs.clients, id)
	delete(cs.ids, id)
	return cl
}

// attached reports whether a panel comm is open: the sidebar answers the
// asks then.
func (cs *comms) attached() bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.clients) > 0
}

func (cs *comms) openIDs() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []string
	for id := range cs.clients {
		out = append(out, id)
	}
	return out
}

// close stops the worker and ends every panel comm (each gets its
// comm_close) and the panel.
func (cs *comms) close() {
	cs.mu.Lock()
	p, stop, done := cs.panel, cs.stop, cs.done
	cs.closed, cs.panel, cs.clients = true, nil, nil
	cs.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	if p != nil {
		p.Close()
	}
}

// commTransport sends a panel client's messages as comm_msg on iopub,
// under the comm_open request.
type commTransport struct {
	b  *Bridge
	r  *kernel.Request
	id string
}

func (t *commTransport) Write(_ context.Context, msg []byte) error {
	content, err := json.Marshal(map[string]any{"comm_id": t.id, "data": map[string]json.RawMessage{"frame": msg}})
	if err != nil {
		return err
	}
	return t.r.PublishRaw(wire.MsgCommMsg, content, nil, nil)
}

// Close closes the comm from the kernel's side, saying why.
func (t *commTransport) Close(reason string, _ bool) {
	content, _ := json.Marshal(map[string]any{"comm_id": t.id, "data": map[string]string{"reason": reason}})
	if err := t.r.PublishRaw(wire.MsgCommClose, content, nil, nil); err != nil {
		t.b.log.Debug("panel comm_close", "error", err)
	}
}
