package session

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/store"
)

// CodeLog is what the backing kernel ran since it started — the user's
// cells, the agent's code, a replay — which a session that becomes
// current inherits into its own code log (what its rewinds replay), and
// the cells the user ran before the host's first session, which that
// session's first prompt is given.
type CodeLog struct {
	host      codeHost
	runner    backing.Runner // nil: no backing kernel
	world     replayer       // replays what a rewind left pending
	openStore storeOf
	log       hclog.Logger

	mu    sync.Mutex
	ran   []logged         // the last maxKernelLog
	seq   int64            // the last entry's seq
	mark  map[string]int64 // per session: the last entry it has seen
	early []cell           // code mode's cells run before any session (UserCode)
}

// codeHost is what the code log asks of the host: its sessions, and its
// current session held still while f runs (a cell run before any session
// waits on the host for the one that opens: takeEarly).
type codeHost interface {
	sessions
	holdCurrent(f func(c *current))
}

// replayer rebuilds the kernel's state when a rewind left it pending
// (World).
type replayer interface {
	ReplayIfPending(ctx context.Context) ([]string, error)
}

// takeEarly returns (and forgets) the cells run before any session; the
// host's lock is held (UserCode).
func (l *CodeLog) takeEarly() []cell {
	l.mu.Lock()
	defer l.mu.Unlock()
	early := l.early
	l.early = nil
	return early
}

// RunCell runs a cell the user gave the host (a %%code cell of prompt
// mode) in the backing kernel, replaying first if a rewind left that
// pending, and records it (RecordCell).
func (l *CodeLog) RunCell(ctx context.Context, e backing.Exec) (backing.Result, error) {
	r := l.runner
	if r == nil {
		return backing.Result{}, errors.New("no backing kernel to run code in")
	}
	if _, err := l.world.ReplayIfPending(ctx); err != nil {
		l.log.Warn("replay before the cell", "error", err)
	}
	res, err := r.Execute(ctx, e)
	if err == nil || res.Status != "" {
		l.RecordCell(ctx, e.Code, res)
	}
	return res, err
}

// maxCells is how many %%code cells the model is given at the next prompt.
const maxCells = 20

// RecordCell records a cell the user ran in the backing kernel (a %%code
// cell) with what it printed: it is stored as cell_executed and given to
// the model with the next prompt. A failure is logged, not returned: the
// cell itself ran.
func (l *CodeLog) RecordCell(ctx context.Context, code string, res backing.Result) {
	c, err := l.host.session(ctx)
	if err != nil {
		l.log.Warn("record cell", "error", err)
		return
	}
	ims := codeResult(res).Images
	output := cellOutput(res, ims)
	c.addCell(newCell(code, output, ims))
	l.record(ctx, c, 0, "cell", code, res.Status)
	rec, _ := json.Marshal(map[string]string{"code": code, "output": capText(output, 20000), "status": res.Status})
	if _, err := c.task.Record(ctx, messages.SayCellExecuted, string(rec)); err != nil && !errors.Is(err, agent.ErrBusy) {
		l.log.Warn("record cell", "error", err)
	}
}

// UserCode records a cell the user ran in the backing kernel in code mode:
// it joins the code a rewind replays, and the cell with what it printed is
// given to the model with the next prompt (%%agent), as a %%code cell is
// in prompt mode. The notebook shows the cell itself, so it is not stored
// as a message, and no session is opened for it: cells run before the
// first prompt wait on the host for the session that prompt opens.
func (l *CodeLog) UserCode(ctx context.Context, code string, res backing.Result) {
	ims := codeResult(res).Images
	l.userCell(ctx, code, res.Status, newCell(code, cellOutput(res, ims), ims))
}

// UserCodeOutput is UserCode for a cell whose outputs are still held as
// they came (status is its reply's): output gives them, and is called
// once, when the model's text of the cell is first needed (the next
// prompt), or, with settle above 0, settle after this returns if no prompt
// asked first, which lets go of the outputs (a caller that holds many
// megabytes asks for that). Decoding a cell's outputs (a megabyte of print
// is a millisecond or two of work, and its signature's check another) is
// then not done between the backing kernel's reply and the kernel's idle,
// which the frontend waits for, nor, without settle, beside the cells run
// after it, and not at all for a cell no prompt follows before maxCells
// more ran.
func (l *CodeLog) UserCodeOutput(ctx context.Context, code, status string, output func() backing.Result, settle time.Duration) {
	made := sync.OnceValue(func() cell {
		res := output()
		ims := codeResult(res).Images
		return newCell(code, cellOutput(res, ims), ims)
	})
	if settle > 0 {
		time.AfterFunc(settle, func() { made() })
	}
	l.userCell(ctx, code, status, cell{made: made})
}

// userCell is UserCode's with the cell entry made.
func (l *CodeLog) userCell(ctx context.Context, code, status string, entry cell) {
	var c *current
	l.host.holdCurrent(func(cur *current) { // against a session that opens meanwhile (takeEarly)
		if c = cur; c == nil {
			l.mu.Lock()
			l.early = appendCell(l.early, entry)
			l.mu.Unlock()
		}
	})
	if c != nil {
		c.addCell(entry)
	}
	l.record(ctx, c, 0, "user", code, status)
}

// maxKernelLog bounds the code the host remembers of its kernel.
const maxKernelLog = 10000

// record notes code run in the backing kernel: in the host's log of
// what its kernel holds, and in the session's code log (c may be nil: no
// session yet), at anchor (0: now).
func (l *CodeLog) record(ctx context.Context, c *current, anchor int64, origin, code, status string) {
	l.add(store.CodeRun{Origin: origin, Code: code, Status: status})
	if c == nil {
		return
	}
	if anchor == 0 {
		anchor = c.task.Stamp()
	}
	l.keep(ctx, c, store.CodeRun{Anchor: anchor, Origin: origin, Code: code, Status: status})
}

// keep stores r in session c's code log; a failure is logged.
func (l *CodeLog) keep(ctx context.Context, c *current, r store.CodeRun) {
	st, err := l.openStore(context.WithoutCancel(ctx))
	if err == nil {
		err = st.AddCodeRun(context.WithoutCancel(ctx), c.id, r)
	}
	if err != nil {
		l.log.Warn("record code run", "origin", r.Origin, "error", err)
	}
}

// logged is one entry of the host's log of its kernel.
type logged struct {
	seq int64
	run store.CodeRun
}

// add appends to the host's log of what its kernel ran.
func (l *CodeLog) add(runs ...store.CodeRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range runs {
		l.seq++
		l.ran = append(l.ran, logged{seq: l.seq, run: r})
	}
	if n := len(l.ran); n > maxKernelLog {
		l.ran = l.ran[n-maxKernelLog:]
	}
}

// lastSeq is the seq of the last code run: it grows whenever code runs.
func (l *CodeLog) lastSeq() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// reset forgets what the kernel ran: it was restarted.
func (l *CodeLog) reset() {
	l.mu.Lock()
	l.ran = nil
	l.mu.Unlock()
}

// inherit gives a session that becomes current the code its kernel ran
// that the session has not seen (before it existed, or while another
// session was current): a rewind in it replays that too.
func (l *CodeLog) inherit(ctx context.Context, c *current) {
	l.mu.Lock()
	from := l.mark[c.id]
	var prior []store.CodeRun
	for _, e := range l.ran {
		if e.seq > from {
			prior = append(prior, e.run)
		}
	}
	l.mu.Unlock()
	for _, r := range prior {
		r.Anchor = c.task.Stamp()
		l.keep(ctx, c, r)
	}
}

// leave notes how much of the kernel's log a session that stops being
// current has seen.
func (l *CodeLog) leave(c *current) {
	l.mu.Lock()
	if l.mark == nil {
		l.mark = map[string]int64{}
	}
	l.mark[c.id] = l.seq
	l.mu.Unlock()
}
