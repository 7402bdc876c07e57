package client

import (
	"net"
	"syscall"
	"testing"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// TestProbeTCP: who listens on a port, read from /proc: this process's
// group (the kernel), another group (a process that took the port), or
// nobody; a bound socket that does not listen is nobody's listener.
func TestProbeTCP(t *testing.T) {
	listen := func(addr string) int {
		t.Helper()
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return ln.Addr().(*net.TCPAddr).Port
	}
	conn := &wire.ConnectionInfo{Transport: "tcp", IP: "127.0.0.1",
		ShellPort: listen("127.0.0.1:0"), IOPubPort: listen("0.0.0.0:0"), StdinPort: listen("127.0.0.2:0")}
	// A port bound without listening (as a probe for a free port).
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, _ := syscall.Getsockname(fd)
	conn.ControlPort = sa.(*syscall.SockaddrInet4).Port
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil { // IPv6, if there is any
		defer ln.Close()
		conn.HBPort = ln.Addr().(*net.TCPAddr).Port
	}

	ours := syscall.Getpgrp()
	l, err := probeTCP(conn, ours)
	if err != nil {
		t.Fatal(err)
	}
	// Shell on 127.0.0.1 and iopub on the wildcard address are ours;
	// stdin listens on another address, control is only bound, hb on
	// ::1 is not 127.0.0.1.
	if !l.bound[wire.Shell] || !l.bound[wire.IOPub] || len(l.bound) != 2 || len(l.holders) != 0 {
		t.Fatalf("as the kernel's group: %+v", l)
	}

	other, err := probeTCP(conn, 1<<30) // above any pid: no such group
	if err != nil {
		t.Fatal(err)
	}
	if len(other.bound) != 0 || other.holders[wire.Shell] == 0 || other.holders[wire.IOPub] == 0 || len(other.holders) != 2 {
		t.Fatalf("as another group: %+v", other)
	}
}
