// Package zmtp holds agentkernel's ZeroMQ sockets and the transport (TCP
// and Unix sockets) under them.
//
// The sockets (NewRouter and NewPub over a Listen, Dial) use go-zeromq/zmq4's Conn for
// ZMTP itself — greeting, NULL handshake, framing — and route messages
// themselves: a connection's reading goroutine calls the handler directly
// and sends write on the caller's goroutine, with none of the goroutine
// hand-offs zmq4's own sockets make per message.
//
// Their connections, and zmq4 sockets dialled or bound through [Endpoint],
// go through a transport that does what plain tcp and ipc cannot:
//
//   - Bound what a peer may announce. zmq4 allocates whatever length a frame
//     header claims (up to 2^63 bytes), so one hostile header crashes or
//     exhausts the process before any message check runs. The connection
//     parses the ZMTP 3 framing of everything it reads and fails the read —
//     dropping that peer only — when a frame or a multipart message
//     announces more than the limit.
//   - Save system calls. zmq4 reads every 2-byte frame header with its own
//     read and, through a wrapped connection, writes every header and body
//     with its own write. Reads are buffered here, and writes are gathered
//     until the last frame of a message is complete, then sent at once: one
//     write (one TCP segment for small messages) per message. Our sockets
//     frame their messages themselves (conn.writeMsgs): a PUB subscriber's
//     writer sends every message queued when it wakes (a burst: status,
//     outputs, status) in one write, and big frames go out by writev from
//     where they are, not copied. The reads and
//     writes are raw system calls on Linux (see rawIO), except in race
//     builds; `make test` runs the socket tests without -race for them.
//
// The framing: a 64-byte greeting, then frames of one flags byte (bit 0
// more, bit 1 long size, bit 2 command), a 1- or 8-byte big-endian size and
// the body.
package zmtp

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// The endpoint schemes of this transport: tcp and ipc (Unix sockets).
const (
	Scheme    = "agentkernel-tcp"
	IPCScheme = "agentkernel-ipc"
)

// MaxMessage caps one ZMTP message (all its frames), as read.
const MaxMessage = 256 << 20

// ErrTooLarge is the read error of a connection whose peer announced a
// frame or message larger than MaxMessage.
var ErrTooLarge = fmt.Errorf("zmtp: peer announced a message over %d bytes", MaxMessage)

var register sync.Once

// Endpoint returns ep with its tcp:// or ipc:// scheme replaced by this
// transport's (other schemes are returned unchanged), registering the
// transport with zmq4 on first use.
func Endpoint(ep string) string {
	register.Do(func() {
		for scheme, network := range map[string]string{Scheme: "tcp", IPCScheme: "unix"} {
			if err := zmq4.RegisterTransport(scheme, netTransport{network}); err != nil {
				panic(err) // only if someone else registered the name
			}
		}
	})
	if rest, ok := strings.CutPrefix(ep, "tcp://"); ok {
		return Scheme + "://" + rest
	}
	if rest, ok := strings.CutPrefix(ep, "ipc://"); ok {
		return IPCScheme + "://" + rest
	}
	return ep
}

// netTransport is zmq4's transport over network ("tcp" or "unix") with our
// connections.
type netTransport struct{ network string }

func (t netTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, t.network, addr)
	if err != nil {
		return nil, err
	}
	return newConn(c), nil
}

func (t netTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	l, err := net.Listen(t.network, addr)
	if err != nil {
		return nil, err
	}
	return listener{l}, nil
}

func (t netTransport) Addr(ep string) (string, error) { return transport.New(t.network).Addr(ep) }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newConn(c), nil
}

// conn is a net.Conn with a bounded, buffered reader and a message-batching
// writer.
type conn struct {
	net.Conn

	rmu sync.Mutex
	br  *bufio.Reader
	rs  scanner

	wmu  sync.Mutex
	ws   scanner
	wbuf []byte
	w    io.Writer // raw writes to the socket; nil: the Conn itself
	raw  *rawIO    // the same, for writev; nil: net.Buffers on the Conn
}

func newConn(c net.Conn) *conn {
	cn := &conn{Conn: c}
	var r io.Reader = c
	// The race detector counts I/O through the runtime's poller as
	// synchronisation (data written on one goroutine and read on another
	// happened in that order); raw system calls bypass that bookkeeping, so
	// race builds use the connection's own Read and Write.
	if raw := newRawIO(c); raw != nil && !raceEnabled {
		r, cn.w, cn.raw = raw, raw, raw
	}
	cn.br = bufio.NewReaderSize(r, 64<<10)
	return cn
}

func (c *conn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	n, err := c.br.Read(p)
	for b := p[:n]; len(b) > 0; {
		k, serr := c.rs.scan(b)
		if serr != nil && !errors.Is(serr, errBoundary) {
			c.Conn.Close()
			return 0, serr
		}
		b = b[k:]
	}
	return n, err
}

// Write gathers bytes until a message (or the greeting, or a command) is
// complete, then writes them at once.
func (c *conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	rest := p
	for len(rest) > 0 {
		n, err := c.ws.scan(rest)
		if err != nil && !errors.Is(err, errBoundary) {
			return len(p) - len(rest), err
		}
		c.wbuf = append(c.wbuf, rest[:n]...)
		rest = rest[n:]
		if errors.Is(err, errBoundary) {
			if err := c.flush(); err != nil {
				return len(p) - len(rest), err
			}
		}
	}
	return len(p), nil
}

func (c *conn) flush() error {
	_, err := c.writer().Write(c.wbuf)
	if cap(c.wbuf) > 1<<20 {
		c.wbuf = nil // do not keep a huge buffer after a big message
	} else {
		c.wbuf = c.wbuf[:0]
	}
	return err
}

// A message's frames of up to inlineFrame bytes are copied into one
// buffer with their headers; bigger ones are written from where they are
// (writev), not copied.
const inlineFrame = 16 << 10

// writeMsgs writes ZMTP messages (their frames) with one system call
// where the socket takes it all: a burst of messages queued for one peer
// goes out together, and a big frame is not copied. Bytes that an
// earlier Write left unflushed (a unit not yet complete) go first.
func (c *conn) writeMsgs(msgs [][][]byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var bufs net.Buffers
	small := c.wbuf // headers and small frames, appended after the pending bytes
	start := 0      // where the part of small not yet in bufs begins
	for _, frames := range msgs {
		for i, f := range frames {
			flag := byte(0)
			if i < len(frames)-1 {
				flag |= 0x01 // more
			}
			var hdr [9]byte
			h := hdr[:2]
			if len(f) > 255 {
				flag |= 0x02 // long
				h = hdr[:9]
				binary.BigEndian.PutUint64(hdr[1:], uint64(len(f)))
			} else {
				hdr[1] = byte(len(f))
			}
			hdr[0] = flag
			// The scanner follows what is written, as for Write: a unit
			// that an earlier Write left open stays consistent.
			if _, err := c.ws.scan(h); err != nil && !errors.Is(err, errBoundary) {
				return err
			}
			if len(f) > 0 {
				if _, err := c.ws.scan(f); err != nil && !errors.Is(err, errBoundary) {
					return err
				}
			}
			small = append(small, h...)
			if len(f) <= inlineFrame {
				small = append(small, f...)
				continue
			}
			bufs = append(bufs, small[start:], f)
			start = len(small)
		}
	}
	if start < len(small) {
		bufs = append(bufs, small[start:])
	}
	var err error
	switch {
	case len(bufs) == 1:
		_, err = c.writer().Write(bufs[0])
	case c.raw != nil:
		err = c.raw.writev(bufs)
	default:
		_, err = bufs.WriteTo(c.Conn)
	}
	if cap(small) > 1<<20 {
		c.wbuf = nil
	} else {
		c.wbuf = small[:0]
	}
	return err
}

func (c *conn) writer() io.Writer {
	if c.w == nil {
		return c.Conn
	}
	return c.w
}

// errBoundary tells the writer that the scanned bytes end a unit.
var errBoundary = errors.New("zmtp: boundary")

// scanner follows ZMTP framing over a byte stream.
type scanner struct {
	started  bool
	greeting int
	hdr      [9]byte
	hdrLen   int
	body     uint64
	last     bool // the frame whose body is passing is a unit's last
	msgSize  uint64
}

// scan consumes a prefix of b. It returns how many bytes it consumed and
// errBoundary when they end the greeting, a command, or a message's last
// frame; ErrTooLarge when a header announces too much.
func (s *scanner) scan(b []byte) (int, error) {
	if !s.started {
		s.started, s.greeting = true, 64
	}
	i := 0
	for i < len(b) {
		switch {
		case s.greeting > 0:
			k := min(s.greeting, len(b)-i)
			s.greeting -= k
			i += k
			if s.greeting == 0 {
				return i, errBoundary
			}
		case s.body > 0:
			k := min(s.body, uint64(len(b)-i))
			s.body -= k
			i += int(k)
			if s.body == 0 && s.last {
				return i, errBoundary
			}
		default:
			s.hdr[s.hdrLen] = b[i]
			s.hdrLen++
			i++
			flags := s.hdr[0]
			need := 2
			if flags&0x02 != 0 {
				need = 9
			}
			if s.hdrLen < need {
				continue
			}
			size := uint64(s.hdr[1])
			if need == 9 {
				size = 0
				for _, x := range s.hdr[1:9] {
					size = size<<8 | uint64(x)
				}
			}
			s.hdrLen = 0
			s.msgSize += size
			if size > MaxMessage || s.msgSize > MaxMessage {
				return i, ErrTooLarge
			}
			command, more := flags&0x04 != 0, flags&0x01 != 0
			s.last = command || !more
			if s.last {
				s.msgSize = 0
			}
			s.body = size
			if size == 0 && s.last {
				return i, errBoundary
			}
		}
	}
	return i, nil
}
