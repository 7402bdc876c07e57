package backing

import (
	"net"

	"golang.org/x/sys/unix"
)

// quickAck wraps a TCP connection to a Jupyter server so that every read
// turns Linux's delayed ACKs off again (TCP_QUICKACK does not stick).
//
// Jupyter servers (Notebook, Jupyter Server, the gateways: Tornado's
// WebSocket handler) leave Nagle's algorithm on, and a kernel answers an
// execute with several small messages (busy, execute_input, the reply,
// idle). The server holds each one after the first until the client has
// acknowledged the previous one, and a client that delays its ACKs makes
// it wait about 40 ms: an empty execute took 48 ms instead of 6 ms. An
// ACK at once for every read costs one setsockopt.
type quickAck struct{ *net.TCPConn }

func withQuickAck(c net.Conn) net.Conn {
	if tc, ok := c.(*net.TCPConn); ok {
		return quickAck{tc}
	}
	return c
}

func (q quickAck) Read(b []byte) (int, error) {
	n, err := q.TCPConn.Read(b)
	if rc, e := q.TCPConn.SyscallConn(); e == nil {
		_ = rc.Control(func(fd uintptr) { _ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1) })
	}
	return n, err
}
