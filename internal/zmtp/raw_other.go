//go:build !linux

package zmtp

import "net"

// rawIO is Linux-only (raw read(2)/write(2) on the non-blocking socket);
// elsewhere connections use their own Read and Write.
type rawIO struct{ net.Conn }

func newRawIO(net.Conn) *rawIO { return nil }

func (*rawIO) writev(net.Buffers) error { panic("unreachable: newRawIO returns nil") }
