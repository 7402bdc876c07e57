package bridge

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/internal/nbcomm"
	"github.com/agentkernel/agentkernel/session"
)

// NotebookTarget is the comm target of the notebook a frontend shows: the
// JupyterLab and Notebook 7 extension opens a comm to it for each notebook
// on an agent kernel (sidebar open or not), and the headless runner for the
// notebook it runs. The kernel then reads and changes the notebook's cells
// through it: the agent's notebook tools, applied to the frontend's own
// model, so that they show at once, undo and save as usual, and reach
// collaborators. The protocol is docs/notebook-protocol.md:
//
//	comm_open data {"protocol": 1, "path": "analysis.ipynb"}
//	kernel → frontend: {"request": {"id", "op", "args"}}
//	frontend → kernel: {"reply": {"id", "ok", "result" | "error", "code"}}
const NotebookTarget = nbcomm.Target

// notebookRequestTimeout bounds a request the frontend does not answer.
const notebookRequestTimeout = 30 * time.Second

// notebookFailover is how long a request waits for a page's answer when
// another page shows the same notebook: a page that says nothing for that
// long is taken for gone (its browser closed, no comm_close came), dropped,
// and the request goes to the next page (issue 41, item 13). A page that
// answers comes in milliseconds.
const notebookFailover = 5 * time.Second

// errNoAnswer is a request's frontend saying nothing in time.
var errNoAnswer = errors.New("the frontend did not answer")

// notebookComms are the comms open to NotebookTarget: the notebooks of the
// frontends on this kernel. A commTarget of the bridge's router.
type notebookComms struct {
	b *Bridge

	mu    sync.Mutex
	comms map[string]*notebookComm // by comm id
	order []string                 // comm ids, oldest first
	file  session.FileCells        // %agent notebook's: where the tools work when no comm is open
	// focus is where the user is in each page, by comm id, as its focus
	// message last said: kept here, not on the comm, because a page sends
	// one right after its comm_open, which reply takes at once while open
	// runs later on the worker.
	focus map[string]nbcomm.Focus
}

// notebookComm is one frontend's notebook, as session.Cells.
type notebookComm struct {
	n       *notebookComms // the others: where a request goes when this page is gone
	t       commTransport
	session string // the frontend's Jupyter session (its messages' header)
	path    string

	mu      sync.Mutex
	pending map[string]chan nbcomm.Reply
	gone    chan struct{}

	// mirror is the page's notebook as its changes say, when it sends
	// them (notebookmirror.go): what reads are answered from.
	mirror notebookMirror
}

func (n *notebookComms) open(_ context.Context, m commMsg) {
	var d nbcomm.Open
	_ = json.Unmarshal(m.data, &d)
	t := commTransport{b: n.b, r: m.r, id: m.id}
	if d.Protocol != nbcomm.Protocol {
		t.close(fmt.Sprintf("notebook comm protocol %d; this kernel speaks %d", d.Protocol, nbcomm.Protocol))
		return
	}
	c := &notebookComm{n: n, t: t, session: m.r.Msg.Header.Session, path: d.Path, pending: map[string]chan nbcomm.Reply{}, gone: make(chan struct{})}
	c.mirror.on = d.Mirror >= nbcomm.Mirror
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.comms == nil {
		n.comms = map[string]*notebookComm{}
	}
	if old := n.comms[m.id]; old != nil {
		old.end()
	}
	n.comms[m.id] = c
	n.order = append(n.order, m.id)
	n.b.log.Debug("notebook comm opened", "comm_id", m.id, "path", d.Path)
}

// message is given no comm_msg (reply takes them): the router's worker
// may be busy with a rewind that waits for one.
func (n *notebookComms) message(_ context.Context, m commMsg) { n.reply(m) }

// reply implements replyTarget: a frontend's reply goes to the request
// waiting for it; its focus message is kept for Focus; its snapshot and
// changes feed its comm's mirror. They come in the order the page sent
// them; a write's change comes with its reply, and is applied first.
func (n *notebookComms) reply(m commMsg) {
	var d struct {
		Reply    *nbcomm.Reply    `json:"reply"`
		Focus    *nbcomm.Focus    `json:"focus"`
		Snapshot *nbcomm.Snapshot `json:"snapshot"`
		Changes  *nbcomm.Changes  `json:"changes"`
	}
	err := json.Unmarshal(m.data, &d)
	n.mu.Lock()
	c := n.comms[m.id]
	if err == nil && d.Reply == nil && d.Focus != nil {
		if n.focus == nil {
			n.focus = map[string]nbcomm.Focus{}
		}
		n.focus[m.id] = d.Focus.Bounded()
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	if c == nil {
		return
	}
	if err == nil && d.Snapshot != nil {
		c.mirror.snapshot(*d.Snapshot)
	}
	if err == nil && d.Changes != nil { // alone, or with the reply of the write that made it
		c.mirror.change(*d.Changes)
	}
	if err != nil || d.Reply == nil {
		if err != nil || (d.Snapshot == nil && d.Changes == nil) {
			n.b.log.Warn("notebook comm: a message that is no reply", "comm_id", m.id)
		}
		return
	}
	c.mirror.replied(d.Reply.Version)
	c.mu.Lock()
	ch := c.pending[d.Reply.ID]
	delete(c.pending, d.Reply.ID)
	c.mu.Unlock()
	if ch != nil {
		ch <- *d.Reply // buffered, and taken from pending: never blocks
	}
}

func (n *notebookComms) closed(id string) {
	n.mu.Lock()
	c := n.comms[id]
	delete(n.comms, id)
	delete(n.focus, id)
	for i, o := range n.order {
		if o == id {
			n.order = append(n.order[:i], n.order[i+1:]...)
			break
		}
	}
	n.mu.Unlock()
	if c != nil {
		c.end()
	}
}

func (n *notebookComms) shutdown() {
	n.mu.Lock()
	comms := n.comms
	n.comms, n.order, n.focus = nil, nil, nil
	n.mu.Unlock()
	for _, c := range comms {
		c.end()
		c.t.close("the kernel is shutting down")
	}
}

// Current implements session.Frontends: the notebook of the frontend that
// sent the running prompt, else the one opened last; nil when no frontend
// has opened one.
func (n *notebookComms) Current() session.Cells {
	want := n.b.promptSession()
	n.mu.Lock()
	defer n.mu.Unlock()
	var last *notebookComm
	for _, id := range n.order {
		c := n.comms[id]
		if c == nil {
			continue
		}
		if want != "" && c.session == want {
			return c
		}
		last = c
	}
	if last == nil {
		if n.file != nil {
			return n.file
		}
		return nil
	}
	return last
}

// setFile makes the notebook file f where the agent's notebook tools work
// while no frontend has opened the comm (nil: nowhere).
func (n *notebookComms) setFile(f session.FileCells) {
	n.mu.Lock()
	n.file = f
	n.mu.Unlock()
}

// Find implements session.Frontends: the notebook named path that a
// frontend shows (the one opened last when several do); nil when none.
func (n *notebookComms) Find(path string) session.Cells {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := len(n.order) - 1; i >= 0; i-- {
		if c := n.comms[n.order[i]]; c != nil && c.path == path {
			return c
		}
	}
	return nil
}

// end fails the requests still waiting: the frontend went away.
func (c *notebookComm) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.gone:
	default:
		close(c.gone)
	}
}

// request sends op with args to the frontend and decodes its result into
// out (may be nil). When another page shows the same notebook, a page that
// does not answer within notebookFailover is dropped and the request goes
// to the next one; the last page is waited for notebookRequestTimeout.
func (c *notebookComm) request(ctx context.Context, op string, args nbcomm.Args, out any) error {
	for {
		next := c.n.sibling(c)
		wait := notebookRequestTimeout
		if next != nil {
			wait = notebookFailover
		}
		err := c.ask(ctx, op, args, out, wait)
		if !errors.Is(err, errNoAnswer) || next == nil {
			return err
		}
		c.n.b.log.Warn("notebook comm: the page did not answer; dropped, the next page is asked",
			"comm_id", c.t.id, "op", op, "wait", wait)
		c.n.drop(c, "the page did not answer in "+wait.String())
		c = next
	}
}

// sibling is the comm opened last, other than c, on c's notebook; nil when
// c is the only one.
func (n *notebookComms) sibling(c *notebookComm) *notebookComm {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := len(n.order) - 1; i >= 0; i-- {
		if o := n.comms[n.order[i]]; o != nil && o != c && o.path == c.path {
			return o
		}
	}
	return nil
}

// drop forgets c, a page that stopped answering, and closes its comm
// (a page still there would open a new one when its kernel restarts).
func (n *notebookComms) drop(c *notebookComm, why string) {
	n.mu.Lock()
	mine := n.comms[c.t.id] == c
	n.mu.Unlock()
	if !mine {
		return
	}
	n.closed(c.t.id)
	c.t.close(why)
}

// ask sends one request to c's page and waits up to wait for its answer.
func (c *notebookComm) ask(ctx context.Context, op string, args nbcomm.Args, out any, wait time.Duration) error {
	id := uuid.NewString()
	ch := make(chan nbcomm.Reply, 1)
	c.mu.Lock()
	select {
	case <-c.gone:
		c.mu.Unlock()
		return errors.New("the notebook's frontend has gone away")
	default:
	}
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	if op != nbcomm.OpRead {
		// Reads wait for the write's change to come back (its reply is
		// behind it).
		c.mirror.writing(1)
		defer c.mirror.writing(-1)
	}
	if err := c.t.send(map[string]any{"request": nbcomm.Request{ID: id, Op: op, Args: raw}}); err != nil {
		return fmt.Errorf("notebook %s: send: %w", op, err)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case r := <-ch:
		if !r.OK {
			err := errors.New(r.Error)
			switch r.Code {
			case nbcomm.CodeNoCell:
				err = fmt.Errorf("%w: %s", agent.ErrNoCell, r.Error)
			case nbcomm.CodeConflict:
				err = fmt.Errorf("%w: %s", agent.ErrConflict, r.Error)
			}
			return err
		}
		if out != nil && len(r.Result) > 0 {
			if err := json.Unmarshal(r.Result, out); err != nil {
				return fmt.Errorf("notebook %s: the frontend's answer: %w", op, err)
			}
		}
		return nil
	case <-c.gone:
		return fmt.Errorf("notebook %s: the notebook's frontend has gone away", op)
	case <-timer.C:
		return fmt.Errorf("notebook %s: %w in %s", op, errNoAnswer, wait)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// agentCell is a cell of the protocol as the agent reads it.
func agentCell(w nbcomm.Cell, maxOutput int, images bool) agent.NotebookCell {
	c := agent.NotebookCell{ID: w.ID, Kind: agent.CellKind(w.CellType), Source: w.Source}
	if w.ExecutionCount != nil {
		c.ExecutionCount = *w.ExecutionCount
	}
	for _, o := range w.Outputs {
		// The frontend cut the text already, saying how much: the mark
		// is kept.
		c.Outputs = append(c.Outputs, session.SummarizeOutput(o, maxOutput+64))
		if images {
			c.Outputs[len(c.Outputs)-1].Pictures = session.OutputPictures(o)
		}
	}
	return c
}

// Read implements session.Cells: from the mirror when it is current,
// else from the frontend, which cuts outputs' text to max_output and
// leaves out image data.
func (c *notebookComm) Read(ctx context.Context, maxOutput int) (agent.NotebookView, error) {
	if v, ok := c.mirrored(agent.ReadRange{MaxOutput: maxOutput}, true); ok {
		return v, nil
	}
	v, _, err := c.read(ctx, nbcomm.Args{MaxOutput: maxOutput})
	return v, err
}

// mirrored is the read r (whole: every cell) from the mirror, and whether
// the mirror could answer it; when it is stale, the page is asked for a
// snapshot (the read itself then goes to the page).
func (c *notebookComm) mirrored(r agent.ReadRange, whole bool) (agent.NotebookView, bool) {
	v, ok := c.mirror.view(r, whole)
	if !ok {
		if c.mirror.resync() {
			if err := c.t.send(map[string]any{"resync": true}); err != nil {
				c.n.b.log.Debug("notebook comm: resync", "comm_id", c.t.id, "error", err)
			}
		}
		return v, false
	}
	v.Path = c.path
	v.Active, v.Selection = c.Focus()
	if v.Part {
		v.ActiveIndex = c.mirror.indexOf(v.Active)
	}
	return v, true
}

// ReadRange implements agent.RangeReader: the frontend sends the cells of
// r whole and counts the rest. One that does not know ranges sends every
// cell, bounded here.
func (c *notebookComm) ReadRange(ctx context.Context, r agent.ReadRange) (agent.NotebookView, error) {
	budget := r.MaxChars
	if budget <= 0 {
		budget = math.MaxInt32 // no bound, and a frontend that knows ranges still says where it started
	}
	if v, ok := c.mirrored(r, false); ok {
		return v, nil
	}
	a := nbcomm.Args{MaxOutput: r.MaxOutput, Start: r.Start, End: r.End, MaxChars: budget}
	if r.Images {
		a.MaxImage = base64.StdEncoding.EncodedLen(agent.MaxAttachedImageBytes)
	}
	v, w, err := c.read(ctx, a)
	if err != nil || w.Count == nil {
		return agent.PartOf(v, r), err
	}
	v.Part, v.Start, v.Count, v.ActiveIndex = true, w.Start, *w.Count, -1
	if w.ActiveIndex != nil {
		v.ActiveIndex = *w.ActiveIndex
	}
	return v, nil
}

// read sends a read with a and gives its result as the agent reads it.
func (c *notebookComm) read(ctx context.Context, a nbcomm.Args) (agent.NotebookView, nbcomm.View, error) {
	var r nbcomm.View
	if err := c.request(ctx, nbcomm.OpRead, a, &r); err != nil {
		return agent.NotebookView{}, r, err
	}
	v := agent.NotebookView{Path: r.Path, Active: r.Active, Selection: r.Selection}
	if v.Path == "" {
		v.Path = c.path
	}
	v.Cells = make([]agent.NotebookCell, 0, len(r.Cells))
	for _, w := range r.Cells {
		v.Cells = append(v.Cells, agentCell(w, a.MaxOutput, a.MaxImage > 0))
	}
	return v, r, nil
}

// Focus implements session.Focus: the cell the user is in and the text
// selected there, as the page last said (its focus message).
func (c *notebookComm) Focus() (active, selection string) {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	f := c.n.focus[c.t.id]
	return f.Active, f.Selection
}

// Path implements session.Cells: the notebook's path, as the frontend
// named it when it opened the comm.
func (c *notebookComm) Path() string { return c.path }

// Insert implements session.Cells. A cell put back (cell.ID given) keeps
// its id, outputs and execution count where the frontend can.
func (c *notebookComm) Insert(ctx context.Context, index int, cell session.Cell) (agent.NotebookCell, error) {
	var r struct {
		Cell nbcomm.Cell `json:"cell"`
	}
	a := nbcomm.Args{ID: cell.ID, Index: index, CellType: string(cell.Kind), Source: cell.Source, Outputs: cell.Outputs}
	if cell.ExecutionCount > 0 {
		a.ExecutionCount = &cell.ExecutionCount
	}
	err := c.request(ctx, nbcomm.OpInsert, a, &r)
	return agentCell(r.Cell, 0, false), err
}

// SetSource implements session.Cells.
func (c *notebookComm) SetSource(ctx context.Context, id, source string) (agent.NotebookCell, error) {
	var r struct {
		Before nbcomm.Cell `json:"before"`
	}
	err := c.request(ctx, nbcomm.OpSetSource, nbcomm.Args{ID: id, Source: source}, &r)
	return agentCell(r.Before, 0, false), err
}

// Move implements session.Cells.
func (c *notebookComm) Move(ctx context.Context, id string, index int) (int, error) {
	var r nbcomm.Moved
	if err := c.request(ctx, nbcomm.OpMove, nbcomm.Args{ID: id, Index: index}, &r); err != nil {
		return -1, err
	}
	if r.From == nil {
		return -1, nil
	}
	return *r.From, nil
}

// Delete implements session.Cells.
func (c *notebookComm) Delete(ctx context.Context, id string) (session.Cell, int, error) {
	var r nbcomm.Removed
	if err := c.request(ctx, nbcomm.OpDelete, nbcomm.Args{ID: id}, &r); err != nil {
		return session.Cell{}, -1, err
	}
	at := -1
	if r.Index != nil {
		at = *r.Index
	}
	cell := session.Cell{ID: r.Cell.ID, Kind: agent.CellKind(r.Cell.CellType), Source: r.Cell.Source, Outputs: r.Cell.Outputs}
	if r.Cell.ExecutionCount != nil {
		cell.ExecutionCount = *r.Cell.ExecutionCount
	}
	return cell, at, nil
}

// SetOutputs implements session.Cells.
func (c *notebookComm) SetOutputs(ctx context.Context, id string, outputs []json.RawMessage, count int) error {
	var n *int
	if count > 0 {
		n = &count
	}
	return c.request(ctx, nbcomm.OpSetOutputs, nbcomm.Args{ID: id, Outputs: outputs, ExecutionCount: n}, nil)
}
