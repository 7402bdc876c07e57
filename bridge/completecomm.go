package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/session"
)

// CompleteTarget is the comm target of inline completions: the JupyterLab
// extension's inline completer opens one comm to it per notebook on an
// agent kernel, and asks through it what the cell being typed in goes on
// with (docs/notebook-protocol.md, "Inline completions"):
//
//	frontend → kernel: {"request": {"id", "prefix", "suffix", "before", "after"}}, {"cancel": id}
//	kernel → frontend: {"reply": {"id", "ok", "text"}} or {"reply": {"id", "ok": false, "error", "code"}}
//
// A new request cancels the ones still open on its comm (the user typed
// on). In prompt mode only %%code cells are completed.
const CompleteTarget = "agentkernel.complete"

// completeComms are the comms open to CompleteTarget. A commTarget of the
// bridge's router: each request runs on a goroutine of its own (a model
// takes its time; the router's worker does not wait), which shutdown
// cancels and waits for.
type completeComms struct {
	b *Bridge

	mu      sync.Mutex
	comms   map[string]commTransport
	running map[string]context.CancelFunc // request id → its cancel
	byComm  map[string][]string           // comm id → its open request ids
	wg      sync.WaitGroup
	down    bool
}

// completeRequest is a frontend's request.
type completeRequest struct {
	ID     string   `json:"id"`
	Prefix string   `json:"prefix"`
	Suffix string   `json:"suffix"`
	Before []string `json:"before"`
	After  []string `json:"after"`
}

func (cc *completeComms) open(_ context.Context, m commMsg) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.comms == nil {
		cc.comms, cc.running, cc.byComm = map[string]commTransport{}, map[string]context.CancelFunc{}, map[string][]string{}
	}
	cc.comms[m.id] = commTransport{b: cc.b, r: m.r, id: m.id}
}

func (cc *completeComms) message(_ context.Context, m commMsg) {
	var d struct {
		Request *completeRequest `json:"request"`
		Cancel  string           `json:"cancel"`
	}
	if err := json.Unmarshal(m.data, &d); err != nil {
		cc.b.log.Warn("completion comm: a message that is neither a request nor a cancel", "comm_id", m.id)
		return
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	t, ok := cc.comms[m.id]
	if !ok || cc.down {
		return
	}
	if d.Cancel != "" {
		if cancel := cc.running[d.Cancel]; cancel != nil {
			cancel()
		}
		return
	}
	if d.Request == nil || d.Request.ID == "" {
		return
	}
	for _, id := range cc.byComm[m.id] { // the user typed on: the earlier ones are moot
		if cancel := cc.running[id]; cancel != nil {
			cancel()
		}
	}
	req := *d.Request
	ctx, cancel := context.WithCancel(context.Background())
	cc.running[req.ID] = cancel
	cc.byComm[m.id] = append(cc.byComm[m.id], req.ID)
	cc.wg.Add(1)
	go func() {
		defer cc.wg.Done()
		defer cc.done(m.id, req.ID)
		text, err := cc.complete(ctx, req)
		if ctx.Err() != nil {
			return // cancelled: nobody waits for it
		}
		reply := map[string]any{"id": req.ID, "ok": err == nil, "text": text}
		if err != nil {
			reply["error"] = err.Error()
			if errors.Is(err, session.ErrNoCompletions) {
				reply["code"] = "off"
			}
		}
		if err := t.send(map[string]any{"reply": reply}); err != nil {
			cc.b.log.Debug("completion reply", "error", err)
		}
	}()
}

// done forgets a finished request.
func (cc *completeComms) done(comm, id string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cancel := cc.running[id]; cancel != nil {
		cancel()
	}
	delete(cc.running, id)
	ids := cc.byComm[comm]
	for i, x := range ids {
		if x == id {
			cc.byComm[comm] = append(ids[:i:i], ids[i+1:]...)
			break
		}
	}
}

// complete answers one request: in prompt mode only a %%code cell, told
// the %%code cells around it. agent.Complete cuts what is long (a cell of
// a megabyte) to its part around the cursor.
func (cc *completeComms) complete(ctx context.Context, r completeRequest) (string, error) {
	req := agent.CompletionRequest{Prefix: r.Prefix, Suffix: r.Suffix}
	code := func(src string) (string, bool) {
		if cc.b.cfg.Mode != ModePrompt {
			return src, true
		}
		return cutCellMagic(src, "%%code")
	}
	body, ok := code(r.Prefix)
	if !ok {
		return "", nil // a prompt: not code
	}
	req.Prefix = body
	for _, c := range r.Before {
		if s, ok := code(c); ok {
			req.Before = append(req.Before, s)
		}
	}
	for _, c := range r.After {
		if s, ok := code(c); ok {
			req.After = append(req.After, s)
		}
	}
	return cc.b.host.Complete(ctx, req)
}

func (cc *completeComms) closed(id string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	for _, rid := range cc.byComm[id] {
		if cancel := cc.running[rid]; cancel != nil {
			cancel()
		}
	}
	delete(cc.comms, id)
	delete(cc.byComm, id)
}

func (cc *completeComms) shutdown() {
	cc.mu.Lock()
	cc.down = true
	for _, cancel := range cc.running {
		cancel()
	}
	cc.mu.Unlock()
	cc.wg.Wait()
}
