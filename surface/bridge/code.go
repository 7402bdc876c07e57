package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// replyTypes maps the shell requests the proxy forwards to their reply
// type; "" means the request has no reply (comm messages).
var replyTypes = map[string]string{
	wire.MsgExecuteRequest:    wire.MsgExecuteReply,
	wire.MsgCompleteRequest:   wire.MsgCompleteReply,
	wire.MsgInspectRequest:    wire.MsgInspectReply,
	wire.MsgIsCompleteRequest: wire.MsgIsCompleteReply,
	wire.MsgHistoryRequest:    wire.MsgHistoryReply,
	wire.MsgCommInfoRequest:   wire.MsgCommInfoReply,
	wire.MsgCommOpen:          "",
	wire.MsgCommMsg:           "",
	wire.MsgCommClose:         "",
	wire.MsgDebugRequest:      wire.MsgDebugReply, // on control
	// Kernel subshells, on control: the backing kernel's, when it has them
	// (kernel_info says so in code mode).
	wire.MsgCreateSubshellRequest: wire.MsgCreateSubshellReply,
	wire.MsgDeleteSubshellRequest: wire.MsgDeleteSubshellReply,
	wire.MsgListSubshellRequest:   wire.MsgListSubshellReply,
}

// HandleShell implements kernel.Handler.
func (b *Bridge) HandleShell(ctx context.Context, r *kernel.Request) bool {
	replyType, ok := replyTypes[r.Type()]
	if !ok {
		return false
	}
	switch {
	case r.Type() == wire.MsgExecuteRequest:
		b.execute(ctx, r)
	case b.cfg.Cells == PromptCells && r.Type() == wire.MsgCompleteRequest:
		b.completeMagic(r)
	case b.cfg.Cells == PromptCells && r.Type() == wire.MsgIsCompleteRequest:
		if err := r.Reply(wire.MsgIsCompleteReply, map[string]any{"status": "complete"}); err != nil {
			b.log.Debug("is_complete_reply", "error", err)
		}
	case b.cfg.Cells == PromptCells && r.Type() == wire.MsgInspectRequest:
		if err := r.Reply(wire.MsgInspectReply, map[string]any{"status": "ok", "found": false, "data": map[string]any{}, "metadata": map[string]any{}}); err != nil {
			b.log.Debug("inspect_reply", "error", err)
		}
	default:
		b.forward(ctx, r, replyType, nil)
	}
	return true
}

// DeferBusy implements kernel.BusyDeferrer: in code mode, with a backing
// kernel running, a request is sent on before our busy is published (in
// forward, once the request is written), so it reaches the backing one
// write sooner. Cells the bridge answers itself (%agent, %%agent) publish
// busy as soon as execute knows; anything else is busy at once, as
// starting a backing kernel takes long.
func (b *Bridge) DeferBusy(r *kernel.Request) bool {
	if b.cfg.Cells != CodeCells {
		return false
	}
	if _, ok := replyTypes[r.Type()]; !ok {
		return false
	}
	return b.runner.Running()
}

// execute routes an execute_request: %agent magics and %%agent cells in
// both modes, %%code cells and prompts in prompt mode, code to the
// backing kernel.
func (b *Bridge) execute(ctx context.Context, r *kernel.Request) {
	var c struct {
		Code         string `json:"code"`
		Silent       bool   `json:"silent"`
		StoreHistory *bool  `json:"store_history"`
	}
	_ = r.Msg.DecodeContent(&c)
	b.showProblems(r)
	if b.cfg.Refuse != nil {
		b.fail(r, wire.MsgExecuteReply, "NestedKernelError", b.cfg.Refuse.Error())
		return
	}
	use, body := agent.ParseCell(c.Code, b.cfg.Cells == PromptCells)
	if b.cfg.Cells == CodeCells && use == agent.UseCode {
		if b.host.World().ReplayPending() {
			b.replayFirst(ctx, r)
		}
		col := new(collector)
		b.forward(ctx, r, wire.MsgExecuteReply, col)
		if !c.Silent {
			status := r.ReplyStatus()
			output := func() backing.Result {
				res := col.result()
				res.Status = status
				return res
			}
			switch n := col.size(); {
			case n < decodeLater:
				b.host.CodeLog().UserCode(ctx, c.Code, output())
			case n <= holdOutputs:
				b.host.CodeLog().UserCodeOutput(ctx, c.Code, status, output, 0)
			default:
				b.host.CodeLog().UserCodeOutput(ctx, c.Code, status, output, 20*time.Millisecond)
			}
		}
		return
	}
	r.Busy() // if deferred: this cell is ours, and may take long
	// From here the cell is ours: our own execution count (prompt mode) or
	// the backing kernel's last (code mode), and our execute_input.
	count := b.promptCount(c.Silent, c.StoreHistory == nil || *c.StoreHistory)
	if !c.Silent {
		if err := r.Publish(wire.MsgExecuteInput, map[string]any{"code": c.Code, "execution_count": count}); err != nil {
			b.log.Debug("execute_input", "error", err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.amu.Lock()
	b.cellCancel = cancel
	b.amu.Unlock()
	defer func() {
		b.amu.Lock()
		b.cellCancel = nil
		b.amu.Unlock()
	}()
	switch use {
	case agent.UseCommand:
		b.magic(cctx, r, c.Code, count)
	case agent.UsePrompt:
		b.prompt(cctx, r, body, count)
	default:
		b.codeCell(cctx, r, body, count)
	}
}

// replayFirst replays the session's code in a fresh kernel before a cell,
// when a rewind done outside this kernel left that to do.
func (b *Bridge) replayFirst(ctx context.Context, r *kernel.Request) {
	r.Busy()
	lines, err := b.host.World().ReplayIfPending(ctx)
	text := "[agentkernel] the session was rewound: the kernel was restarted and its code replayed\n"
	for _, l := range lines {
		text += "  " + l + "\n"
	}
	if err != nil {
		text += "  " + err.Error() + "\n"
	}
	if err := r.Publish(wire.MsgStream, wire.Stream{Name: "stderr", Text: text}); err != nil {
		b.log.Debug("publish replay", "error", err)
	}
}

// promptCount is the execution count of a cell the bridge answers itself.
func (b *Bridge) promptCount(silent, store bool) int {
	if b.cfg.Cells == CodeCells {
		return b.codeCount()
	}
	b.amu.Lock()
	defer b.amu.Unlock()
	if !silent && store {
		b.count++
	}
	return b.count
}

// codeCount is the execution count, in code mode, of a cell the backing
// kernel did not number: the backing kernel's last count, or 1 (the count
// its first cell will get) before it numbered any. Never 0: JupyterLab
// leaves a cell whose reply says 0 at [*]: (issue 41, item 8), so a magic
// run before the first code cell is [1]:, as in ipykernel.
func (b *Bridge) codeCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.lastCount, 1)
}

// cutCellMagic returns the body of a cell that starts with the cell magic.
func cutCellMagic(code, magic string) (string, bool) { return agent.CutCellMagic(code, magic) }

// showProblems shows the configuration's problems in the first cell run,
// once, on stderr: a kernel with a broken config file starts with defaults
// and says so where the user looks.
func (b *Bridge) showProblems(r *kernel.Request) {
	if len(b.cfg.Problems) == 0 {
		return
	}
	b.problemsShown.Do(func() {
		text := "agentkernel: configuration problems; these settings are at their defaults:\n  " +
			strings.Join(b.cfg.Problems, "\n  ") + "\n"
		if err := r.Publish(wire.MsgStream, wire.Stream{Name: "stderr", Text: text}); err != nil {
			b.log.Debug("publish configuration problems", "error", err)
		}
	})
}

// forward sends r to the backing kernel under the frontend's msg_id and
// relays everything that comes back; col, if not nil, collects what the
// request printed.
func (b *Bridge) forward(ctx context.Context, r *kernel.Request, replyType string, col *collector) {
	if !b.runner.Running() {
		r.Busy() // it died since DeferBusy: a start takes long
	}
	// The frontend's header, so that the backing's replies and outputs
	// name the frontend's request as their parent, as they go on to the
	// frontend unchanged (relay); the client fills in what it lacks.
	hdr := r.Msg.Header
	b.recent.add(hdr.MsgID, r)
	inputCtx, endInput := b.inputFor(ctx)
	defer endInput()
	reply := &backingReply{b: b, r: r, replyType: replyType}
	rep, err := b.runner.Do(ctx, client.Request{
		Channel:  r.Channel,
		MsgType:  r.Type(),
		Content:  r.Msg.Content,
		Metadata: r.Msg.Metadata,
		Buffers:  r.Msg.Buffers,
		Header:   &hdr,
		Forward:  true,
	}, client.Handlers{
		IOPub: func(m *wire.Message) {
			b.relay(r, m)
			if col != nil {
				col.add(m)
			}
		},
		Input: func(prompt string, password bool) (string, error) {
			return r.Input(inputCtx, prompt, password)
		},
		Reply: reply.send,
		Sent:  r.Busy,
	})
	b.forwardEnded(r, reply, rep, err, col)
}

// inputFor is the context r's input requests to the frontend are asked
// under while it is forwarded: an interrupt (Bridge.Interrupt) cancels
// it, as does end, which forward calls when the request is done.
func (b *Bridge) inputFor(ctx context.Context) (inputCtx context.Context, end func()) {
	inputCtx, cancel := context.WithCancel(ctx)
	b.mu.Lock()
	b.inputCancel = cancel
	b.mu.Unlock()
	return inputCtx, func() {
		b.mu.Lock()
		b.inputCancel = nil
		b.mu.Unlock()
		cancel()
	}
}

// backingReply is the reply of a forwarded request: it goes out to the
// frontend the moment the backing kernel's arrives (the frontend waits for
// it and for our idle, which follows the backing's), once. It is used on
// the goroutine that runs forward and the client's handlers it calls.
type backingReply struct {
	b         *Bridge
	r         *kernel.Request
	replyType string // the reply r is answered with; "" for none
	sent      bool
}

// send relays rep as r's reply, unless one was sent or r has none; an
// execute_reply's count becomes the bridge's last one, and a
// comm_info_reply gains the bridge's own comms.
func (s *backingReply) send(rep *wire.Message) {
	if s.sent || s.replyType == "" {
		return
	}
	s.sent = true
	b := s.b
	if s.replyType == wire.MsgExecuteReply {
		var cnt struct {
			N int `json:"execution_count"`
		}
		if json.Unmarshal(rep.Content, &cnt) == nil && cnt.N > 0 {
			b.mu.Lock()
			b.lastCount = cnt.N
			b.mu.Unlock()
		}
	}
	content := rep.Content
	if rep.Header.MsgType == wire.MsgCommInfoReply {
		content = b.comms.withOurs(content) // the backing kernel's comms and ours
	}
	if err := s.r.ReplyRaw(rep.Header.MsgType, content, rep.Metadata, rep.Buffers); err != nil {
		b.log.Warn("reply failed", "msg_type", rep.Header.MsgType, "error", err)
	}
}

// forwardEnded answers r as the backing kernel's request ended: with its
// reply rep, or with an error reply that says why there is none (the
// backing was interrupted while starting, died, or failed); a lost idle
// after the reply is only logged.
func (b *Bridge) forwardEnded(r *kernel.Request, reply *backingReply, rep *wire.Message, err error, col *collector) {
	switch {
	case errors.Is(err, client.ErrIncomplete):
		// The backing's idle was lost, and outputs may have been: a cell
		// says so.
		if r.Type() == wire.MsgExecuteRequest {
			note := backing.IncompleteNote()
			b.relay(r, note)
			if col != nil {
				col.add(note)
			}
		}
		reply.send(rep)
	case err != nil && reply.sent:
		// The frontend has its reply; only the backing's idle is missing.
		b.log.Warn("backing kernel request ended after its reply", "msg_type", r.Type(), "error", err)
	case errors.Is(err, backing.ErrInterrupted):
		b.fail(r, reply.replyType, "KeyboardInterrupt", "interrupted while the backing kernel was starting")
	case errors.Is(err, client.ErrDead):
		b.log.Warn("backing kernel died during a request", "msg_type", r.Type(), "error", err)
		b.fail(r, reply.replyType, "DeadKernelError", fmt.Sprintf(
			"the backing kernel (%s) died; it will be restarted at the next execution", b.runner.Describe()))
	case err != nil:
		b.fail(r, reply.replyType, "BackingKernelError", strings.TrimPrefix(err.Error(), "backing kernel: "))
	case rep != nil:
		reply.send(rep)
	}
}

// relay sends one backing iopub message on to the frontend, under r: as
// the backing signed it when it has the frontend's key, else anew with r
// as parent (kernel.Request.Forward). Status is dropped: the server
// publishes our own busy/idle around r.
func (b *Bridge) relay(r *kernel.Request, m *wire.Message) {
	if m.Header.MsgType == wire.MsgStatus {
		return
	}
	if err := r.Forward(m); err != nil {
		b.log.Debug("relay failed", "msg_type", m.Header.MsgType, "error", err)
	}
}

// Unsolicited relays backing iopub messages that arrive after their request
// finished (threads printing late, widget updates) to the frontend request
// they belong to, when it is still known. It is the runner's OnIOPub
// (backing.Options).
func (b *Bridge) Unsolicited(m *wire.Message) {
	if m.Header.MsgType == wire.MsgStatus {
		return
	}
	p, err := m.Parent()
	if err != nil || p.MsgID == "" {
		return
	}
	if r := b.recent.get(p.MsgID); r != nil {
		b.relay(r, m)
	}
}

// fail answers r with an error: an error output (for execute) and an
// error reply.
func (b *Bridge) fail(r *kernel.Request, replyType, ename, evalue string) {
	count := b.codeCount()
	e := &wire.Error{EName: ename, EValue: evalue, Traceback: []string{ename + ": " + evalue}}
	switch replyType {
	case "":
		return
	case wire.MsgExecuteReply:
		if err := r.Publish(wire.MsgError, e); err != nil {
			b.log.Debug("publish error failed", "error", err)
		}
		if err := r.Reply(replyType, wire.ExecuteReply{Status: wire.StatusError, ExecutionCount: count, Error: e,
			UserExpressions: map[string]any{}, Payload: []any{}}); err != nil {
			b.log.Debug("error reply failed", "error", err)
		}
	default:
		if err := r.Reply(replyType, wire.ErrorReply{Status: wire.StatusError, Error: e}); err != nil {
			b.log.Debug("error reply failed", "error", err)
		}
	}
	b.log.Info("request failed", "msg_type", r.Type(), "ename", ename, "evalue", strings.TrimSpace(evalue))
}

// collector gathers what a user's cell printed, for the model: the
// outputs of the first maxCollected bytes (the model is given a few KiB of
// them), which a remote kernel's reader may still add to after the request
// returned. They are kept as they came and decoded (backing.Collector)
// when the result is asked for: at once for small outputs, after the
// cell's reply and idle went out for big ones (decodeLater), as a
// megabyte of print is milliseconds of decoding, which the frontend would
// otherwise wait for.
type collector struct {
	mu   sync.Mutex
	n    int
	msgs []*wire.Message // not yet decoded
	c    backing.Collector
}

const maxCollected = 1 << 20

// decodeLater is the size of a cell's outputs from which they are decoded
// for the model after the cell's idle, when a prompt needs them
// (session.CodeLog.UserCodeOutput); smaller ones are decoded at once,
// which costs less than holding them. Outputs over holdOutputs (the first
// message the collector took can be any size) are decoded 20 ms after the
// cell, if no prompt came first, and let go of: the cells held for the
// next prompt then hold at most holdOutputs each.
const (
	decodeLater = 64 << 10
	holdOutputs = 2 << 20
)

// size is the size of the outputs collected.
func (c *collector) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *collector) add(m *wire.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= maxCollected {
		return
	}
	c.n += len(m.Content)
	c.msgs = append(c.msgs, m)
}

func (c *collector) result() backing.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.msgs {
		// A big output was sent on unchecked (client.Request.Forward);
		// the model is given it only once it is.
		if m.Verify() == nil {
			c.c.Add(m)
		}
	}
	c.msgs = nil
	return c.c.Result()
}

// recentRequests remembers the last n forwarded requests by msg_id.
type recentRequests struct {
	mu   sync.Mutex
	n    int
	ids  []string
	reqs map[string]*kernel.Request
}

func (rr *recentRequests) init(n int) {
	rr.n = n
	rr.reqs = make(map[string]*kernel.Request, n)
}

func (rr *recentRequests) add(id string, r *kernel.Request) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if _, ok := rr.reqs[id]; !ok {
		rr.ids = append(rr.ids, id)
	}
	rr.reqs[id] = r
	if len(rr.ids) > rr.n {
		delete(rr.reqs, rr.ids[0])
		rr.ids = rr.ids[1:]
	}
}

func (rr *recentRequests) get(id string) *kernel.Request {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.reqs[id]
}
