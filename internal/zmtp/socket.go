package zmtp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
)

// HandshakeTimeout bounds the ZMTP greeting and handshake of a new peer.
const HandshakeTimeout = 10 * time.Second

// WriteTimeout bounds one message's write to a peer. A peer that does not
// read for this long is disconnected (it will reconnect, as ZeroMQ peers
// do), instead of stalling the kernel.
const WriteTimeout = 10 * time.Second

// ErrUnknownPeer is returned by Router.Send for an identity that is not
// connected; ZeroMQ drops such messages silently.
var ErrUnknownPeer = errors.New("zmtp: no peer with that identity")

// nullSecurity is ZMTP's NULL mechanism (zmq4's own is unexported): the
// handshake is one READY command each way with the socket's metadata.
type nullSecurity struct{}

func (nullSecurity) Type() zmq4.SecurityType { return zmq4.NullSecurity }

func (nullSecurity) Handshake(c *zmq4.Conn, server bool) error {
	raw, err := c.Meta.MarshalZMTP()
	if err != nil {
		return fmt.Errorf("zmtp: marshal metadata: %w", err)
	}
	if err := c.SendCmd(zmq4.CmdReady, raw); err != nil {
		return fmt.Errorf("zmtp: send READY: %w", err)
	}
	cmd, err := c.RecvCmd()
	if err != nil {
		return fmt.Errorf("zmtp: receive READY: %w", err)
	}
	if cmd.Name != zmq4.CmdReady {
		return fmt.Errorf("zmtp: peer sent %q, not READY", cmd.Name)
	}
	if err := c.Peer.Meta.UnmarshalZMTP(cmd.Body); err != nil {
		return fmt.Errorf("zmtp: peer metadata: %w", err)
	}
	return nil
}

func (nullSecurity) Encrypt(w io.Writer, data []byte) (int, error) { return w.Write(data) }
func (nullSecurity) Decrypt(w io.Writer, data []byte) (int, error) { return w.Write(data) }

// Listen opens a listener for a tcp:// or ipc:// endpoint, for
// NewRouter or NewPub.
func Listen(ep string) (net.Listener, error) {
	network, addr, err := splitEndpoint(ep)
	if err != nil {
		return nil, err
	}
	return net.Listen(network, addr)
}

// peer is one connected ZMTP peer.
type peer struct {
	id  string
	nc  *conn
	zc  *zmq4.Conn // its handshake and reads; messages are written by send
	wmu sync.Mutex

	// A PUB subscriber's queue, drained by its own writer: a subscriber
	// that stops reading fills its queue and is dropped, and never stalls
	// a publish to the others.
	out    chan [][]byte
	queued atomic.Int64 // bytes in out
}

// send writes one message; a failed or timed-out write closes the peer.
func (p *peer) send(frames [][]byte) error { return p.sendAll([][][]byte{frames}) }

// sendAll writes messages in order, together (see conn.writeMsgs), within
// one WriteTimeout; a failed or timed-out write closes the peer.
func (p *peer) sendAll(msgs [][][]byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_ = p.nc.SetWriteDeadline(time.Now().Add(WriteTimeout))
	if err := p.nc.writeMsgs(msgs); err != nil {
		p.nc.Close()
		return fmt.Errorf("zmtp: send: %w", err)
	}
	return nil
}

// server is what Router and Pub share: the listener, the peers, the
// goroutines.
type server struct {
	typ     zmq4.SocketType
	byID    bool // peers are known by their identity (ROUTER)
	ln      net.Listener
	onError func(error) // for peers that fail their handshake or read
	newPeer func(*peer) // sets up a peer before it is served; may be nil

	mu     sync.Mutex
	peers  map[string]*peer
	next   atomic.Uint32 // for anonymous identities
	closed bool
	wg     sync.WaitGroup
}

func newServer(ln net.Listener, typ zmq4.SocketType, onError func(error)) *server {
	if onError == nil {
		onError = func(error) {}
	}
	return &server{typ: typ, ln: ln, onError: onError, peers: make(map[string]*peer)}
}

// Addr returns the address the socket listens on.
func (s *server) Addr() net.Addr { return s.ln.Addr() }

// serve accepts peers and runs read for each on its own goroutine. Until it
// is called, connecting peers wait in the listen backlog.
func (s *server) serve(read func(*peer)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return // closed
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.run(c, read)
			}()
		}
	}()
}

func (s *server) run(c net.Conn, read func(*peer)) {
	nc := newConn(c)
	_ = nc.SetDeadline(time.Now().Add(HandshakeTimeout))
	zc, err := zmq4.Open(nc, nullSecurity{}, s.typ, nil, true, nil)
	if err != nil {
		nc.Close()
		s.onError(fmt.Errorf("handshake with %s: %w", c.RemoteAddr(), err))
		return
	}
	_ = nc.SetDeadline(time.Time{})
	id := zc.Peer.Meta["Identity"]
	if id == "" || !s.byID {
		id = s.anonymousID()
	}
	p := &peer{id: id, nc: nc, zc: zc}
	if s.newPeer != nil {
		s.newPeer(p)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	// A peer that reconnects under its identity replaces the old
	// connection (ZMQ_ROUTER_HANDOVER): the old one is usually dead.
	if old := s.peers[id]; old != nil {
		old.nc.Close()
	}
	s.peers[id] = p
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.peers[id] == p {
			delete(s.peers, id)
		}
		s.mu.Unlock()
		nc.Close()
	}()
	read(p)
}

// anonymousID is the identity given to a peer that announces none: as
// libzmq, a zero byte (reserved for generated identities) and a counter.
func (s *server) anonymousID() string {
	var b [5]byte
	binary.BigEndian.PutUint32(b[1:], s.next.Add(1))
	return string(b[:])
}

// Close stops accepting, disconnects every peer and waits for the reading
// goroutines (handlers running on them must return).
func (s *server) Close() error {
	s.mu.Lock()
	s.closed = true
	err := s.ln.Close()
	for _, p := range s.peers {
		p.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// Router is a ROUTER socket that listens: every message received is handed
// to the handler with the sender's identity as first frame, on the
// connection's reading goroutine; Send routes by that first frame.
type Router struct {
	*server
}

// NewRouter returns a Router that serves ln, a TCP or Unix listener, and
// closes it with the Router. Peers are served once Serve is called: an
// owner can finish setting up what its handler uses in between. onError
// (may be nil) hears about peers dropped for a failed handshake or a bad
// frame.
func NewRouter(ln net.Listener, onError func(error)) *Router {
	s := newServer(ln, zmq4.Router, onError)
	s.byID = true
	return &Router{s}
}

// Serve starts accepting peers and calls handle for every message, on the
// goroutine reading the peer's connection: one peer's messages arrive in
// order, different peers' concurrently. A handler that blocks holds back
// its peer only. Call it once.
func (r *Router) Serve(handle func(frames [][]byte)) {
	s := r.server
	s.serve(func(p *peer) {
		id := []byte(p.id)
		for {
			msg, err := p.zc.RecvMsg()
			if err != nil {
				if !isClosed(err) {
					s.onError(fmt.Errorf("read from %s: %w", p.nc.RemoteAddr(), err))
				}
				return
			}
			if msg.Type == zmq4.CmdMsg {
				continue // PING is answered by RecvMsg; nothing else matters
			}
			handle(append([][]byte{id}, msg.Frames...))
		}
	})
}

// Send sends frames[1:] to the peer whose identity is frames[0].
func (r *Router) Send(frames [][]byte) error {
	if len(frames) < 2 {
		return errors.New("zmtp: router send needs an identity and a frame")
	}
	r.mu.Lock()
	p := r.peers[string(frames[0])]
	r.mu.Unlock()
	if p == nil {
		return ErrUnknownPeer
	}
	return p.send(frames[1:])
}

// Pub is a PUB socket that listens. Every message goes to every
// subscriber: SUB sockets filter by topic themselves (libzmq's and zmq4's
// do), and Jupyter clients subscribe to everything. Each subscriber has a
// bounded queue (PubQueueMessages, PubQueueBytes) drained by its own
// writer; one that falls that far behind is dropped (it reconnects, as
// SUB sockets do), and onError hears of it with ErrSlowSubscriber.
type Pub struct {
	*server
	onJoin atomic.Pointer[func(topic []byte, send func([][]byte))]
}

// The bounds of a subscriber's queue. libzmq's PUB keeps 1000 messages
// (ZMQ_SNDHWM) and then drops messages; we drop the subscriber, which
// reconnects.
const (
	PubQueueMessages = 1000
	PubQueueBytes    = 64 << 20
)

// ErrSlowSubscriber is reported to a Pub's onError for a subscriber
// dropped because its queue was full. Test with errors.Is.
var ErrSlowSubscriber = errors.New("zmtp: subscriber cannot keep up")

// NewPub returns a Pub that serves ln, a TCP or Unix listener, at once, and
// closes it with the Pub. onError may be nil.
func NewPub(ln net.Listener, onError func(error)) *Pub {
	s := newServer(ln, zmq4.Pub, onError)
	s.newPeer = func(p *peer) { p.out = make(chan [][]byte, PubQueueMessages) }
	pub := &Pub{server: s}
	s.serve(func(p *peer) {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // the subscriber's writer, waited for below
			defer wg.Done()
			writeQueue(p)
			for range p.out { // drop the rest until the queue closes
			}
		}()
		// Subscriptions and commands: read until the peer goes. The first
		// one (a subscription: SUBs send nothing else) is the join.
		for joined := false; ; joined = true {
			msg, err := p.zc.RecvMsg()
			if err != nil {
				break
			}
			if f := pub.onJoin.Load(); f != nil && !joined {
				(*f)(subscription(msg), func(frames [][]byte) { pub.enqueue(p, frames) })
			}
		}
		s.mu.Lock()
		if s.peers[p.id] == p {
			delete(s.peers, p.id) // no Send enqueues to it any more
		}
		close(p.out)
		s.mu.Unlock()
		wg.Wait()
	})
	return pub
}

// The most a subscriber's writer gathers into one write: what is queued
// when it wakes, up to these bounds.
const (
	batchMessages = 64
	batchBytes    = 4 << 20
)

// writeQueue writes p's queue until it closes or a write fails (which
// closes the connection). Each write takes the message that woke the
// writer and those queued behind it by then (a burst: status, outputs,
// status), so a burst costs one system call where it cost one a message;
// a lone message is written at once, never held for company.
func writeQueue(p *peer) {
	batch := make([][][]byte, 0, batchMessages)
	for frames := range p.out {
		batch = append(batch[:0], frames)
		n := size(frames)
	gather:
		for len(batch) < batchMessages && n < batchBytes {
			select {
			case more, ok := <-p.out:
				if !ok {
					break gather // closed: write these, then the range ends
				}
				batch = append(batch, more)
				n += size(more)
			default:
				break gather
			}
		}
		err := p.sendAll(batch)
		p.queued.Add(-int64(n))
		clear(batch) // do not keep the messages' frames alive
		if err != nil {
			return
		}
	}
}

// subscription returns the topic of a subscription: a message whose first
// byte is 1 (ZMTP 3.0) or a SUBSCRIBE command, whose body zmq4 gives as the
// frame (ZMTP 3.1).
func subscription(msg zmq4.Msg) []byte {
	if len(msg.Frames) == 0 || len(msg.Frames[0]) == 0 {
		return nil
	}
	if msg.Type == zmq4.CmdMsg {
		return msg.Frames[0]
	}
	return msg.Frames[0][1:]
}

// OnJoin sets f, called when a subscriber sends its first subscription,
// with a send that reaches that subscriber only (through its queue): a
// PUB/SUB pair drops what is published before the subscription arrives,
// and f can tell the newcomer what it missed (the kernel's current
// status). f gets the subscription's topic, and runs on the subscriber's
// reading goroutine.
func (p *Pub) OnJoin(f func(topic []byte, send func(frames [][]byte))) { p.onJoin.Store(&f) }

// Send queues the message for every subscriber and returns: it never
// waits for one. A subscriber whose queue is full is disconnected.
func (p *Pub) Send(frames [][]byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range p.peers {
		p.enqueueLocked(q, frames)
	}
	return nil
}

// enqueue queues frames for subscriber q alone, if it is still connected.
func (p *Pub) enqueue(q *peer, frames [][]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.peers[q.id] == q {
		p.enqueueLocked(q, frames)
	}
}

// enqueueLocked queues frames for q, or drops q when its queue is full.
func (p *Pub) enqueueLocked(q *peer, frames [][]byte) {
	if q.queued.Add(int64(size(frames))) > PubQueueBytes {
		p.dropSlowLocked(q)
		return
	}
	select {
	case q.out <- frames:
	default:
		p.dropSlowLocked(q)
	}
}

// dropSlowLocked disconnects a subscriber that fell too far behind.
func (p *Pub) dropSlowLocked(q *peer) {
	delete(p.peers, q.id)
	err := fmt.Errorf("%w: %d messages (%d bytes) queued; disconnected", ErrSlowSubscriber, len(q.out), q.queued.Load())
	q.nc.Close()
	p.onError(err)
}

func size(frames [][]byte) int {
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	return n
}

func isClosed(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, zmq4.ErrClosedConn) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

// RetryInterval is how often Dial tries again while nothing listens yet
// (a kernel that is still starting), and how soon a lost connection is
// dialled again.
const RetryInterval = 20 * time.Millisecond

// Dialer is a connecting socket with one peer: a DEALER or a SUB. Received
// messages go to the handler given to Serve, on the goroutine reading the
// connection; Send writes on the caller's goroutine. A lost connection is
// dialled again until Close.
type Dialer struct {
	ep      string
	typ     zmq4.SocketType
	id      []byte
	onError func(error)

	mu     sync.Mutex
	cur    *peer
	closed bool
	stop   chan struct{} // closed by Close
	wg     sync.WaitGroup
}

// Dial connects a socket of type typ (zmq4.Dealer or zmq4.Sub) with
// identity id (may be nil) to ep, retrying until ctx ends while nothing
// listens there. A SUB subscribes to everything. Messages are read once
// Serve is called (until then they wait in the socket); Send works at
// once. onError (may be nil) hears about lost connections.
func Dial(ctx context.Context, ep string, typ zmq4.SocketType, id []byte, onError func(error)) (*Dialer, error) {
	if onError == nil {
		onError = func(error) {}
	}
	d := &Dialer{ep: ep, typ: typ, id: id, onError: onError, stop: make(chan struct{})}
	p, err := d.connect(ctx)
	if err != nil {
		return nil, err
	}
	d.cur = p
	return d, nil
}

// Serve starts reading: handle receives every message, on the reading
// goroutine. Call it once.
func (d *Dialer) Serve(handle func([][]byte)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.wg.Add(1)
	go d.read(d.cur, handle)
}

// connect dials until it has a peer, ctx ends or the Dialer is closed.
func (d *Dialer) connect(ctx context.Context) (*peer, error) {
	network, addr, err := splitEndpoint(d.ep)
	if err != nil {
		return nil, err
	}
	var nd net.Dialer
	for {
		c, err := nd.DialContext(ctx, network, addr)
		if err == nil {
			var p *peer
			if p, err = d.handshake(ctx, c); err == nil {
				return p, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("zmtp: dial %s: %w (last error: %v)", d.ep, context.Cause(ctx), err)
		case <-d.stop:
			return nil, fmt.Errorf("zmtp: dial %s: %w", d.ep, net.ErrClosed)
		case <-time.After(RetryInterval):
		}
	}
}

// handshake does the ZMTP handshake on c, bounded by HandshakeTimeout and
// ctx: something that accepts and never answers (not a ZeroMQ peer, or a
// process that stopped) must not hold a dial past its ctx.
func (d *Dialer) handshake(ctx context.Context, c net.Conn) (*peer, error) {
	nc := newConn(c)
	_ = nc.SetDeadline(time.Now().Add(HandshakeTimeout))
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	zc, err := zmq4.Open(nc, nullSecurity{}, d.typ, zmq4.SocketIdentity(d.id), false, nil)
	if !stop() && err == nil {
		err = context.Cause(ctx) // the deadline may have hit what follows
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	p := &peer{nc: nc, zc: zc}
	if d.typ == zmq4.Sub {
		// ZMTP 3.0 subscription: a message of 1 and the topic ("").
		if err := p.send([][]byte{{1}}); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// read hands p's messages to handle; when p fails it dials again.
func (d *Dialer) read(p *peer, handle func([][]byte)) {
	defer d.wg.Done()
	for {
		msg, err := p.zc.RecvMsg()
		if err == nil {
			if msg.Type != zmq4.CmdMsg {
				handle(msg.Frames)
			}
			continue
		}
		p.nc.Close()
		d.mu.Lock()
		closed := d.closed
		d.mu.Unlock()
		if closed {
			return
		}
		d.onError(fmt.Errorf("connection to %s lost: %w", d.ep, err))
		np, err := d.connect(context.Background()) // until Close
		if err != nil {
			return // closed
		}
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			np.nc.Close()
			return
		}
		d.cur = np
		d.mu.Unlock()
		p = np
	}
}

// Send writes one message to the peer.
func (d *Dialer) Send(frames [][]byte) error {
	d.mu.Lock()
	p, closed := d.cur, d.closed
	d.mu.Unlock()
	if closed {
		return fmt.Errorf("zmtp: send: %w", net.ErrClosed)
	}
	return p.send(frames)
}

// Close closes the connection and waits for the reading goroutine (a
// handler running on it must return).
func (d *Dialer) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return net.ErrClosed
	}
	d.closed = true
	close(d.stop)
	p := d.cur
	d.mu.Unlock()
	p.nc.Close()
	d.wg.Wait()
	return nil
}

func splitEndpoint(ep string) (network, addr string, err error) {
	switch {
	case strings.HasPrefix(ep, "tcp://"):
		return "tcp", strings.TrimPrefix(ep, "tcp://"), nil
	case strings.HasPrefix(ep, Scheme+"://"):
		return "tcp", strings.TrimPrefix(ep, Scheme+"://"), nil
	case strings.HasPrefix(ep, "ipc://"):
		return "unix", strings.TrimPrefix(ep, "ipc://"), nil
	case strings.HasPrefix(ep, IPCScheme+"://"):
		return "unix", strings.TrimPrefix(ep, IPCScheme+"://"), nil
	}
	return "", "", fmt.Errorf("zmtp: unsupported endpoint %q", ep)
}
