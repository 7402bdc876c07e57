package zmtp

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// A write larger than the socket buffers waits for the reader (the EAGAIN
// path) and arrives whole; a closed peer reads as EOF.
func TestRawIOBigWriteAndEOF(t *testing.T) {
	a, b := tcpPair(t)
	ra, rb := newRawIO(a), newRawIO(b)
	if ra == nil || rb == nil {
		t.Fatal("no raw I/O on a TCP connection")
	}
	msg := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
	errc := make(chan error, 1)
	go func() {
		n, err := ra.Write(msg)
		if err == nil && n != len(msg) {
			err = io.ErrShortWrite
		}
		a.Close()
		errc <- err
	}()
	got, err := io.ReadAll(rb)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("read %d bytes, want %d", len(got), len(msg))
	}
}

func TestRawIODeadlines(t *testing.T) {
	a, _ := tcpPair(t)
	ra := newRawIO(a)
	a.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := ra.Read(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
	// Nobody reads the other side: the write fills the buffers, then
	// times out.
	a.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := ra.Write(make([]byte, 64<<20)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write past the deadline: %v", err)
	}
}

// Writing to a peer that went away fails with an error (the SIGPIPE the
// kernel raises is ignored for sockets, as for Go's own writes).
func TestRawIOBrokenPipe(t *testing.T) {
	a, b := tcpPair(t)
	ra := newRawIO(a)
	b.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := ra.Write([]byte("x")); err != nil {
			var op *net.OpError
			if !errors.As(err, &op) {
				t.Fatalf("write error %T %v, want *net.OpError", err, err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("writes to a closed peer keep succeeding")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
