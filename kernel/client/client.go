package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/internal/zmtp"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// ErrDead is wrapped by every error that reports a dead kernel: its process
// exited, its heartbeat stopped, or it was restarted while a request was
// pending. Test with errors.Is.
var ErrDead = errors.New("client: kernel died")

// Options configure Start and Dial. The zero value works; defaults are
// documented per field and applied on a copy.
type Options struct {
	// Logger receives the client's logs and the kernel's stdout (Debug) and
	// stderr (Info). Default: hclog.Default().
	Logger hclog.Logger
	// Env holds extra KEY=VALUE entries for the kernel process, applied
	// after the spec's env.
	Env []string
	// Args are appended to the kernelspec's argv (after its templates are
	// filled in), as jupyter_client's extra_arguments are.
	Args []string
	// Dir is the kernel's working directory. Default: ours.
	Dir string
	// StartTimeout bounds launching (or dialing) until the kernel is
	// ready. Default 60s.
	StartTimeout time.Duration
	// BindTimeout is how long a starting kernel may take to bind all its
	// ports once it began (it bound the first, or started ZeroMQ), or
	// once another process was seen holding one; a kernel that has not is
	// not coming up (ipykernel hangs when a port is taken), and Start
	// tries again with fresh ports. A kernel that has not begun, or has
	// bound everything, is waited for up to StartTimeout. Default 5s.
	BindTimeout time.Duration
	// Transport is how Start connects to the kernel: TransportIPC (Unix
	// sockets in a private directory: no TCP port that another process
	// can take first) or TransportTCP (five free ports on loopback).
	// Default: ipc for ipykernel, which honours it, tcp for other kernels.
	Transport string
	// ConnectionDir is where Start writes the connection file, and makes
	// the directory of a kernel's ipc sockets. Default: the Jupyter
	// runtime dir (RuntimeDir).
	ConnectionDir string
	// Key, when set, is the signing key the kernel is given (Start)
	// instead of a fresh one: a proxy gives it its own frontend's, so that
	// the kernel's iopub messages can go on to the frontend as signed
	// (Request.Forward, kernel.Request.Forward).
	Key string
	// OnIOPub receives the iopub messages that belong to no pending request
	// (other clients' requests, "starting" status, …). It runs on the
	// client's iopub goroutine: it must not block, and must not call Do.
	OnIOPub func(*wire.Message)
	// HeartbeatInterval is the time between heartbeat pings; three missed
	// pings in a row mean the kernel is dead. Default 3s; negative
	// disables the heartbeat.
	HeartbeatInterval time.Duration
	// ShutdownTimeout bounds the graceful part of Shutdown and Restart
	// (shutdown_request, then waiting for the process to exit) before the
	// process group is killed. Default 5s.
	ShutdownTimeout time.Duration
	// IdleTimeout is how long Do waits for the status idle of a request
	// once its reply has arrived and nothing else came for it, in case the
	// idle message was lost. Default 5s.
	IdleTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = hclog.Default()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.BindTimeout <= 0 {
		o.BindTimeout = 5 * time.Second
	}
	if o.ConnectionDir == "" {
		o.ConnectionDir = RuntimeDir()
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = 3 * time.Second
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 5 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 5 * time.Second
	}
	return o
}

// Client holds the sockets to one kernel: DEALER shell, control and stdin,
// SUB iopub and REQ heartbeat. All methods are safe for concurrent use;
// requests from several goroutines are multiplexed, each reply and iopub
// message going to the request it answers. Call Close when done (a Client
// returned by Kernel.Client is closed by Kernel.Shutdown).
type Client struct {
	log     hclog.Logger
	conn    wire.ConnectionInfo
	signer  *wire.Signer
	session string
	user    string
	opts    Options
	// onDead is called (once per link) when the heartbeat fails; a Kernel
	// sets it before connecting. Default: fail.
	onDead func(error)

	ctx    context.Context // the client's lifetime: parent of every socket
	cancel context.CancelFunc

	mu        sync.Mutex
	link      *link               // nil while (re)connecting
	linkUp    chan struct{}       // closed when link is set
	pending   map[string]*pending // by request msg_id
	abandoned map[string]struct{} // requests whose late messages are dropped
	deadErr   error               // set once: the kernel is dead for good
	dead      chan struct{}       // closed with deadErr
	closed    chan struct{}       // closed by Close
	closeOnce sync.Once
}

// link is one connection to a kernel process: the sockets and the
// goroutines that read them. A restart replaces the link.
type link struct {
	ctx    context.Context
	cancel context.CancelFunc

	shell, control, stdin *sender
	iopub                 *zmtp.Dialer
	hb                    zmq4.Socket

	iopubSeen chan struct{} // closed at the first iopub message
	seenOnce  sync.Once

	wg sync.WaitGroup
}

// sender serialises sends to one socket without holding a mutex across
// I/O that a context cannot interrupt.
type sender struct {
	sock *zmtp.Dialer
	sem  chan struct{}
}

func (s *sender) send(ctx context.Context, frames [][]byte) error {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.sem }()
	return s.sock.Send(frames)
}

func newClient(conn *wire.ConnectionInfo, opts Options) (*Client, error) {
	opts = opts.withDefaults()
	signer, err := wire.NewSigner(conn.SignatureScheme, []byte(conn.Key), wire.Limits{})
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	session := wire.NewSessionID()
	user := os.Getenv("USER")
	if user == "" {
		user = "agentkernel"
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		log:       opts.Logger.Named("client").With("session", session),
		conn:      *conn,
		signer:    signer,
		session:   session,
		user:      user,
		opts:      opts,
		ctx:       ctx,
		cancel:    cancel,
		linkUp:    make(chan struct{}),
		pending:   make(map[string]*pending),
		abandoned: make(map[string]struct{}),
		dead:      make(chan struct{}),
		closed:    make(chan struct{}),
	}
	c.onDead = c.fail
	return c, nil
}

// Dial connects to a running kernel and waits until it is ready (it has
// answered kernel_info and iopub traffic has been seen), bounded by ctx and
// opts.StartTimeout. Options that concern launching are ignored.
func Dial(ctx context.Context, conn *wire.ConnectionInfo, opts Options) (*Client, error) {
	if err := conn.Validate(); err != nil {
		return nil, fmt.Errorf("client: dial: %w", err)
	}
	if chs := conn.Unassigned(); len(chs) > 0 {
		return nil, fmt.Errorf("client: dial: connection info has no port for %v", chs)
	}
	c, err := newClient(conn, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, c.opts.StartTimeout, errors.New("client: start timeout"))
	defer cancel()
	if err := c.connect(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Session returns the client's session id (also the ZeroMQ identity of its
// shell and stdin sockets).
func (c *Client) Session() string { return c.session }

// ConnectionInfo returns a copy of the connection info the client uses.
func (c *Client) ConnectionInfo() *wire.ConnectionInfo {
	ci := c.conn
	return &ci
}

// connect dials a new link and waits until the kernel is ready. ctx bounds
// dialing and readiness only; the sockets live until Close or unlink.
func (c *Client) connect(ctx context.Context) error {
	l, err := c.dialLink(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	switch {
	case c.isClosed():
		c.mu.Unlock()
		l.close()
		return fmt.Errorf("client: connect: %w", net.ErrClosed)
	case c.deadErr != nil:
		err := c.deadErr
		c.mu.Unlock()
		l.close()
		return err
	}
	c.link = l
	close(c.linkUp)
	c.mu.Unlock()
	c.startLink(l)
	if err := c.waitReady(ctx, l); err != nil {
		return fmt.Errorf("client: wait for kernel ready: %w", err)
	}
	return nil
}

// connected reports whether the client has a live link to a kernel that is
// not known dead.
func (c *Client) connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.link != nil && c.deadErr == nil && !c.isClosed()
}

func (c *Client) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

func (c *Client) dialLink(ctx context.Context) (*link, error) {
	lctx, cancel := context.WithCancel(c.ctx)
	newSender := func() *sender { return &sender{sem: make(chan struct{}, 1)} }
	l := &link{ctx: lctx, cancel: cancel, iopubSeen: make(chan struct{}),
		shell: newSender(), control: newSender(), stdin: newSender()}
	// Abort dialing (which retries while the kernel is starting) when
	// ctx ends.
	stop := context.AfterFunc(ctx, cancel)
	fail := func(name string, port int, err error) (*link, error) {
		stop()
		l.close()
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return nil, fmt.Errorf("client: dial %s %s: %w", name, c.conn.Addr(port), err)
	}
	// The kernel sends input_request to the identity of the shell request
	// that asked, so stdin uses the same identity as shell.
	id := []byte(c.session)
	for _, s := range []struct {
		name string
		port int
		typ  zmq4.SocketType
		id   []byte
		to   **zmtp.Dialer
	}{
		{"iopub", c.conn.IOPubPort, zmq4.Sub, nil, &l.iopub},
		{"shell", c.conn.ShellPort, zmq4.Dealer, id, &l.shell.sock},
		{"control", c.conn.ControlPort, zmq4.Dealer, nil, &l.control.sock},
		{"stdin", c.conn.StdinPort, zmq4.Dealer, id, &l.stdin.sock},
	} {
		d, err := zmtp.Dial(lctx, c.conn.Addr(s.port), s.typ, s.id, func(err error) {
			c.log.Debug("connection lost", "channel", s.name, "error", err)
		})
		if err != nil {
			return fail(s.name, s.port, err)
		}
		*s.to = d
	}
	zlog := c.log.Named("zmq4").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	l.hb = zmq4.NewReq(lctx, zmq4.WithDialerRetry(zmtp.RetryInterval), zmq4.WithDialerMaxRetries(-1), zmq4.WithLogger(zlog))
	if err := l.hb.Dial(zmtp.Endpoint(c.conn.Addr(c.conn.HBPort))); err != nil {
		return fail("hb", c.conn.HBPort, err)
	}
	if !stop() {
		l.close()
		return nil, fmt.Errorf("client: dial: %w", context.Cause(ctx))
	}
	return l, nil
}

// startLink starts reading l's sockets, and the heartbeat.
func (c *Client) startLink(l *link) {
	l.iopub.Serve(c.receiver(l, "iopub"))
	l.shell.sock.Serve(c.receiver(l, "shell"))
	l.control.sock.Serve(c.receiver(l, "control"))
	l.stdin.sock.Serve(c.receiver(l, "stdin"))
	if c.opts.HeartbeatInterval > 0 {
		l.wg.Add(1)
		go c.heartbeat(l)
	}
}

// close stops l's sockets and waits for its goroutines.
func (l *link) close() {
	l.cancel()
	for _, s := range []*sender{l.shell, l.control, l.stdin} {
		if s.sock != nil {
			s.sock.Close()
		}
	}
	if l.iopub != nil {
		l.iopub.Close()
	}
	if l.hb != nil {
		l.hb.Close()
	}
	l.wg.Wait()
}

// receiver returns the handler of one of l's sockets: it verifies each
// message and dispatches it, on the goroutine reading the socket.
func (c *Client) receiver(l *link, channel string) func([][]byte) {
	decode := c.signer.Decode
	if channel == "iopub" {
		decode = c.signer.DecodeLazy // checked in dispatch unless forwarded
	}
	return func(frames [][]byte) {
		m, err := decode(frames)
		if err != nil {
			c.log.Warn("dropping message", "channel", channel, "error", err)
			return
		}
		c.dispatch(l, channel, m)
	}
}

// dispatch hands m to the request it answers, or to OnIOPub.
func (c *Client) dispatch(l *link, channel string, m *wire.Message) {
	if channel == "iopub" {
		l.seenOnce.Do(func() { close(l.iopubSeen) })
	}
	parent, err := m.Parent()
	if err != nil {
		c.log.Warn("dropping message", "channel", channel, "msg_type", m.Header.MsgType, "error", err)
		return
	}
	if m.Lazy() {
		// A big message read lazily: checked now unless the request it
		// answers only sends its messages on (Request.Forward).
		c.mu.Lock()
		p := c.pending[parent.MsgID]
		forward := p != nil && p.forward
		c.mu.Unlock()
		if !forward {
			if err := m.Verify(); err != nil {
				c.log.Warn("dropping message", "channel", channel, "msg_type", m.Header.MsgType, "error", err)
				return
			}
		}
	}
	c.mu.Lock()
	p := c.pending[parent.MsgID]
	if p != nil {
		p.push(event{channel: channel, msg: m, parent: parent.MsgID})
		c.mu.Unlock()
		return
	}
	_, abandoned := c.abandoned[parent.MsgID]
	if abandoned && channel == "iopub" && isIdle(m) {
		delete(c.abandoned, parent.MsgID)
	}
	c.mu.Unlock()
	switch {
	case channel == "stdin" && m.Header.MsgType == wire.MsgInputRequest:
		// Nobody will answer: reply empty so the kernel does not block.
		c.log.Debug("answering orphan input_request with empty input", "parent", parent.MsgID)
		if err := c.sendInputReply(l.ctx, l, m, ""); err != nil {
			c.log.Warn("input_reply failed", "error", err)
		}
	case abandoned:
	case channel == "iopub":
		if c.opts.OnIOPub != nil {
			c.opts.OnIOPub(m)
		}
	default:
		c.log.Debug("dropping unexpected message", "channel", channel, "msg_type", m.Header.MsgType, "parent", parent.MsgID)
	}
}

// fail marks the kernel dead for good: pending and later requests return
// err, which must wrap ErrDead.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.deadErr != nil {
		c.mu.Unlock()
		return
	}
	c.deadErr = err
	close(c.dead)
	ps := c.takePendingLocked()
	c.mu.Unlock()
	c.log.Debug("kernel dead", "error", err)
	for _, p := range ps {
		p.fail(err)
	}
}

func (c *Client) takePendingLocked() map[string]*pending {
	ps := c.pending
	c.pending = make(map[string]*pending)
	clear(c.abandoned)
	return ps
}

// unlink closes the current link (the kernel process is going away):
// pending requests fail with err; later ones wait for the next connect.
func (c *Client) unlink(err error) {
	c.mu.Lock()
	l := c.link
	if l != nil {
		c.link = nil
		c.linkUp = make(chan struct{})
	}
	ps := c.takePendingLocked()
	c.mu.Unlock()
	for _, p := range ps {
		p.fail(err)
	}
	if l != nil {
		l.close()
	}
}

// Close closes the sockets and waits for the client's goroutines. Pending
// requests fail. It is safe to call from any goroutine; a second call
// returns net.ErrClosed.
func (c *Client) Close() error {
	err := fmt.Errorf("client: close: %w", net.ErrClosed)
	c.closeOnce.Do(func() {
		c.mu.Lock()
		close(c.closed)
		l := c.link
		c.link = nil
		ps := c.takePendingLocked()
		c.mu.Unlock()
		for _, p := range ps {
			p.fail(fmt.Errorf("client: request abandoned: %w", net.ErrClosed))
		}
		c.cancel()
		if l != nil {
			l.close()
		}
		err = nil
	})
	return err
}
