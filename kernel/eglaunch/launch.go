package eglaunch

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// Config configures a launch. The zero value works.
type Config struct {
	// IP is the address the kernel's ports and the communication port bind
	// to. Default "0.0.0.0", as EG's launchers: EG connects to the address
	// of the host or pod it placed the kernel on.
	IP string
	// MinPortRangeSize is the narrowest port range accepted (other than
	// 0..0). Default 1000, EG's default; EG passes its own setting to
	// kernels as EG_MIN_PORT_RANGE_SIZE (see MinPortRangeSizeFromEnv).
	MinPortRangeSize int
	// Timeout bounds connecting and writing to the response address, and
	// reading one request on the communication port. Default 10s.
	Timeout time.Duration
	// Logger receives the launch's logs; default: hclog.NewNullLogger().
	Logger hclog.Logger
}

func (c Config) withDefaults() Config {
	if c.IP == "" {
		c.IP = "0.0.0.0"
	}
	if c.MinPortRangeSize <= 0 {
		c.MinPortRangeSize = 1000
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// Handler is what the kernel does with EG's requests on the communication
// port. Its functions are called one at a time, on the goroutine serving
// the port, and should not block for long.
type Handler struct {
	// Signal is called for {"signum": n} with n > 0. Default: the signal is
	// sent to this process with kill(2), as EG's launchers do. {"signum": 0}
	// is EG's liveness poll: the connection it made is the answer, and
	// nothing is called.
	Signal func(syscall.Signal)
	// Shutdown is called for {"shutdown": 1}: EG is done with the kernel.
	// Default: nothing.
	Shutdown func()
}

// maxRequest bounds one request on the communication port; EG's are a few
// dozen bytes.
const maxRequest = 64 << 10

// Launch is a kernel launched by EG: its connection info, the public key
// to send it with, and the communication port. Create it with Prepare. Its
// methods are safe from any goroutine; Close stops the communication port
// and waits for its goroutine.
type Launch struct {
	cfg  Config
	log  hclog.Logger
	opts Options
	pub  *rsa.PublicKey
	conn *wire.ConnectionInfo
	comm *net.TCPListener

	mu      sync.Mutex
	ports   map[wire.Channel]net.Listener // the kernel's, until taken
	current net.Conn                      // the request being read, closed by Close
	closed  bool
	wg      sync.WaitGroup
	once    sync.Once
}

// Prepare checks opts — a kernel id, a response address HOST:PORT, an RSA
// public key, a port range — and binds the kernel's five ports and its
// communication port in the port range, and picks a random signing key and
// the tcp transport. The communication port is served by Listen; the five
// kernel ports are bound and held for the kernel server (TakeListeners), so
// that nothing takes one before it serves them. Nothing is sent yet.
func Prepare(opts Options, cfg Config) (*Launch, error) {
	cfg = cfg.withDefaults()
	if opts.KernelID == "" {
		return nil, errors.New("eglaunch: no kernel id (--kernel-id or KERNEL_ID)")
	}
	if err := checkResponseAddress(opts.ResponseAddress); err != nil {
		return nil, err
	}
	pub, err := parsePublicKey(opts.PublicKey)
	if err != nil {
		return nil, err
	}
	pr, err := parsePortRange(opts.PortRange, cfg.MinPortRangeSize)
	if err != nil {
		return nil, err
	}
	ls, err := listenPorts(cfg.IP, pr, 6)
	if err != nil {
		return nil, err
	}
	conn := &wire.ConnectionInfo{
		Transport:       "tcp",
		IP:              cfg.IP,
		SignatureScheme: wire.SignatureScheme,
		Key:             wire.NewKey(),
	}
	ports := make(map[wire.Channel]net.Listener, 5)
	for i, ch := range wire.Channels() {
		ports[ch] = ls[i]
		conn.SetPort(ch, ls[i].Addr().(*net.TCPAddr).Port)
	}
	return &Launch{
		cfg:   cfg,
		log:   cfg.Logger.Named("eg").With("kernel_id", opts.KernelID),
		opts:  opts,
		pub:   pub,
		conn:  conn,
		comm:  ls[5],
		ports: ports,
	}, nil
}

// listenPorts binds n ports on ip: any free ports, or free ports of r
// tried from a random one on, as EG's launchers pick random ports in the
// range (they give up after a few tries; this tries every port of the
// range before it says there is no free one).
func listenPorts(ip string, r portRange, n int) ([]*net.TCPListener, error) {
	var ls []*net.TCPListener
	fail := func(err error) ([]*net.TCPListener, error) {
		for _, l := range ls {
			l.Close()
		}
		return nil, err
	}
	listen := func(port int) (*net.TCPListener, error) {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			return nil, err
		}
		return l.(*net.TCPListener), nil
	}
	if r.any() {
		for range n {
			l, err := listen(0)
			if err != nil {
				return fail(fmt.Errorf("eglaunch: find a free port on %s: %w", ip, err))
			}
			ls = append(ls, l)
		}
		return ls, nil
	}
	size := r.upper - r.lower + 1
	start := rand.IntN(size)
	for i := 0; i < size && len(ls) < n; i++ {
		if l, err := listen(r.lower + (start+i)%size); err == nil {
			ls = append(ls, l)
		}
	}
	if len(ls) < n {
		return fail(fmt.Errorf("eglaunch: port range %s on %s: %d free ports, the kernel needs %d "+
			"(five for the kernel, one to talk to Enterprise Gateway)", r, ip, len(ls), n))
	}
	return ls, nil
}

// ConnectionInfo returns the connection info the kernel is to serve.
func (l *Launch) ConnectionInfo() *wire.ConnectionInfo { return l.conn }

// TakeListeners hands the kernel's five bound ports, by channel, over to
// the caller (the kernel server, which serves and closes them). The first
// call gets them; later calls, and calls after Close, get nil. Close
// closes them if nobody took them.
func (l *Launch) TakeListeners() map[wire.Channel]net.Listener {
	l.mu.Lock()
	defer l.mu.Unlock()
	ports := l.ports
	l.ports = nil
	return ports
}

// CommPort returns the communication port.
func (l *Launch) CommPort() int { return l.comm.Addr().(*net.TCPAddr).Port }

// reply is the connection info as EG's launchers send it: a Jupyter
// connection file plus the process ids, the communication port and the
// kernel id.
type reply struct {
	*wire.ConnectionInfo
	PID      int    `json:"pid"`
	PGID     int    `json:"pgid"`
	CommPort int    `json:"comm_port"`
	KernelID string `json:"kernel_id"`
}

// Reply sends the encrypted connection info to the response address; call
// it once the kernel serves its ports. The error names the address.
func (l *Launch) Reply(ctx context.Context) error {
	pid := os.Getpid()
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		pgid = pid
	}
	info, err := json.Marshal(reply{ConnectionInfo: l.conn, PID: pid, PGID: pgid,
		CommPort: l.CommPort(), KernelID: l.opts.KernelID})
	if err != nil {
		return fmt.Errorf("eglaunch: encode connection info: %w", err)
	}
	sealed, err := seal(info, l.pub)
	if err != nil {
		return err
	}
	addr := l.opts.ResponseAddress
	d := net.Dialer{Timeout: l.cfg.Timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("eglaunch: send the connection info to the response address %s: %w", addr, err)
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(l.cfg.Timeout))
	if _, err := c.Write(sealed); err != nil {
		return fmt.Errorf("eglaunch: send the connection info to the response address %s: %w", addr, err)
	}
	// EG reads until the end of the stream.
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return fmt.Errorf("eglaunch: send the connection info to the response address %s: %w", addr, err)
	}
	l.log.Info("connection info sent", "response_address", addr, "comm_port", l.CommPort(),
		"shell", l.conn.ShellPort, "iopub", l.conn.IOPubPort)
	return nil
}

// Listen serves the communication port on its own goroutine until Close:
// one request per connection, read to its end (bounded in size and time),
// handled before the next connection is taken. A request that is not
// EG's JSON is logged and dropped.
func (l *Launch) Listen(h Handler) {
	if h.Signal == nil {
		h.Signal = func(sig syscall.Signal) {
			if err := syscall.Kill(os.Getpid(), sig); err != nil {
				l.log.Warn("deliver signal", "signal", sig, "error", err)
			}
		}
	}
	if h.Shutdown == nil {
		h.Shutdown = func() {}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.serve(h)
	}()
}

func (l *Launch) serve(h Handler) {
	for {
		c, err := l.comm.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				l.log.Error("communication port stopped", "error", err)
			}
			return
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			c.Close()
			return
		}
		l.current = c
		l.mu.Unlock()
		b, err := readRequest(c, l.cfg.Timeout)
		c.Close()
		l.mu.Lock()
		l.current = nil
		l.mu.Unlock()
		if err != nil {
			l.log.Warn("dropped a request on the communication port", "from", c.RemoteAddr(), "error", err)
			continue
		}
		l.handle(b, h)
	}
}

// readRequest reads one request: everything the peer sends before it
// closes, within timeout and maxRequest.
func readRequest(c net.Conn, timeout time.Duration) ([]byte, error) {
	c.SetReadDeadline(time.Now().Add(timeout))
	b, err := io.ReadAll(io.LimitReader(c, maxRequest+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRequest {
		return nil, fmt.Errorf("request over %d bytes", maxRequest)
	}
	return b, nil
}

// request is one of EG's requests. Both fields may be in one request;
// the signal goes first, as in EG's launchers.
type request struct {
	Signum   json.RawMessage `json:"signum"`
	Shutdown json.RawMessage `json:"shutdown"`
}

func (l *Launch) handle(b []byte, h Handler) {
	var r request
	if err := json.Unmarshal(b, &r); err != nil {
		l.log.Warn("dropped a request on the communication port: not JSON", "error", err, "bytes", len(b))
		return
	}
	if present(r.Signum) {
		sig, err := signum(r.Signum)
		switch {
		case err != nil:
			l.log.Warn("dropped a signal request", "signum", string(r.Signum), "error", err)
		case sig == 0:
			l.log.Trace("liveness poll")
		default:
			l.log.Info("signal requested", "signal", sig)
			h.Signal(sig)
		}
	}
	if truthy(r.Shutdown) {
		l.log.Info("shutdown requested")
		h.Shutdown()
	}
}

func present(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

// signum reads a signal number as EG's launchers do (int(value)): a number
// or a string of digits, from 0 up to the largest Linux signal.
func signum(v json.RawMessage) (syscall.Signal, error) {
	var s string
	if json.Unmarshal(v, &s) != nil {
		s = string(v)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 64 {
		return 0, fmt.Errorf("not a signal number")
	}
	return syscall.Signal(n), nil
}

// truthy is Python's bool() of a JSON value, as EG's launchers read
// "shutdown".
func truthy(v json.RawMessage) bool {
	var x any
	if !present(v) || json.Unmarshal(v, &x) != nil {
		return false
	}
	switch x := x.(type) {
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return false
}

// Close stops the communication port (EG then finds it refused, which it
// reads as "the kernel is gone") and waits for Listen's goroutine. A second
// call returns net.ErrClosed.
func (l *Launch) Close() error {
	err := net.ErrClosed
	l.once.Do(func() {
		err = nil
		l.mu.Lock()
		l.closed = true
		if l.current != nil {
			l.current.Close()
		}
		for _, ln := range l.ports {
			ln.Close()
		}
		l.ports = nil
		l.mu.Unlock()
		l.comm.Close()
	})
	l.wg.Wait()
	return err
}
