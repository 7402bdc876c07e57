package zmtp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run"))
}

// frame encodes one ZMTP frame.
func frame(flags byte, body []byte) []byte {
	if len(body) > 255 {
		h := make([]byte, 9)
		h[0] = flags | 0x02
		binary.BigEndian.PutUint64(h[1:], uint64(len(body)))
		return append(h, body...)
	}
	return append([]byte{flags, byte(len(body))}, body...)
}

// recorder counts the writes that reach the network.
type recorder struct {
	net.Conn
	writes [][]byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.writes = append(r.writes, bytes.Clone(p))
	return len(p), nil
}

func TestWritesOnePerUnit(t *testing.T) {
	greeting := bytes.Repeat([]byte{1}, 64)
	ready := frame(0x04, []byte("READY...."))
	msg1 := append(append(frame(0x01, []byte("id")), frame(0x01, nil)...), frame(0x00, bytes.Repeat([]byte("x"), 300))...)
	msg2 := frame(0x00, []byte("single"))
	stream := bytes.Join([][]byte{greeting, ready, msg1, msg2}, nil)
	want := [][]byte{greeting, ready, msg1, msg2}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		rec := &recorder{}
		c := &conn{Conn: rec}
		for rest := stream; len(rest) > 0; {
			n := 1 + rng.IntN(min(len(rest), 40))
			if trial == 0 {
				n = len(rest) // one big write
			}
			if _, err := c.Write(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		if len(rec.writes) != len(want) {
			t.Fatalf("trial %d: %d writes, want %d", trial, len(rec.writes), len(want))
		}
		for i := range want {
			if !bytes.Equal(rec.writes[i], want[i]) {
				t.Fatalf("trial %d: write %d differs", trial, i)
			}
		}
	}
}

func TestScannerRejectsOversize(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input []byte
	}{
		{"huge frame", func() []byte {
			h := make([]byte, 9)
			h[0] = 0x02
			binary.BigEndian.PutUint64(h[1:], 1<<62)
			return h
		}()},
		{"frames add up", func() []byte {
			var b []byte
			for range 3 {
				h := make([]byte, 9)
				h[0] = 0x03 // more + long
				binary.BigEndian.PutUint64(h[1:], MaxMessage/2)
				b = append(b, h...)
			}
			return b
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scanner{started: true}
			var err error
			for b := tc.input; len(b) > 0 && err == nil; {
				var k int
				k, err = s.scan(b[:min(9, len(b))]) // one header at a time
				if errors.Is(err, errBoundary) {
					err = nil
				}
				b = b[k:]
				// skip bodies: pretend they were read
				s.body = 0
			}
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
		})
	}
}

// TestRouterDealer runs real zmq4 sockets over the transport both ways,
// tcp and ipc.
func TestRouterDealer(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	tcp := "tcp://" + l.Addr().String()
	l.Close()
	t.Run("tcp", func(t *testing.T) { routerDealer(t, tcp) })
	t.Run("ipc", func(t *testing.T) { routerDealer(t, "ipc://"+filepath.Join(t.TempDir(), "k-1")) })
}

func routerDealer(t *testing.T, addr string) {
	if ep := Endpoint(addr); !strings.HasPrefix(ep, "agentkernel-") {
		t.Fatalf("Endpoint(%q) = %q: not this transport", addr, ep)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	router := zmq4.NewRouter(ctx)
	defer router.Close()
	if err := router.Listen(Endpoint(addr)); err != nil {
		t.Fatal(err)
	}
	dealer := zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity("d1")))
	defer dealer.Close()
	if err := dealer.Dial(Endpoint(addr)); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("y"), 1<<20)
	for i := range 50 {
		body := []byte{byte(i)}
		if i == 7 {
			body = big
		}
		if err := dealer.SendMulti(zmq4.NewMsgFrom([]byte("a"), body)); err != nil {
			t.Fatal(err)
		}
		done := make(chan zmq4.Msg, 1)
		go func() { m, _ := router.Recv(); done <- m }()
		select {
		case m := <-done:
			if len(m.Frames) != 3 || string(m.Frames[0]) != "d1" || !bytes.Equal(m.Frames[2], body) {
				t.Fatalf("message %d: %d frames", i, len(m.Frames))
			}
			if err := router.SendMulti(m); err != nil {
				t.Fatal(err)
			}
			back, err := dealer.Recv()
			if err != nil || !bytes.Equal(back.Frames[1], body) {
				t.Fatalf("echo %d: %v", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("message %d not received", i)
		}
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tc := range []struct {
		name string
		ep   func(string) string
	}{{"tcp", func(s string) string { return s }}, {"zmtp", Endpoint}} {
		b.Run(tc.name, func(b *testing.B) {
			l, _ := net.Listen("tcp", "127.0.0.1:0")
			addr := "tcp://" + l.Addr().String()
			l.Close()
			router := zmq4.NewRouter(ctx)
			defer router.Close()
			router.Listen(tc.ep(addr))
			dealer := zmq4.NewDealer(ctx)
			defer dealer.Close()
			dealer.Dial(tc.ep(addr))
			frames := [][]byte{[]byte("<IDS|MSG>"), bytes.Repeat([]byte("s"), 64), bytes.Repeat([]byte("h"), 200), []byte("{}"), []byte("{}"), []byte(`{"code":""}`)}
			for b.Loop() {
				dealer.SendMulti(zmq4.NewMsgFrom(frames...))
				m, _ := router.Recv()
				router.SendMulti(m)
				dealer.Recv()
			}
		})
	}
}
