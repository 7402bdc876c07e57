package backing

import (
	"net"
	"syscall"
	"unsafe"

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
type quickAck struct {
	*net.TCPConn
	raw syscall.RawConn
}

func withQuickAck(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return quickAck{tc, raw}
}

func (q quickAck) Read(b []byte) (int, error) {
	n, err := q.TCPConn.Read(b)
	_ = q.raw.Control(setQuickAck)
	return n, err
}

// setQuickAck is a raw system call: setsockopt does not block, and an
// ordinary call would wake the runtime's monitor thread after every read
// of an otherwise idle process.
func setQuickAck(fd uintptr) {
	one := int32(1)
	unix.RawSyscall6(unix.SYS_SETSOCKOPT, fd, unix.IPPROTO_TCP, unix.TCP_QUICKACK, uintptr(unsafe.Pointer(&one)), unsafe.Sizeof(one), 0)
}
