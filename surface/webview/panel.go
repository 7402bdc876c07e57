package webview

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Panel is the panel's protocol over an Agent, for any transport: the
// mirror of the session's state, its broadcast to every attached client,
// and the commands clients send. The WebSocket Server is one transport; a
// Jupyter comm (the JupyterLab sidebar, through the kernel) is another.
// Its methods are safe for concurrent use.
type Panel struct {
	agent Agent
	log   hclog.Logger
	hub   *hub
	opts  PanelOptions

	ctx    context.Context // the panel's lifetime
	cancel context.CancelFunc
	wg     sync.WaitGroup // the resync loop and the clients' writers
	unsub  func()
	nextID atomic.Uint64
	once   sync.Once
	// completing holds a token per completeMention being answered
	// (mentions.go).
	completing chan struct{}
}

// PanelOptions configure a Panel. The zero value works.
type PanelOptions struct {
	// SendBuffer is each client's queue, in frames; default 1024. A client
	// whose queue is full is dropped.
	SendBuffer int
	// MaxFrameBytes is the largest inbound frame answered normally; a
	// larger one gets a too_large error frame. Default 8 MiB.
	MaxFrameBytes int64
	// WriteTimeout bounds one message's write; default 10s.
	WriteTimeout time.Duration
	// Logger; default a null logger.
	Logger hclog.Logger
}

func (o PanelOptions) withDefaults() PanelOptions {
	if o.SendBuffer <= 0 {
		o.SendBuffer = 1024
	}
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = 8 << 20
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return o
}

// NewPanel mirrors a's state (read once now) and follows it until Close.
// It panics when a lacks one of its required parts.
func NewPanel(a Agent, opts PanelOptions) *Panel {
	if a.Mirror == nil || a.Driver == nil || a.Rewinder == nil || a.Modes == nil || a.Sessions == nil {
		panic("webview: an Agent needs its Mirror, Driver, Rewinder, Modes and Sessions")
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	p := &Panel{agent: a, log: opts.Logger, hub: newHub(a.Mirror, opts.Logger), opts: opts, ctx: ctx, cancel: cancel,
		completing: make(chan struct{}, maxCompleting)}
	p.unsub = a.Mirror.Subscribe(ctx, p.hub.publish)
	p.hub.resync(ctx)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.hub.run(ctx)
	}()
	return p
}

// Clients returns the number of attached clients.
func (p *Panel) Clients() int { return p.hub.count() }

// Close ends every client (each one's Transport.Close is called with the
// reason) and stops following the agent. A second call returns
// net.ErrClosed.
func (p *Panel) Close() error {
	err := errClosed
	p.once.Do(func() {
		p.unsub()
		p.hub.closeAll(reasonShutdown)
		p.cancel()
		p.wg.Wait()
		err = nil
	})
	return err
}

// Transport is how a client's frames leave: Write sends one message (a
// frame, or a JSON array of frames queued together) and Close ends the
// connection with a reason (the client was too slow, the panel is closing).
// Both are called from the client's writer goroutine only.
type Transport interface {
	Write(ctx context.Context, msg []byte) error
	Close(reason string, shutdown bool)
}

// Client is one attached client: its first frame is the state, then every
// change; Handle runs its commands.
type Client struct {
	p *Panel
	c *conn
}

// ErrPanelClosed is returned by Attach after Close.
var ErrPanelClosed = errors.New("webview: the panel is closed")

// Attach adds a client whose frames go out through t, from a goroutine
// of its own, until Detach, a failed write or the panel's Close.
func (p *Panel) Attach(t Transport) (*Client, error) {
	if p.ctx.Err() != nil {
		return nil, ErrPanelClosed
	}
	c := &conn{id: newConnID(p.nextID.Add(1)), send: make(chan []byte, p.opts.SendBuffer), done: make(chan struct{}),
		written: make(chan struct{})}
	p.hub.add(c)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(c.written)
		p.writeLoop(c, t)
	}()
	return &Client{p: p, c: c}, nil
}

// ID names the client in logs.
func (cl *Client) ID() string { return cl.c.id }

// Detach removes the client and waits for its writer to end (the
// transport is closed unless it failed already). The writer ends first,
// still a client of the hub: a write that failed is a drop (Dropped),
// whichever noticed first — the transport's reader often does, as a
// WebSocket whose write timed out is closed under both.
func (cl *Client) Detach() {
	cl.c.drop("closed")
	<-cl.c.written
	cl.p.hub.remove(cl.c)
}

// Handle runs one inbound frame of the client's: a command, answered with
// an ack, a reply frame or an error frame. A bad frame gets an error frame
// and changes nothing.
func (cl *Client) Handle(ctx context.Context, data []byte) {
	p := cl.p
	if int64(len(data)) > p.opts.MaxFrameBytes {
		p.hub.sendTo(cl.c, errorJSON(frameErr(CodeTooLarge, "", "frame larger than %d bytes", p.opts.MaxFrameBytes)))
		return
	}
	in, err := DecodeInbound(data)
	if err != nil {
		var fe *FrameError
		if !errors.As(err, &fe) {
			fe = frameErr(CodeBadFrame, "", "%v", err)
		}
		p.hub.sendTo(cl.c, errorJSON(fe))
		return
	}
	p.run(ctx, cl.c, in)
}

// Error sends the client an error frame of its own (a transport's
// complaint: a binary frame, say).
func (cl *Client) Error(code, format string, args ...any) {
	cl.p.hub.sendTo(cl.c, errorJSON(frameErr(code, "", format, args...)))
}

// writeLoop sends c's queued frames through t until c is dropped or the
// panel closes.
func (p *Panel) writeLoop(c *conn, t Transport) {
	var batch []byte // reused buffer of a batched message
	for {
		select {
		case frame := <-c.send:
			// Frames already queued behind this one go in the same
			// message, as a JSON array: one write instead of many when a
			// client is behind (a burst of streaming appends).
			msg := batchFrames(frame, c.send, &batch)
			wctx, cancel := context.WithTimeout(p.ctx, p.opts.WriteTimeout)
			err := t.Write(wctx, msg)
			cancel()
			if err != nil {
				reason := "write failed"
				if errors.Is(err, context.DeadlineExceeded) {
					reason = "stopped reading (a write timed out); reconnect to resync"
				}
				p.hub.mu.Lock()
				p.hub.dropLocked(c, reason)
				p.hub.mu.Unlock()
				return
			}
		case <-c.done:
			t.Close(c.reason, c.reason == reasonShutdown)
			return
		case <-p.ctx.Done():
			return
		}
	}
}
