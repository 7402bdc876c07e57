package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// Request is one message to send to the kernel.
type Request struct {
	// Channel is wire.Shell (the default, also for "") or wire.Control.
	Channel wire.Channel
	// MsgType is the request type, e.g. "execute_request".
	MsgType string
	// Content is marshalled to JSON; a json.RawMessage is sent as is and
	// nil sends {}.
	Content any
	// Metadata is sent as is; nil sends {}.
	Metadata json.RawMessage
	// Buffers are extra binary frames (comm messages).
	Buffers [][]byte
	// Header, when set, is used instead of a fresh header (a proxy keeps
	// the frontend's msg_id this way). Its MsgType, Session, Username,
	// Date and Version are filled in when empty.
	Header *wire.Header
	// Forward says the handlers send the request's iopub messages on
	// (kernel.Request.Forward) rather than read them: a big one reaches
	// IOPub decoded lazily (wire.Signer.DecodeLazy), and its content must
	// be checked with Verify before it is used. Other requests' messages
	// are checked before they reach their handlers.
	Forward bool
}

// Handlers receive what the kernel sends about one request while Do waits.
// They run on Do's goroutine, in the order the messages arrived.
type Handlers struct {
	// IOPub receives every iopub message whose parent is the request, in
	// order, including the status messages.
	IOPub func(*wire.Message)
	// Input answers a stdin input_request. Nil, or an error, replies with
	// empty input, except an error wrapping context.Canceled: the request
	// was interrupted, and no input_reply is sent (the interrupt ends the
	// kernel's wait, as when a frontend interrupts; an empty reply racing
	// the interrupt would let the code go on with empty input). It cannot
	// be cancelled: Do calls it and waits.
	Input func(prompt string, password bool) (string, error)
	// Reply, when set, receives the reply the moment it arrives, before
	// Do goes on waiting for status idle (Do still returns it). A proxy
	// forwards it from here, as a kernel sends its reply before its idle.
	Reply func(*wire.Message)
	// Sent, when set, is called once the request has been written to the
	// kernel, before Do waits for anything.
	Sent func()
}

// noReply lists the shell requests the kernel does not reply to.
var noReply = map[string]bool{"comm_open": true, "comm_msg": true, "comm_close": true}

// event is one message for a pending request.
type event struct {
	channel string // "shell", "control", "stdin" or "iopub"
	msg     *wire.Message
	parent  string // the msg_id it answers: the request's, or a probe's
}

// pending is a request waiting for its reply and idle. The receiving
// goroutines push events; Do takes them.
type pending struct {
	id string
	// ids are the msg_ids whose messages are the request's: its own, then
	// its probes' (guarded by the Client's mu).
	ids    []string
	mu     sync.Mutex
	events []event
	err    error
	notify chan struct{} // cap 1: something was pushed or err set
	// forward is the request's Request.Forward.
	forward bool
}

func newPending(id string) *pending {
	return &pending{id: id, ids: []string{id}, notify: make(chan struct{}, 1)}
}

func (p *pending) push(ev event) {
	p.mu.Lock()
	p.events = append(p.events, ev)
	p.mu.Unlock()
	p.wake()
}

func (p *pending) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	p.wake()
}

func (p *pending) wake() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// take returns the queued events and the failure, if any.
func (p *pending) take() ([]event, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	evs := p.events
	p.events = nil
	return evs, p.err
}

// isIdle reports whether m is a status message saying idle.
func isIdle(m *wire.Message) bool {
	if m.Header.MsgType != wire.MsgStatus {
		return false
	}
	var st struct {
		ExecutionState string `json:"execution_state"`
	}
	return m.DecodeContent(&st) == nil && st.ExecutionState == "idle"
}

// send registers a pending request and sends it. It waits for a link while
// the kernel is restarting. With track false (Send) nothing is registered:
// what the kernel sends for the request goes to OnIOPub, even when it
// comes before send returns.
func (c *Client) send(ctx context.Context, req Request, track bool) (*pending, *link, error) {
	return c.sendTo(ctx, req, track, nil)
}

// sendTo is send; with into set, what comes for req goes to that pending
// request, whose messages req's are (Do's probes).
func (c *Client) sendTo(ctx context.Context, req Request, track bool, into *pending) (*pending, *link, error) {
	channel := req.Channel
	if channel == "" {
		channel = wire.Shell
	}
	if channel != wire.Shell && channel != wire.Control {
		return nil, nil, fmt.Errorf("client: send %s: unknown channel %q", req.MsgType, req.Channel)
	}
	var h wire.Header
	if req.Header != nil {
		h = *req.Header
		if h.MsgID == "" {
			return nil, nil, fmt.Errorf("client: send %s: header without msg_id", req.MsgType)
		}
		h.Complete(c.session, c.user, req.MsgType)
	} else {
		if req.MsgType == "" {
			return nil, nil, fmt.Errorf("client: send: empty msg_type")
		}
		h = wire.NewHeader(c.session, c.user, req.MsgType)
	}
	content, err := marshalContent(req.Content)
	if err != nil {
		return nil, nil, fmt.Errorf("client: encode %s: %w", h.MsgType, err)
	}
	frames, err := c.signer.Encode(&wire.Message{Header: h, Metadata: req.Metadata, Content: content, Buffers: req.Buffers})
	if err != nil {
		return nil, nil, fmt.Errorf("client: encode %s: %w", h.MsgType, err)
	}
	p := into
	if p == nil {
		p = newPending(h.MsgID)
		p.forward = req.Forward
	}
	var l *link
	for l == nil {
		c.mu.Lock()
		switch {
		case c.isClosed():
			c.mu.Unlock()
			return nil, nil, fmt.Errorf("client: send %s: %w", h.MsgType, net.ErrClosed)
		case c.deadErr != nil:
			err := c.deadErr
			c.mu.Unlock()
			return nil, nil, fmt.Errorf("client: send %s: %w", h.MsgType, err)
		case c.link != nil:
			if _, dup := c.pending[h.MsgID]; dup {
				c.mu.Unlock()
				return nil, nil, fmt.Errorf("client: send %s: msg_id %s already pending", h.MsgType, h.MsgID)
			}
			l = c.link
			if track {
				c.pending[h.MsgID] = p
				if into != nil {
					p.ids = append(p.ids, h.MsgID)
				}
			}
			c.mu.Unlock()
			continue
		}
		up := c.linkUp
		c.mu.Unlock()
		select {
		case <-up:
		case <-c.dead:
		case <-c.closed:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	s := l.shell
	if channel == "control" {
		s = l.control
	}
	if err := s.send(ctx, frames); err != nil {
		c.forget(p)
		return nil, nil, fmt.Errorf("client: send %s on %s: %w", h.MsgType, channel, err)
	}
	return p, l, nil
}

func marshalContent(content any) (json.RawMessage, error) {
	switch v := content.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v, nil
	case []byte:
		return json.RawMessage(v), nil
	default:
		return json.Marshal(v)
	}
}

// forget removes a finished request.
func (c *Client) forget(p *pending) {
	c.mu.Lock()
	for _, id := range p.ids {
		if c.pending[id] == p {
			delete(c.pending, id)
		}
	}
	c.mu.Unlock()
}

// maxAbandoned bounds the set of abandoned requests (entries normally leave
// it when their idle arrives).
const maxAbandoned = 4096

// abandon stops waiting for p: its later messages are dropped.
func (c *Client) abandon(p *pending, idleSeen bool) {
	c.mu.Lock()
	for i, id := range p.ids {
		if c.pending[id] != p {
			continue
		}
		delete(c.pending, id)
		if !idleSeen || i > 0 { // a probe's idle may still come
			if len(c.abandoned) >= maxAbandoned {
				clear(c.abandoned)
			}
			c.abandoned[id] = struct{}{}
		}
	}
	c.mu.Unlock()
}

// Do sends req and returns its reply once both the reply and the status idle
// for it have arrived (for comm_open, comm_msg and comm_close, which have no
// reply, it returns nil, nil after idle). Meanwhile it calls h for the
// request's iopub messages and stdin requests.
//
// A kernel sends its reply on one socket and its outputs and idle on
// another, so the reply often comes first — long before a big output when
// the machine is busy. Do never ends a request's outputs at its reply: when
// Options.IdleTimeout passes after the reply with nothing more for the
// request, it asks the kernel whether the idle was lost, with a probe (a
// kernel_info_request on the same channel and subshell): the kernel
// handles requests in order, so the probe's own status comes after all it
// published for req. If that status comes first, the idle was dropped on
// the way (a ZeroMQ publisher drops messages once its reader falls 1000
// behind), and so may outputs have been: Do returns the reply, for an
// execute_request with an error wrapping ErrIncomplete. A probe the kernel
// answers without its status is sent again, up to IdleProbes in all; one
// it does not answer within IdleTimeout waits behind later requests, and
// Do returns the reply then, as when the idle was lost (an execution's
// outputs may still have been on the way). Output that comes under a probe
// is the request's: a kernel binds buffered output to the request it
// handles when it flushes it (ipykernel does), and a probe makes none.
//
// When ctx ends Do returns ctx.Err() and the request is abandoned: later
// messages for it are dropped (the kernel keeps running it; interrupt it if
// that matters). When the kernel dies Do returns an error wrapping ErrDead.
func (c *Client) Do(ctx context.Context, req Request, h Handlers) (*wire.Message, error) {
	return c.do(ctx, req, h, true)
}

// ErrIncomplete is returned by Do, with the reply, when the status idle of
// an execute_request never came (see Do): some of its outputs may be
// missing too. Test with errors.Is.
var ErrIncomplete = errors.New("client: the kernel's status idle for the request never came; some of its outputs may be missing")

// IdleProbes bounds the probes of one request whose idle is late: a kernel
// that answers them all but publishes no status for any is given up on. A
// runner over another transport (a Jupyter server's WebSocket) keeps the
// same rule.
const IdleProbes = 6

// Send sends req and returns once it is written, waiting for nothing: a
// message with no reply (a frontend's comm_msg), whose iopub, if any, goes
// to Options.OnIOPub. A kernel may publish no status for such a message
// (agentkernel's panel comms), which Do would wait for.
func (c *Client) Send(ctx context.Context, req Request) error {
	_, _, err := c.send(ctx, req, false)
	return err
}

// do is Do; with waitIdle false it returns as soon as the reply arrives.
func (c *Client) do(ctx context.Context, req Request, h Handlers, waitIdle bool) (*wire.Message, error) {
	p, l, err := c.send(ctx, req, true)
	if err != nil {
		return nil, err
	}
	if h.Sent != nil {
		h.Sent()
	}
	w := &requestWait{c: c, req: req, p: p, l: l, h: h, msgType: req.MsgType}
	if w.msgType == "" && req.Header != nil {
		w.msgType = req.Header.MsgType
	}
	wantReply := !noReply[w.msgType]
	defer w.stopTimer()
	for {
		expired, err := w.wake(ctx)
		if err != nil {
			return nil, err
		}
		evs, err := p.take()
		w.route(ctx, evs)
		if (w.idle || !waitIdle) && (w.reply != nil || !wantReply) {
			// Without idle yet, drop the rest (busy/idle) rather than
			// handing it to OnIOPub.
			c.abandon(p, w.idle)
			return w.reply, nil
		}
		if err != nil {
			return nil, err
		}
		if w.reply == nil {
			continue
		}
		quiet := expired && len(evs) == 0
		if w.idleLost(quiet) {
			return w.giveUp()
		}
		if quiet && w.pr.due() {
			if err := w.probe(ctx); err != nil {
				return nil, err
			}
		}
		w.rearm(len(evs) > 0 || expired)
	}
}

// requestWait is what do knows of one request while it waits: the
// reply, whether its status idle came, the timer of IdleTimeout since
// the last message once the reply came, and the probes of a late idle.
type requestWait struct {
	c       *Client
	req     Request
	msgType string
	p       *pending
	l       *link
	h       Handlers

	reply *wire.Message
	idle  bool
	timer *time.Timer
	timeC <-chan time.Time
	pr    idleProbe
}

// wake waits for the request's next messages or the timer, and reports
// whether the timer expired; when ctx ends first the request is
// abandoned and ctx's error returned.
func (w *requestWait) wake(ctx context.Context) (expired bool, err error) {
	select {
	case <-w.p.notify:
		return false, nil
	case <-ctx.Done():
		w.c.abandon(w.p, w.idle)
		return false, ctx.Err()
	case <-w.timeC:
		return true, nil
	}
}

// route hands each of evs where it goes: a probe's to the probe (its
// output to IOPub), the request's iopub to IOPub (noting its idle), an
// input_request to the handlers' Input, the reply to Reply.
func (w *requestWait) route(ctx context.Context, evs []event) {
	h := w.h
	for _, ev := range evs {
		switch {
		case w.pr.owns(ev.parent):
			if w.pr.take(ev) && h.IOPub != nil {
				h.IOPub(ev.msg)
			}
		case ev.channel == "iopub":
			if h.IOPub != nil {
				h.IOPub(ev.msg)
			}
			if isIdle(ev.msg) {
				w.idle = true
			}
		case ev.channel == "stdin":
			if ev.msg.Header.MsgType != wire.MsgInputRequest {
				continue
			}
			if err := w.c.answerInput(ctx, w.l, ev.msg, h); err != nil {
				w.c.log.Warn("input_reply failed", "error", err)
			}
		default:
			w.reply = ev.msg
			if h.Reply != nil {
				h.Reply(w.reply)
			}
		}
	}
}

// idleLost reports whether the replied request's idle is lost: a probe's
// status came first, or (quiet: IdleTimeout passed without a message) no
// probe's ever did, or the last probe is not answered — the kernel is
// busy with what came after the request: it answered that one without a
// status (agentkernel's comm_info for its panel does, to skip a running
// cell), or its idle was lost.
func (w *requestWait) idleLost(quiet bool) bool {
	return w.pr.published || (quiet && (w.pr.gaveUp() || w.pr.waiting()))
}

// giveUp ends a request whose idle is lost: its reply, and for an
// execution (only its outputs can be missing) ErrIncomplete.
func (w *requestWait) giveUp() (*wire.Message, error) {
	pr := &w.pr
	w.c.log.Warn("no status idle for a request", "msg_type", w.msgType, "msg_id", w.p.id,
		"probes", pr.sent, "probe_status_seen", pr.published, "probe_answered", pr.answered)
	w.c.abandon(w.p, false)
	if w.msgType == wire.MsgExecuteRequest {
		return w.reply, fmt.Errorf("%s %s: %w", w.msgType, w.p.id, ErrIncomplete)
	}
	return w.reply, nil
}

// probe sends a probe for the late idle; only ctx's end is an error (the
// request is abandoned): a dead kernel fails the pending request too.
func (w *requestWait) probe(ctx context.Context) error {
	if err := w.pr.send(ctx, w.c, w.req, w.p); err != nil {
		if ctx.Err() != nil {
			w.c.abandon(w.p, false)
			return ctx.Err()
		}
		w.c.log.Debug("probe for a late idle", "error", err)
	}
	return nil
}

// rearm starts the timer of IdleTimeout once the reply came, and
// restarts it when something happened (a message, or it expired).
func (w *requestWait) rearm(happened bool) {
	if w.timer == nil {
		w.timer = time.NewTimer(w.c.opts.IdleTimeout)
		w.timeC = w.timer.C
	} else if happened {
		w.timer.Reset(w.c.opts.IdleTimeout)
	}
}

func (w *requestWait) stopTimer() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// idleProbe is Do's probe of a request whose idle is late: the
// kernel_info_requests it sent, whose messages come to the request's
// pending (sendTo), and what came for them.
type idleProbe struct {
	ids       []string // the probes' msg_ids, the last one last
	sent      int
	answered  bool // the last probe's reply came
	published bool // a probe's status came: the kernel is past the request
}

// owns reports whether a message answering parent is a probe's.
func (pr *idleProbe) owns(parent string) bool { return slices.Contains(pr.ids, parent) }

// take notes one of the probes' messages, and reports whether it is output
// the request made (anything on iopub but a status).
func (pr *idleProbe) take(ev event) bool {
	switch {
	case ev.channel != "iopub":
		if ev.parent == pr.ids[len(pr.ids)-1] {
			pr.answered = true
		}
	case ev.msg.Header.MsgType == wire.MsgStatus:
		pr.published = true
	default:
		return true
	}
	return false
}

// due reports whether a probe should go now: none went yet, or the last
// was answered without its status (which was lost as well) and fewer
// than IdleProbes went.
func (pr *idleProbe) due() bool {
	return pr.sent == 0 || (pr.answered && pr.sent < IdleProbes)
}

// gaveUp reports whether IdleProbes were answered and none published.
func (pr *idleProbe) gaveUp() bool { return pr.sent >= IdleProbes && pr.answered }

// waiting reports whether the last probe went unanswered.
func (pr *idleProbe) waiting() bool { return pr.sent > 0 && !pr.answered }

// send sends a new probe for req, on its channel and subshell, its
// messages to p.
func (pr *idleProbe) send(ctx context.Context, c *Client, req Request, p *pending) error {
	hdr := wire.NewHeader(c.session, c.user, wire.MsgKernelInfoRequest)
	if req.Header != nil {
		hdr.SubshellID = req.Header.SubshellID
	}
	if _, _, err := c.sendTo(ctx, Request{Channel: req.Channel, MsgType: wire.MsgKernelInfoRequest, Header: &hdr}, true, p); err != nil {
		return err
	}
	pr.ids = append(pr.ids, hdr.MsgID)
	pr.answered = false
	pr.sent++
	return nil
}

// AnswerInput asks h.Input for the answer to an input_request, as Input's
// contract says: reply is false when no input_reply must be sent (the
// request was interrupted); err is Input's error, for the log.
func (h Handlers) AnswerInput(prompt string, password bool) (value string, reply bool, err error) {
	if h.Input == nil {
		return "", true, nil
	}
	v, err := h.Input(prompt, password)
	switch {
	case errors.Is(err, context.Canceled):
		return "", false, err
	case err != nil:
		return "", true, err
	}
	return v, true, nil
}

// answerInput asks h for the input and sends the input_reply.
func (c *Client) answerInput(ctx context.Context, l *link, m *wire.Message, h Handlers) error {
	var req struct {
		Prompt   string `json:"prompt"`
		Password bool   `json:"password"`
	}
	if err := m.DecodeContent(&req); err != nil {
		c.log.Warn("bad input_request", "error", err)
	}
	value, reply, err := h.AnswerInput(req.Prompt, req.Password)
	switch {
	case !reply:
		c.log.Debug("input abandoned by an interrupt; no input_reply", "error", err)
		return nil
	case err != nil:
		c.log.Info("input handler failed; replying with empty input", "error", err)
	}
	return c.sendInputReply(ctx, l, m, value)
}

func (c *Client) sendInputReply(ctx context.Context, l *link, parent *wire.Message, value string) error {
	r, err := wire.Reply(parent, c.session, wire.MsgInputReply, map[string]string{"value": value})
	if err != nil {
		return fmt.Errorf("client: input_reply: %w", err)
	}
	r.Identities = nil
	r.Header.Username = c.user
	frames, err := c.signer.Encode(r)
	if err != nil {
		return fmt.Errorf("client: input_reply: %w", err)
	}
	if err := l.stdin.send(ctx, frames); err != nil {
		return fmt.Errorf("client: send input_reply: %w", err)
	}
	return nil
}

// ExecuteOptions are the execute_request fields besides the code.
type ExecuteOptions struct {
	Silent bool
	// StoreHistory defaults to true.
	StoreHistory    *bool
	AllowStdin      bool
	StopOnError     bool
	UserExpressions map[string]string
}

// Execute runs code: Do with an execute_request.
func (c *Client) Execute(ctx context.Context, code string, opts ExecuteOptions, h Handlers) (*wire.Message, error) {
	store := true
	if opts.StoreHistory != nil {
		store = *opts.StoreHistory
	}
	ue := opts.UserExpressions
	if ue == nil {
		ue = map[string]string{}
	}
	content := struct {
		Code            string            `json:"code"`
		Silent          bool              `json:"silent"`
		StoreHistory    bool              `json:"store_history"`
		UserExpressions map[string]string `json:"user_expressions"`
		AllowStdin      bool              `json:"allow_stdin"`
		StopOnError     bool              `json:"stop_on_error"`
	}{code, opts.Silent, store, ue, opts.AllowStdin, opts.StopOnError}
	return c.Do(ctx, Request{MsgType: wire.MsgExecuteRequest, Content: content}, h)
}

// KernelInfo sends kernel_info_request and returns the reply.
func (c *Client) KernelInfo(ctx context.Context) (*wire.Message, error) {
	return c.Do(ctx, Request{MsgType: wire.MsgKernelInfoRequest}, Handlers{})
}

// waitReady nudges the kernel with kernel_info_request, as jupyter_client
// and Jupyter Server do, until a reply has arrived and iopub traffic has been
// seen (so the subscription is live and no output is lost to the ZeroMQ
// slow-joiner race). The nudges' own late messages are dropped.
func (c *Client) waitReady(ctx context.Context, l *link) error {
	wait := 50 * time.Millisecond
	for {
		p, _, err := c.send(ctx, Request{MsgType: wire.MsgKernelInfoRequest}, true)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return err
		}
		timer := time.NewTimer(wait)
		var seen <-chan struct{}
		ready, done := false, false
		for !done {
			select {
			case <-p.notify:
				evs, err := p.take()
				for _, ev := range evs {
					if ev.channel == "shell" {
						seen = l.iopubSeen
					}
				}
				if err != nil {
					timer.Stop()
					return err
				}
			case <-seen:
				ready, done = true, true
			case <-timer.C:
				done = true
			case <-ctx.Done():
				timer.Stop()
				c.abandon(p, false)
				return context.Cause(ctx)
			}
		}
		timer.Stop()
		c.abandon(p, false)
		if ready {
			return nil
		}
		wait = min(2*wait, time.Second)
	}
}
