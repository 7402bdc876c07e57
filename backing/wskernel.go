package backing

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// errLinkLost fails the requests in flight when the WebSocket to a server
// kernel drops; the next request reconnects.
var errLinkLost = errors.New("backing: the connection to the server's kernel was lost")

// wsMsg is a message as the kernels WebSocket of a Jupyter server carries
// it: the message's parts as JSON, and the channel.
type wsMsg struct {
	Header       wire.Header     `json:"header"`
	ParentHeader json.RawMessage `json:"parent_header"`
	Metadata     json.RawMessage `json:"metadata"`
	Content      json.RawMessage `json:"content"`
	Channel      string          `json:"channel"`
	Buffers      []any           `json:"buffers,omitempty"`
}

// encodeWS returns the WebSocket frame of a message: JSON text, or, with
// buffers, the binary framing Jupyter servers use (a count, offsets, the
// JSON, the buffers).
func encodeWS(m wsMsg, buffers [][]byte) (websocket.MessageType, []byte, error) {
	m.Buffers = nil
	js, err := json.Marshal(m)
	if err != nil {
		return 0, nil, err
	}
	if len(buffers) == 0 {
		return websocket.MessageText, js, nil
	}
	parts := append([][]byte{js}, buffers...)
	n := len(parts)
	head := make([]byte, 4*(n+1))
	binary.BigEndian.PutUint32(head, uint32(n))
	off := uint32(len(head))
	for i, p := range parts {
		binary.BigEndian.PutUint32(head[4*(i+1):], off)
		off += uint32(len(p))
	}
	out := head
	for _, p := range parts {
		out = append(out, p...)
	}
	return websocket.MessageBinary, out, nil
}

// decodeWS parses a WebSocket frame from the server.
func decodeWS(typ websocket.MessageType, data []byte) (wsMsg, [][]byte, error) {
	var m wsMsg
	if typ == websocket.MessageText {
		err := json.Unmarshal(data, &m)
		return m, nil, err
	}
	if len(data) < 4 {
		return m, nil, errors.New("short binary frame")
	}
	n := int(binary.BigEndian.Uint32(data))
	if n < 1 || n > 1024 || len(data) < 4*(n+1) {
		return m, nil, fmt.Errorf("binary frame with %d parts", n)
	}
	offs := make([]int, n+1)
	for i := 0; i < n; i++ {
		offs[i] = int(binary.BigEndian.Uint32(data[4*(i+1):]))
	}
	offs[n] = len(data)
	parts := make([][]byte, n)
	for i := 0; i < n; i++ {
		if offs[i] < 4*(n+1) || offs[i] > offs[i+1] || offs[i+1] > len(data) {
			return m, nil, errors.New("binary frame with bad offsets")
		}
		parts[i] = data[offs[i]:offs[i+1]]
	}
	if err := json.Unmarshal(parts[0], &m); err != nil {
		return m, nil, err
	}
	return m, parts[1:], nil
}

// wsPending is one request in flight.
type wsPending struct {
	h       client.Handlers
	reply   *wire.Message
	replied chan struct{} // closed when the reply came
	idle    chan struct{} // closed at the request's status idle
	seen    chan struct{} // cap 1: an iopub message for the request came
	status  chan struct{} // cap 1: a status for it came
	failed  chan struct{} // closed with err
	err     error

	// hmu is held while one of h's handlers runs, on the reader's
	// goroutine; ended, set under it when Do returns, stops them: the
	// caller reads what the handlers collected once Do has returned, and
	// the reader may have taken p from pending just before.
	hmu   sync.Mutex
	ended bool
}

// handle runs f, one of p's handlers, unless p's Do has returned.
func (p *wsPending) handle(f func()) {
	p.hmu.Lock()
	defer p.hmu.Unlock()
	if !p.ended {
		f()
	}
}

// end waits for a handler of p that runs and stops the rest.
func (p *wsPending) end() {
	p.hmu.Lock()
	p.ended = true
	p.hmu.Unlock()
}

func newWSPending(h client.Handlers) *wsPending {
	return &wsPending{h: h, replied: make(chan struct{}), idle: make(chan struct{}), seen: make(chan struct{}, 1),
		status: make(chan struct{}, 1), failed: make(chan struct{})}
}

// poke signals ch (cap 1) without waiting.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// wsKernel is one kernel on a Jupyter server, reached over its channels
// WebSocket. Requests from several goroutines are multiplexed; each reply
// and iopub message goes to the request it answers. The link reconnects on
// the next request after it drops.
type wsKernel struct {
	g       Gateway
	id      string
	log     hclog.Logger
	session string
	user    string
	httpc   *http.Client
	onIOPub func(*wire.Message)
	// probe asks the server whether the kernel still exists (an error
	// wrapping client.ErrDead if not): a kernel deleted on the server may
	// leave its WebSocket open and silent.
	probe func(ctx context.Context) error

	ctx    context.Context // lifetime
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	conn    *websocket.Conn // nil while not connected
	pending map[string]*wsPending
	sendMu  chan struct{} // cap 1: one writer at a time
}

func newWSKernel(g Gateway, id string, httpc *http.Client, log hclog.Logger, onIOPub func(*wire.Message)) *wsKernel {
	user := os.Getenv("USER")
	if user == "" {
		user = "agentkernel"
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &wsKernel{g: g, id: id, log: log, session: wire.NewSessionID(), user: user, httpc: httpc, onIOPub: onIOPub,
		ctx: ctx, cancel: cancel, pending: map[string]*wsPending{}, sendMu: make(chan struct{}, 1)}
}

// link returns the WebSocket, connecting it if needed.
func (k *wsKernel) link(ctx context.Context) (*websocket.Conn, error) {
	k.mu.Lock()
	c := k.conn
	k.mu.Unlock()
	if c != nil {
		return c, nil
	}
	dctx, cancel := context.WithTimeout(ctx, k.g.ConnectTimeout)
	defer cancel()
	u := k.g.wsEndpoint("/api/kernels/"+k.id+"/channels") + "?session_id=" + k.session
	c, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: k.httpc, HTTPHeader: k.g.header()})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("%w: kernel %s is gone from %s", client.ErrDead, k.id, k.g.URL)
		}
		return nil, fmt.Errorf("%w: connect to kernel %s on %s: %v", ErrGateway, k.id, k.g.URL, err)
	}
	c.SetReadLimit(64 << 20)
	k.mu.Lock()
	if k.conn != nil { // another caller connected meanwhile
		k.mu.Unlock()
		c.Close(websocket.StatusNormalClosure, "")
		return k.conn, nil
	}
	k.conn = c
	k.mu.Unlock()
	k.wg.Add(1)
	go func() { // the reader, owned by k: ends with the connection
		defer k.wg.Done()
		k.read(c)
	}()
	return c, nil
}

// read dispatches the server's messages until the connection ends.
func (k *wsKernel) read(c *websocket.Conn) {
	for {
		typ, data, err := c.Read(k.ctx)
		if err != nil {
			k.lost(c, err)
			return
		}
		m, bufs, err := decodeWS(typ, data)
		if err != nil {
			k.log.Warn("dropping a message from the server", "error", err)
			continue
		}
		k.dispatch(c, m, bufs)
	}
}

// lost fails the requests in flight on a dropped connection.
func (k *wsKernel) lost(c *websocket.Conn, err error) {
	k.mu.Lock()
	if k.conn == c {
		k.conn = nil
	}
	pend := k.pending
	k.pending = map[string]*wsPending{}
	k.mu.Unlock()
	if k.ctx.Err() == nil {
		k.log.Warn("connection to the server's kernel lost", "kernel", k.id, "error", err)
	}
	for _, p := range pend {
		p.fail(errLinkLost)
	}
}

func (p *wsPending) fail(err error) {
	select {
	case <-p.failed:
	default:
		p.err = err
		close(p.failed)
	}
}

func (k *wsKernel) dispatch(c *websocket.Conn, m wsMsg, bufs [][]byte) {
	msg := &wire.Message{Header: m.Header, ParentHeader: m.ParentHeader, Metadata: m.Metadata, Content: m.Content, Buffers: bufs}
	var parent struct {
		MsgID string `json:"msg_id"`
	}
	_ = json.Unmarshal(m.ParentHeader, &parent)
	k.mu.Lock()
	p := k.pending[parent.MsgID]
	k.mu.Unlock()
	switch m.Channel {
	case "iopub":
		if p == nil {
			if k.onIOPub != nil {
				k.onIOPub(msg)
			}
			return
		}
		if p.h.IOPub != nil {
			p.handle(func() { p.h.IOPub(msg) })
		}
		if m.Header.MsgType == wire.MsgStatus {
			var st wire.Status
			if json.Unmarshal(m.Content, &st) == nil && st.ExecutionState == wire.StateIdle {
				closeOnce(p.idle)
			}
			poke(p.status)
		}
		poke(p.seen)
	case "shell", "control":
		if p == nil {
			return
		}
		if p.h.Reply != nil {
			p.handle(func() { p.h.Reply(msg) })
		}
		k.mu.Lock()
		p.reply = msg
		k.mu.Unlock()
		closeOnce(p.replied)
	case "stdin":
		if p == nil || m.Header.MsgType != wire.MsgInputRequest {
			return
		}
		var req struct {
			Prompt   string `json:"prompt"`
			Password bool   `json:"password"`
		}
		_ = json.Unmarshal(m.Content, &req)
		k.wg.Add(1)
		go func() { // answers the input_request; owned by k
			defer k.wg.Done()
			value, send, err := p.h.AnswerInput(req.Prompt, req.Password)
			if !send {
				k.log.Debug("input abandoned by an interrupt; no input_reply", "error", err)
				return
			}
			reply := wsMsg{Header: wire.NewHeader(k.session, k.user, wire.MsgInputReply), ParentHeader: msg.RawHeader(),
				Metadata: json.RawMessage("{}"), Content: mustRaw(map[string]string{"value": value}), Channel: "stdin"}
			if err := k.write(k.ctx, c, reply, nil); err != nil {
				k.log.Debug("input_reply", "error", err)
			}
		}()
	}
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

func mustRaw(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// write sends one message; sends are serialised.
func (k *wsKernel) write(ctx context.Context, c *websocket.Conn, m wsMsg, buffers [][]byte) error {
	typ, data, err := encodeWS(m, buffers)
	if err != nil {
		return err
	}
	select {
	case k.sendMu <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-k.sendMu }()
	return c.Write(ctx, typ, data)
}

// noReply are the requests a kernel does not answer (comm messages).
var noReply = map[string]bool{wire.MsgCommOpen: true, wire.MsgCommMsg: true, wire.MsgCommClose: true}

// probeInterval is how often Do asks the server whether the kernel still
// exists while it waits for a reply.
const probeInterval = 2 * time.Second

// idleTimeout is how long Do waits, once a request's reply has come and
// nothing more for it, before it probes for a lost idle, as
// client.Client.Do does with its IdleTimeout.
const idleTimeout = 5 * time.Second

// Do sends one request and streams back what the kernel sends for it, as
// client.Client.Do does: outputs that come well after the reply are still
// the request's, and a lost idle (a probe's status came before it) is
// the reply with an error wrapping client.ErrIncomplete.
func (k *wsKernel) Do(ctx context.Context, req client.Request, h client.Handlers) (*wire.Message, error) {
	c, err := k.link(ctx)
	if err != nil {
		return nil, err
	}
	p := newWSPending(h)
	id, err := k.send(ctx, c, req, p)
	if err != nil {
		return nil, err
	}
	defer k.forget(id)
	defer p.end()
	if h.Sent != nil {
		h.Sent()
	}
	if noReply[hdrType(req)] {
		t := time.NewTimer(idleTimeout)
		defer t.Stop()
		select {
		case <-p.idle:
		case <-t.C:
		case <-p.failed:
			return nil, p.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, nil
	}
	probe := time.NewTicker(probeInterval)
	defer probe.Stop()
wait:
	for {
		select {
		case <-p.replied:
			break wait
		case <-p.failed:
			return nil, p.err
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-probe.C:
			if k.probe != nil {
				if err := k.probe(ctx); errors.Is(err, client.ErrDead) {
					return nil, err
				}
			}
		}
	}
	return k.waitIdle(ctx, c, req, p)
}

// hdrType is req's message type.
func hdrType(req client.Request) string {
	if req.MsgType == "" && req.Header != nil {
		return req.Header.MsgType
	}
	return req.MsgType
}

// send registers p as the pending request req and writes req; forget(id)
// ends it.
func (k *wsKernel) send(ctx context.Context, c *websocket.Conn, req client.Request, p *wsPending) (string, error) {
	var hdr wire.Header
	if req.Header != nil {
		hdr = *req.Header
		hdr.Complete(k.session, k.user, req.MsgType)
	} else {
		hdr = wire.NewHeader(k.session, k.user, req.MsgType)
	}
	if hdr.MsgID == "" {
		hdr.MsgID = uuid.NewString()
	}
	content, ok := req.Content.(json.RawMessage)
	if !ok {
		var err error
		if req.Content == nil {
			content = json.RawMessage("{}")
		} else if content, err = json.Marshal(req.Content); err != nil {
			return "", fmt.Errorf("backing: encode %s: %w", hdr.MsgType, err)
		}
	}
	metadata := req.Metadata
	if len(metadata) == 0 {
		metadata = json.RawMessage("{}")
	}
	channel := string(req.Channel)
	if channel == "" {
		channel = string(wire.Shell)
	}
	k.mu.Lock()
	k.pending[hdr.MsgID] = p
	k.mu.Unlock()
	m := wsMsg{Header: hdr, ParentHeader: json.RawMessage("{}"), Metadata: metadata, Content: content, Channel: channel}
	if err := k.write(ctx, c, m, req.Buffers); err != nil {
		k.forget(hdr.MsgID)
		return "", fmt.Errorf("backing: send %s: %w", hdr.MsgType, err)
	}
	return hdr.MsgID, nil
}

// forget ends the request id: what comes for it later goes to onIOPub.
func (k *wsKernel) forget(id string) {
	k.mu.Lock()
	delete(k.pending, id)
	k.mu.Unlock()
}

// waitIdle waits for the status idle of p, whose reply has come. When
// idleTimeout passes with nothing more for it, it probes the kernel with a
// kernel_info_request on req's channel and subshell, as client.Client.Do
// does, up to client.IdleProbes times; output that comes under a probe is
// p's. A probe not answered within idleTimeout waits behind later
// requests: p is taken at its reply.
func (k *wsKernel) waitIdle(ctx context.Context, c *websocket.Conn, req client.Request, p *wsPending) (*wire.Message, error) {
	quiet := time.NewTimer(idleTimeout)
	defer quiet.Stop()
	var (
		probe    *wsPending // the last probe
		probeIDs []string   // every probe's: what comes for any of them is seen to
		answered bool       // the last probe's reply came
	)
	defer func() {
		for _, id := range probeIDs {
			k.forget(id)
		}
	}()
	probeStatus := make(chan struct{}, 1) // any probe's status came
	probeOutput := probeOutputOf(p)
	for {
		var probeReplied <-chan struct{}
		if probe != nil && !answered {
			probeReplied = probe.replied
		}
		select {
		case <-p.idle:
			return k.replyOf(p), nil
		case <-p.failed:
			return k.noIdle(req, p, "the connection was lost after the reply")
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-p.seen:
			quiet.Reset(idleTimeout)
		case <-probeReplied:
			answered = true
			quiet.Reset(idleTimeout)
		case <-probeStatus:
			// One reader dispatches in order: p's messages before the
			// probe's were handled before this.
			select {
			case <-p.idle:
				return k.replyOf(p), nil
			default:
			}
			return k.noIdle(req, p, "a probe's status came before the idle")
		case <-quiet.C:
			switch {
			case probe != nil && !answered: // see client.Client.Do
				return k.noIdle(req, p, "the kernel is busy with later requests")
			case len(probeIDs) >= client.IdleProbes:
				return k.noIdle(req, p, "no probe's status came")
			default:
				probe = newWSPending(probeOutput)
				probe.status = probeStatus
				id, err := k.sendProbe(ctx, c, req, probe)
				if err != nil {
					return k.noIdle(req, p, "the probe could not be sent: "+err.Error())
				}
				probeIDs = append(probeIDs, id)
				answered = false
			}
			quiet.Reset(idleTimeout)
		}
	}
}

// replyOf is p's reply.
func (k *wsKernel) replyOf(p *wsPending) *wire.Message {
	k.mu.Lock()
	defer k.mu.Unlock()
	return p.reply
}

// noIdle gives up on the idle of p, for why: only an execution's outputs
// can be missing (client.ErrIncomplete).
func (k *wsKernel) noIdle(req client.Request, p *wsPending, why string) (*wire.Message, error) {
	k.log.Warn("no status idle for a request", "msg_type", hdrType(req), "why", why)
	if hdrType(req) != wire.MsgExecuteRequest {
		return k.replyOf(p), nil
	}
	return k.replyOf(p), fmt.Errorf("%s: %w", why, client.ErrIncomplete)
}

// probeOutputOf takes the iopub of p's probes: a probe's output is p's (a
// kernel binds buffered output to the request it handles when it flushes
// it); its status says the kernel is past p.
func probeOutputOf(p *wsPending) client.Handlers {
	return client.Handlers{IOPub: func(m *wire.Message) {
		if m.Header.MsgType == wire.MsgStatus {
			return
		}
		if p.h.IOPub != nil {
			p.handle(func() { p.h.IOPub(m) })
		}
		poke(p.seen)
	}}
}

// sendProbe sends a probe of req's late idle, a kernel_info_request on
// req's channel and subshell, whose messages go to probe.
func (k *wsKernel) sendProbe(ctx context.Context, c *websocket.Conn, req client.Request, probe *wsPending) (string, error) {
	hdr := wire.NewHeader(k.session, k.user, wire.MsgKernelInfoRequest)
	if req.Header != nil {
		hdr.SubshellID = req.Header.SubshellID
	}
	return k.send(ctx, c, client.Request{Channel: req.Channel, MsgType: wire.MsgKernelInfoRequest, Header: &hdr}, probe)
}

// close drops the connection and waits for the goroutines.
func (k *wsKernel) close() {
	k.cancel()
	k.mu.Lock()
	c := k.conn
	k.conn = nil
	k.mu.Unlock()
	if c != nil {
		c.Close(websocket.StatusNormalClosure, "agentkernel shuts down")
	}
	k.wg.Wait()
}
