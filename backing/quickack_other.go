//go:build !linux

package backing

import "net"

// withQuickAck is Linux's TCP_QUICKACK (see quickack_linux.go); elsewhere
// the connection is used as it is.
func withQuickAck(c net.Conn) net.Conn { return c }
