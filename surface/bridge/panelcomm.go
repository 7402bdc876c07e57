package bridge

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agentkernel/agentkernel/surface/webview"
	"github.com/agentkernel/agentkernel/surface/webview/hostagent"
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

// panelComms are the comms open to PanelTarget, each a client of one
// Panel made at the first comm_open. A commTarget of the bridge's router.
type panelComms struct {
	b *Bridge

	mu      sync.Mutex
	panel   *webview.Panel
	clients map[string]*webview.Client
	down    bool
}

// open attaches a panel client to the comm: its first message is the
// session's state.
func (p *panelComms) open(_ context.Context, m commMsg) {
	t := &panelTransport{commTransport{b: p.b, r: m.r, id: m.id}}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		t.Close("the kernel is shutting down", true)
		return
	}
	if p.panel == nil {
		p.panel = webview.NewPanel(hostagent.New(p.b.host), webview.PanelOptions{Logger: p.b.log})
		p.clients = map[string]*webview.Client{}
	}
	if old := p.clients[m.id]; old != nil {
		go old.Detach()
	}
	cl, err := p.panel.Attach(t)
	if err != nil {
		t.Close(err.Error(), true)
		return
	}
	p.clients[m.id] = cl
	p.b.log.Debug("panel comm opened", "comm_id", m.id, "client", cl.ID())
}

// message hands a client frame to the comm's client.
func (p *panelComms) message(ctx context.Context, m commMsg) {
	p.mu.Lock()
	cl := p.clients[m.id]
	p.mu.Unlock()
	if cl == nil {
		return
	}
	var d struct {
		Frame json.RawMessage `json:"frame"`
	}
	if err := json.Unmarshal(m.data, &d); err != nil || len(d.Frame) == 0 {
		cl.Error(webview.CodeBadFrame, `a comm_msg of the panel carries {"frame": {...}}`)
		return
	}
	cl.Handle(ctx, d.Frame)
}

// closed detaches the client of a comm the frontend closed.
func (p *panelComms) closed(id string) {
	p.mu.Lock()
	cl := p.clients[id]
	delete(p.clients, id)
	p.mu.Unlock()
	if cl != nil {
		go cl.Detach() // its writer may be mid-write: the worker goes on with the next comm
	}
}

// attached reports whether a panel comm is open: the sidebar answers the
// asks then.
func (p *panelComms) attached() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.clients) > 0
}

// shutdown ends every panel comm (each gets its comm_close) and the panel.
func (p *panelComms) shutdown() {
	p.mu.Lock()
	panel := p.panel
	p.down, p.panel, p.clients = true, nil, nil
	p.mu.Unlock()
	if panel != nil {
		panel.Close()
	}
}

// panelTransport is a panel client's webview.Transport over its comm.
type panelTransport struct{ commTransport }

func (t *panelTransport) Write(_ context.Context, msg []byte) error {
	return t.send(map[string]json.RawMessage{"frame": msg})
}

// Close closes the comm from the kernel's side, saying why.
func (t *panelTransport) Close(reason string, _ bool) { t.close(reason) }
