package kernel

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// zmq4 reads a frame by allocating the length the peer announces (up to
// 2^63), so one hostile frame header crashes or exhausts the process before
// any of our checks run. The kernel therefore listens through this
// transport: plain TCP whose accepted connections parse the ZMTP 3 stream
// as it is read and fail the read — dropping that peer only — when a frame
// or a multipart message announces more than the limit.

const guardedScheme = "agentkernel-tcp"

// maxWireMessage caps one ZMTP message (all frames): the wire decoder's
// default byte limit.
const maxWireMessage = 256 << 20

var registerGuard sync.Once

func init() {
	registerGuard.Do(func() {
		if err := zmq4.RegisterTransport(guardedScheme, guardTransport{limit: maxWireMessage}); err != nil {
			panic(err) // only if the name were taken twice
		}
	})
}

type guardTransport struct{ limit uint64 }

func (g guardTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &guardConn{Conn: c, limit: g.limit}, nil
}

func (g guardTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return guardListener{Listener: l, limit: g.limit}, nil
}

func (g guardTransport) Addr(ep string) (string, error) { return transport.New("tcp").Addr(ep) }

type guardListener struct {
	net.Listener
	limit uint64
}

func (l guardListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &guardConn{Conn: c, limit: l.limit}, nil
}

// guardConn tracks ZMTP framing in the bytes it reads: a 64-byte greeting,
// then frames of flags (bit 1: long size, bit 0: more), a 1- or 8-byte
// big-endian size, and the body. Only reads are inspected.
type guardConn struct {
	net.Conn
	limit uint64

	greeting int     // greeting bytes still to skip
	started  bool    // greeting counter initialised
	hdr      [9]byte // partial frame header
	hdrLen   int
	body     uint64 // body bytes still to pass
	msgSize  uint64 // bytes of the current multipart message
}

// ErrFrameTooLarge is the read error of a connection whose peer announced a
// frame or message larger than the limit.
var ErrFrameTooLarge = fmt.Errorf("kernel: zmtp frame exceeds %d bytes", maxWireMessage)

func (c *guardConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		if perr := c.scan(p[:n]); perr != nil {
			c.Conn.Close()
			return 0, perr
		}
	}
	return n, err
}

func (c *guardConn) scan(b []byte) error {
	if !c.started {
		c.started, c.greeting = true, 64
	}
	for len(b) > 0 {
		switch {
		case c.greeting > 0:
			k := min(c.greeting, len(b))
			c.greeting -= k
			b = b[k:]
		case c.body > 0:
			k := uint64(len(b))
			if k > c.body {
				k = c.body
			}
			c.body -= k
			b = b[k:]
		default:
			c.hdr[c.hdrLen] = b[0]
			c.hdrLen++
			b = b[1:]
			flags := c.hdr[0]
			need := 2
			if flags&0x02 != 0 {
				need = 9
			}
			if c.hdrLen < need {
				continue
			}
			var size uint64
			if need == 2 {
				size = uint64(c.hdr[1])
			} else {
				for _, x := range c.hdr[1:9] {
					size = size<<8 | uint64(x)
				}
			}
			c.hdrLen = 0
			if flags&0x04 == 0 { // a message frame, not a command
				c.msgSize += size
				if size > c.limit || c.msgSize > c.limit {
					return ErrFrameTooLarge
				}
				if flags&0x01 == 0 {
					c.msgSize = 0
				}
			} else if size > c.limit {
				return ErrFrameTooLarge
			}
			c.body = size
		}
	}
	return nil
}
