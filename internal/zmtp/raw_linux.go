package zmtp

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawIO reads and writes a socket with raw read(2) and write(2) calls,
// waiting in the runtime's poller (deadlines apply) only when the
// non-blocking socket has nothing to read or no room to write.
//
// Why: every ordinary system call tells the scheduler it is entering one,
// and when every processor had been idle that wakes the runtime's monitor
// thread (sysmon) from its deep sleep, which then polls every 20 µs for a
// while. A kernel that relays messages is idle between nearly all of them,
// so that was one more thread wake-up on the critical path of each message
// and a busy monitor on the other CPU — half of the kernel's context
// switches and a quarter of its CPU time in kernelbench. Raw calls are not
// seen by the scheduler; they cannot block, the socket being non-blocking.
type rawIO struct {
	rc   syscall.RawConn
	addr func() (local, remote net.Addr)
}

// newRawIO returns nil when c has no file descriptor to use.
func newRawIO(c net.Conn) *rawIO {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return &rawIO{rc: rc, addr: func() (net.Addr, net.Addr) { return c.LocalAddr(), c.RemoteAddr() }}
}

func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var (
		n     int
		errno syscall.Errno
	)
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			var m uintptr
			m, _, errno = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch errno {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait in the poller
			}
			n = int(m)
			return true
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, r.opError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (r *rawIO) Write(b []byte) (int, error) {
	total := len(b)
	var errno syscall.Errno
	err := r.rc.Write(func(fd uintptr) bool {
		for len(b) > 0 {
			var m uintptr
			m, _, errno = syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch errno {
			case 0:
				b = b[m:]
			case syscall.EINTR:
			case syscall.EAGAIN:
				errno = 0
				return false // wait in the poller until writable
			default:
				return true
			}
		}
		return true
	})
	written := total - len(b)
	switch {
	case err != nil:
		return written, err
	case errno != 0:
		return written, r.opError("write", errno)
	}
	return written, nil
}

func (r *rawIO) opError(op string, errno syscall.Errno) error {
	local, remote := r.addr()
	network := "" // an unnamed Unix socket may have no local address
	if local != nil {
		network = local.Network()
	}
	return &net.OpError{Op: op, Net: network, Source: local, Addr: remote, Err: os.NewSyscallError(op, errno)}
}

// maxIovecs is how many buffers one writev(2) is given (IOV_MAX is 1024).
const maxIovecs = 1024

// writev writes bufs in order with writev(2), as few calls as the socket
// allows; it waits in the poller as Write does.
func (r *rawIO) writev(bufs net.Buffers) error {
	iov := make([]syscall.Iovec, 0, min(len(bufs), maxIovecs))
	var errno syscall.Errno
	err := r.rc.Write(func(fd uintptr) bool {
		for len(bufs) > 0 {
			iov = iov[:0]
			for _, b := range bufs {
				if len(iov) == maxIovecs {
					break
				}
				if len(b) > 0 {
					v := syscall.Iovec{Base: &b[0]}
					v.SetLen(len(b))
					iov = append(iov, v)
				}
			}
			if len(iov) == 0 {
				bufs = nil
				break
			}
			m, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
			switch e {
			case 0:
				bufs = consume(bufs, int(m))
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait in the poller until writable
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return err
	case errno != 0:
		return r.opError("writev", errno)
	}
	return nil
}

// consume drops the first n bytes of bufs, and the buffers emptied.
func consume(bufs net.Buffers, n int) net.Buffers {
	for len(bufs) > 0 && n >= len(bufs[0]) {
		n -= len(bufs[0])
		bufs = bufs[1:]
	}
	if len(bufs) > 0 {
		bufs[0] = bufs[0][n:]
	}
	return bufs
}
