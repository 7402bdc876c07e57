package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/internal/zmtp"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// Config configures a Server. Conn and Handler are required; the zero value
// of every other field works.
type Config struct {
	// Conn is the connection file's content. A port of 0 is picked by the
	// server (a free TCP port, or the first free ipc name, as ipykernel
	// does): ConnectionInfo has it once Listening is closed.
	Conn    *wire.ConnectionInfo
	Handler Handler
	// Listeners, by channel, are sockets already bound to Conn's ports by
	// whoever picked them (a launcher that reports the ports before the
	// kernel serves them): the server serves these instead of binding, so
	// nothing can take a port in between. Serve closes them.
	Listeners map[wire.Channel]net.Listener
	// Logger receives the server's logs; default: hclog.NewNullLogger().
	Logger hclog.Logger
	// Limits bound incoming messages; zero means wire's defaults.
	Limits wire.Limits
	// QueueSize is how many shell requests may wait behind the running
	// one before the shell reader stops reading. Default 1024.
	QueueSize int
	// ShutdownTimeout bounds Handler.Shutdown. Default 10s.
	ShutdownTimeout time.Duration
	// Linger is how long, after a shutdown_request was answered, the
	// sockets stay open before they close, so that peers read the last
	// messages (the reply's broadcast, the last idle) first: closing a
	// connection that has unread input resets it, and a reset can discard
	// what the peer has not read yet. Default 200ms.
	Linger time.Duration
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.QueueSize <= 0 {
		c.QueueSize = 1024
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 10 * time.Second
	}
	if c.Linger <= 0 {
		c.Linger = 200 * time.Millisecond
	}
	return c
}

// Server is a Jupyter kernel server. Create it with New and run it with
// Serve. Interrupt may be called from any goroutine.
type Server struct {
	cfg    Config
	log    hclog.Logger
	signer *wire.Signer
	// inflight counts the requests between their busy and idle.
	inflight atomic.Int32
	session  string

	conn                      wire.ConnectionInfo // Conn with the ports bound; set before listening closes
	shell, control, stdin, hb *zmtp.Router
	iopub                     *zmtp.Pub
	controlMu                 sync.Mutex                    // control requests run one at a time
	subMu                     sync.Mutex                    // guards subshells
	subshells                 map[string]chan *wire.Message // the subshells' queues, by subshell_id

	queue     chan *wire.Message
	shutdown  chan struct{} // a shutdown_request was answered; buffered 1
	stdinIn   chan *wire.Message
	listening chan struct{} // closed once every socket is bound

	serveOnce sync.Once
}

// ErrClosed is returned by Serve when called twice.
var ErrClosed = errors.New("kernel: server already served")

// New checks cfg and returns a Server. It binds nothing yet.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if cfg.Conn == nil {
		return nil, errors.New("kernel: config has no connection info")
	}
	if cfg.Handler == nil {
		return nil, errors.New("kernel: config has no handler")
	}
	if err := cfg.Conn.Validate(); err != nil {
		return nil, fmt.Errorf("kernel: %w", err)
	}
	signer, err := wire.NewSigner(cfg.Conn.SignatureScheme, []byte(cfg.Conn.Key), cfg.Limits)
	if err != nil {
		return nil, fmt.Errorf("kernel: %w", err)
	}
	if !signer.Enabled() {
		cfg.Logger.Warn("connection file has no key: messages are not authenticated")
	}
	session := wire.NewSessionID()
	return &Server{
		cfg:       cfg,
		log:       cfg.Logger.Named("kernel").With("session", session[:8]),
		signer:    signer,
		session:   session,
		queue:     make(chan *wire.Message, cfg.QueueSize),
		shutdown:  make(chan struct{}, 1),
		stdinIn:   make(chan *wire.Message, 16),
		listening: make(chan struct{}),
	}, nil
}

// Listening is closed once Serve has bound every socket: from then on
// clients can connect. It stays open when binding fails (Serve returns the
// error).
func (s *Server) Listening() <-chan struct{} { return s.listening }

// ConnectionInfo returns the connection info the server listens on: Conn
// with the ports it picked. Call it after Listening is closed (before, it
// returns nil).
func (s *Server) ConnectionInfo() *wire.ConnectionInfo {
	select {
	case <-s.listening:
		c := s.conn
		return &c
	default:
		return nil
	}
}

// Session returns the kernel's session id, new for every Server.
func (s *Server) Session() string { return s.session }

// Serve binds the sockets and serves until ctx is done or a
// shutdown_request has been answered. It returns nil after a shutdown
// request, ctx.Err() when ctx ends, or the error that stopped it. Serve may
// be called once.
func (s *Server) Serve(ctx context.Context) error {
	err := ErrClosed
	s.serveOnce.Do(func() { err = s.serve(ctx) })
	return err
}

func (s *Server) serve(parent context.Context) error {
	// The sockets live as long as the server: their context is this one,
	// cancelled only when Serve returns.
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	if err := s.bind(ctx); err != nil {
		s.closeSockets()
		return err
	}
	s.log.Info("listening", "transport", s.conn.Transport, "ip", s.conn.IP, "shell", s.conn.ShellPort, "iopub", s.conn.IOPubPort)
	close(s.listening)

	var wg sync.WaitGroup
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	run(s.runShell)

	var result error
	select {
	case <-parent.Done():
		result = parent.Err()
	case <-s.shutdown:
		// Let the peers read the last messages before the connections go.
		select {
		case <-time.After(s.cfg.Linger):
		case <-parent.Done():
		}
	}
	cancel()
	s.closeSockets() // unblocks every Recv
	wg.Wait()
	return result
}

// bind binds the five sockets (or takes the listeners given) and starts
// serving them. On error the caller closes what was bound.
func (s *Server) bind(ctx context.Context) error {
	given := maps.Clone(s.cfg.Listeners)
	defer func() { // those not taken over (binding stopped early)
		for _, ln := range given {
			ln.Close()
		}
	}()
	s.conn = *s.cfg.Conn
	onError := func(ch wire.Channel) func(error) {
		return func(err error) {
			if errors.Is(err, zmtp.ErrSlowSubscriber) {
				s.log.Warn("slow subscriber dropped", "channel", ch, "error", err)
				return
			}
			s.log.Debug("peer dropped", "channel", ch, "error", err)
		}
	}
	for _, ch := range wire.Channels() {
		ln := given[ch]
		delete(given, ch)
		if ln == nil {
			var err error
			if ln, err = listenPort(&s.conn, ch); err != nil {
				return fmt.Errorf("kernel: bind %s on %s: %w", ch, s.conn.Addr(s.conn.Port(ch)), err)
			}
		}
		switch ch {
		case wire.IOPub:
			s.iopub = zmtp.NewPub(ln, onError(ch))
		case wire.Shell:
			s.shell = zmtp.NewRouter(ln, onError(ch))
		case wire.Control:
			s.control = zmtp.NewRouter(ln, onError(ch))
		case wire.Stdin:
			s.stdin = zmtp.NewRouter(ln, onError(ch))
		case wire.Heartbeat:
			s.hb = zmtp.NewRouter(ln, onError(ch))
		}
	}
	s.iopub.OnJoin(s.welcome)
	// Every socket is set: the handlers may use any of them.
	s.shell.Serve(s.receiver("shell", s.onShell(ctx)))
	s.control.Serve(s.receiver("control", s.onControl(ctx)))
	s.stdin.Serve(s.receiver("stdin", s.onStdin))
	s.hb.Serve(s.echo)
	return nil
}

// maxIPCName bounds the search for a free ipc name for a port of 0.
const maxIPCName = 1000

// listenPort binds ch's port of c; a port of 0 is picked (and set in c): a
// free TCP port, or the first ipc name IP-N that is free, as ipykernel
// picks them.
func listenPort(c *wire.ConnectionInfo, ch wire.Channel) (net.Listener, error) {
	port := c.Port(ch)
	if port != 0 || c.Transport != "ipc" {
		ln, err := zmtp.Listen(c.Addr(port))
		if errors.Is(err, syscall.EADDRINUSE) && c.Transport == "ipc" && removeStaleSocket(c.IPCPath(port)) {
			ln, err = zmtp.Listen(c.Addr(port))
		}
		if err != nil {
			return nil, err
		}
		if a, ok := ln.Addr().(*net.TCPAddr); ok && port == 0 {
			c.SetPort(ch, a.Port)
		}
		return ln, nil
	}
	for n := 1; n <= maxIPCName; n++ {
		ln, err := zmtp.Listen(c.Addr(n))
		if err == nil {
			c.SetPort(ch, n)
			return ln, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("no free name among %s-1 … %s-%d", c.IP, c.IP, maxIPCName)
}

// removeStaleSocket removes the Unix socket file at path when nothing
// accepts there: a kernel killed before it could close its sockets left it
// (Jupyter restarts a kernel on the same connection file). libzmq removes
// such files before it binds; a socket that is in use is left alone.
func removeStaleSocket(path string) bool {
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != fs.ModeSocket {
		return false
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	return os.Remove(path) == nil
}

func (s *Server) closeSockets() {
	for _, r := range []*zmtp.Router{s.shell, s.control, s.stdin, s.hb} {
		if r != nil {
			r.Close()
		}
	}
	if s.iopub != nil {
		s.iopub.Close()
	}
}

// socket is where the server sends: a ROUTER (to the identity in the
// first frame) or the PUB. Sends are safe from any goroutine.
type socket interface {
	Send(frames [][]byte) error
}

// receiver returns the handler of one ROUTER: it verifies each message and
// calls f with the valid ones, on the goroutine reading the peer. Bad
// messages are logged and dropped.
func (s *Server) receiver(name string, f func(*wire.Message)) func([][]byte) {
	return func(frames [][]byte) {
		m, err := s.signer.Decode(frames)
		if err != nil {
			s.log.Warn("dropped message", "channel", name, "error", err)
			return
		}
		f(m)
	}
}

// send signs m and sends it on sock.
func (s *Server) send(sock socket, m *wire.Message) error {
	frames, err := s.signer.Encode(m)
	if err != nil {
		return err
	}
	if err := sock.Send(frames); err != nil {
		return fmt.Errorf("kernel: send %s: %w", m.Header.MsgType, err)
	}
	return nil
}

// publish sends a message on iopub with the given parent header.
func (s *Server) publish(parent *wire.Message, msgType string, content, metadata json.RawMessage, buffers [][]byte) error {
	m := &wire.Message{
		Identities: [][]byte{s.topic(msgType)},
		Header:     wire.NewHeader(s.session, username(parent), msgType),
		Metadata:   metadata,
		Content:    content,
		Buffers:    buffers,
	}
	if parent != nil {
		m.ParentHeader = parent.RawHeader()
	}
	return s.send(s.iopub, m)
}

// forward sends m on iopub as it was signed when it was read with our
// key, else checked and published anew under parent (Request.Forward).
func (s *Server) forward(parent, m *wire.Message) error {
	if signed := s.signer.Signed(m); signed != nil {
		frames := make([][]byte, 0, 2+len(signed))
		frames = append(frames, s.topic(m.Header.MsgType), delimiterFrame)
		frames = append(frames, signed...)
		if err := s.iopub.Send(frames); err != nil {
			return fmt.Errorf("kernel: send %s: %w", m.Header.MsgType, err)
		}
		return nil
	}
	if err := m.Verify(); err != nil {
		return fmt.Errorf("kernel: forward %s: %w", m.Header.MsgType, err)
	}
	return s.publish(parent, m.Header.MsgType, m.Content, m.Metadata, m.Buffers)
}

var delimiterFrame = []byte(wire.Delimiter)

// topic is the iopub topic of a message of type msgType:
// "kernel.<session>.<msg_type>", the form ipykernel's topics take.
func (s *Server) topic(msgType string) []byte {
	return []byte("kernel." + s.session + "." + msgType)
}

// welcome greets each new iopub subscriber with iopub_welcome naming its
// subscription (protocol 5.5: the client then knows it will see what is
// published from now on; clients that do not know the message ignore it).
// Then, when the kernel is idle, it tells the subscriber so: a subscriber misses what was published before it joined,
// and one that saw a busy but missed its idle (Jupyter Server's activity
// monitor) would take the kernel for busy, and Notebook then skips the
// "nudge" that makes sure a new client's iopub is connected. The status has
// no parent, as ipykernel's "starting" has none.
func (s *Server) welcome(topic []byte, send func([][]byte)) {
	hello := &wire.Message{
		Identities: [][]byte{s.topic(wire.MsgIOPubWelcome)},
		Header:     wire.NewHeader(s.session, username(nil), wire.MsgIOPubWelcome),
	}
	var err error
	if hello.Content, err = json.Marshal(map[string]string{"subscription": string(topic)}); err != nil {
		return
	}
	if frames, err := s.signer.Encode(hello); err == nil {
		send(frames)
	} else {
		s.log.Debug("iopub_welcome", "error", err)
	}
	if s.inflight.Load() != 0 {
		return
	}
	m := &wire.Message{
		Identities: [][]byte{s.topic(wire.MsgStatus)},
		Header:     wire.NewHeader(s.session, username(nil), wire.MsgStatus),
		Content:    statusIdle,
	}
	frames, err := s.signer.Encode(m)
	if err != nil {
		s.log.Debug("welcome", "error", err)
		return
	}
	send(frames)
}

func username(parent *wire.Message) string {
	if parent != nil && parent.Header.Username != "" {
		return parent.Header.Username
	}
	return "kernel"
}

var (
	statusBusy = json.RawMessage(`{"execution_state":"busy"}`)
	statusIdle = json.RawMessage(`{"execution_state":"idle"}`)
)

func (s *Server) status(parent *wire.Message, state json.RawMessage) {
	if err := s.publish(parent, wire.MsgStatus, state, nil, nil); err != nil {
		s.log.Debug("publish status failed", "error", err)
	}
}
