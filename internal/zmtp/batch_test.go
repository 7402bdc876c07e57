package zmtp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/go-zeromq/zmq4"
)

// msgBytes is the ZMTP encoding of one message.
func msgBytes(frames [][]byte) []byte {
	var b []byte
	for i, f := range frames {
		flags := byte(0)
		if i < len(frames)-1 {
			flags = 0x01
		}
		b = append(b, frame(flags, f)...)
	}
	return b
}

// burst is messages of every kind of frame: empty, short, long, and long
// enough to be written from where it is (inlineFrame).
func burst() [][][]byte {
	var msgs [][][]byte
	for i, n := range []int{0, 7, 255, 256, 1000, inlineFrame, inlineFrame + 1, 200 << 10, 3} {
		msgs = append(msgs, [][]byte{[]byte(fmt.Sprintf("topic-%d", i)), {}, bytes.Repeat([]byte{byte('a' + i)}, n)})
	}
	return msgs
}

// A batch of messages is one write of small frames and their headers, or
// the same bytes gathered around big frames; what follows it through
// Write still goes out a unit at a time.
func TestWriteMsgsGathers(t *testing.T) {
	rec := &recorder{}
	c := &conn{Conn: rec}
	small := [][][]byte{{[]byte("a"), []byte("status")}, {[]byte("b"), bytes.Repeat([]byte("x"), 300)}, {[]byte("c")}}
	if err := c.writeMsgs(small); err != nil {
		t.Fatal(err)
	}
	want := bytes.Join([][]byte{msgBytes(small[0]), msgBytes(small[1]), msgBytes(small[2])}, nil)
	if len(rec.writes) != 1 || !bytes.Equal(rec.writes[0], want) {
		t.Fatalf("%d writes for a batch of small messages, want 1 of the three messages", len(rec.writes))
	}

	rec.writes = nil
	msgs := burst()
	if err := c.writeMsgs(msgs); err != nil {
		t.Fatal(err)
	}
	var all []byte
	for _, m := range msgs {
		all = append(all, msgBytes(m)...)
	}
	if got := bytes.Join(rec.writes, nil); !bytes.Equal(got, all) {
		t.Fatalf("the burst's bytes differ: %d written, want %d", len(got), len(all))
	}

	rec.writes = nil
	next := msgBytes([][]byte{[]byte("after")})
	if _, err := c.Write(next); err != nil {
		t.Fatal(err)
	}
	if len(rec.writes) != 1 || !bytes.Equal(rec.writes[0], next) {
		t.Fatalf("a Write after the batch: %q, want one write of the message", rec.writes)
	}
}

// A batch larger than the socket's buffers, of more big frames than one
// writev takes, arrives whole over TCP (raw writev in builds without
// -race, the connection's own otherwise).
func TestWriteMsgsBigBatch(t *testing.T) {
	a, b := tcpPair(t)
	c := newConn(a)
	var msgs [][][]byte
	var want []byte
	for i := range 1024 + 100 { // more than Linux's one writev takes (IOV_MAX, maxIovecs)
		m := [][]byte{[]byte("k"), bytes.Repeat([]byte{byte(i)}, inlineFrame+1+i)}
		msgs = append(msgs, m)
		want = append(want, msgBytes(m)...)
	}
	errc := make(chan error, 1)
	go func() { errc <- c.writeMsgs(msgs) }()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(b, got); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the batch arrived changed")
	}
}

// A burst published at once reaches a subscriber whole and in order, and
// so does a lone message after it (written without waiting for company:
// nothing follows it).
func TestPubBurstInOrder(t *testing.T) {
	p, err := bindPub("tcp://127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	s := zmq4.NewSub(ctx)
	defer func() { s.Close(); cancel() }()
	if err := s.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Dial("tcp://" + p.Addr().String()); err != nil {
		t.Fatal(err)
	}
	waitPeers(t, p, 1)
	var sent [][][]byte
	for range 20 {
		sent = append(sent, burst()...)
	}
	for i, m := range sent {
		m[0] = fmt.Appendf(nil, "%d", i)
		if err := p.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range sent {
		got := recvOne(t, s)
		if len(got.Frames) != len(m) {
			t.Fatalf("message %d: %d frames, want %d", i, len(got.Frames), len(m))
		}
		for j := range m {
			if !bytes.Equal(got.Frames[j], m[j]) {
				t.Fatalf("message %d, frame %d: %.20q, want %.20q", i, j, got.Frames[j], m[j])
			}
		}
	}
	if err := p.Send([][]byte{[]byte("lone")}); err != nil {
		t.Fatal(err)
	}
	if got := recvOne(t, s); len(got.Frames) != 1 || string(got.Frames[0]) != "lone" {
		t.Fatalf("lone message: %q", got.Frames)
	}
}

// tcpPair is the two ends of a loopback TCP connection, closed when the
// test ends.
func tcpPair(t *testing.T) (a, b net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		done <- c
	}()
	a, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b = <-done
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}
