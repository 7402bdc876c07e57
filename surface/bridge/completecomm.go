package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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
//	kernel → frontend: {"on": true}
//
// A new request cancels the ones still open on its comm (the user typed
// on). In prompt mode only %%code cells are completed, in code mode every
// cell but %%agent ones. A comm told "off" (no model) is told "on" when the
// settings change (a model was picked, a key saved): its completer asks
// again.
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
	off     map[string]bool               // comms told "off"
	unsub   func()                        // from the host's events
	wg      sync.WaitGroup
	down    bool
}

// completeRequest is a frontend's request.
type completeRequest struct {
	ID string `json:"id"`
	// CellType is the type of the cell typed in (JupyterLab's cell type:
	// "code", "markdown", "raw"); only code is completed. Absent (an older
	// page) counts as code.
	CellType string   `json:"cellType"`
	Prefix   string   `json:"prefix"`
	Suffix   string   `json:"suffix"`
	Before   []string `json:"before"`
	After    []string `json:"after"`
}

func (cc *completeComms) open(_ context.Context, m commMsg) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.comms == nil {
		cc.comms, cc.running, cc.byComm = map[string]commTransport{}, map[string]context.CancelFunc{}, map[string][]string{}
		cc.off = map[string]bool{}
	}
	if cc.unsub == nil && !cc.down {
		cc.unsub = cc.b.host.Subscribe(cc.event)
	}
	cc.comms[m.id] = commTransport{b: cc.b, r: m.r, id: m.id}
}

// event tells the comms that were told "off" to ask again when the
// settings change: a model may be there now.
func (cc *completeComms) event(e agent.Event) {
	if e.Kind != session.EventSettingsChanged {
		return
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	for id := range cc.off {
		if t, ok := cc.comms[id]; ok && !cc.down {
			if err := t.send(map[string]any{"on": true}); err != nil {
				cc.b.log.Debug("completion comm: on", "error", err)
			}
		}
		delete(cc.off, id)
	}
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
				// Marked and sent under the lock: an "on" (event) comes
				// after the "off", never before it.
				cc.mu.Lock()
				defer cc.mu.Unlock()
				cc.off[m.id] = true
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

// complete answers one request: only a code cell's (never markdown or raw);
// in prompt mode only a %%code cell, told
// the %%code cells around it; in code mode any cell but a %%agent one (a
// prompt), told the cells around it that are code; never a cell's first
// line while it starts with % (a magic being typed). agent.Complete cuts
// what is long (a cell of a megabyte) to its part around the cursor.
func (cc *completeComms) complete(ctx context.Context, r completeRequest) (string, error) {
	req := agent.CompletionRequest{Prefix: r.Prefix, Suffix: r.Suffix}
	if r.CellType != "" && r.CellType != "code" {
		return "", nil // prose (markdown, raw): not the model's to complete
	}
	if !strings.Contains(r.Prefix, "\n") && strings.HasPrefix(strings.TrimLeft(r.Prefix, " \t"), "%") {
		// A magic's line being typed (%%agen…): whether the cell is code
		// or a prompt is not known yet, and a magic is not the model's.
		return "", nil
	}
	code := func(src string) (string, bool) {
		if cc.b.cfg.Cells != PromptCells {
			_, prompt := cutCellMagic(src, "%%agent")
			return src, !prompt
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
	return cc.b.host.Models().Complete(ctx, req)
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
	delete(cc.off, id)
}

func (cc *completeComms) shutdown() {
	cc.mu.Lock()
	cc.down = true
	for _, cancel := range cc.running {
		cancel()
	}
	unsub := cc.unsub
	cc.unsub = nil
	cc.mu.Unlock()
	if unsub != nil {
		unsub()
	}
	cc.wg.Wait()
}
