package zmtp

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

// got collects what a Router handler receives.
type got chan [][]byte

func (g got) next(t *testing.T) [][]byte {
	t.Helper()
	select {
	case f := <-g:
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("nothing received")
		return nil
	}
}

func listenRouter(t *testing.T, ep string) (*Router, got) {
	t.Helper()
	g := make(got, 16)
	r, err := bindRouter(ep, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Serve(func(f [][]byte) { g <- f })
	t.Cleanup(func() { r.Close() })
	return r, g
}

func dealer(t *testing.T, ep string, opts ...zmq4.Option) zmq4.Socket {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := zmq4.NewDealer(ctx, opts...)
	t.Cleanup(func() { d.Close(); cancel() })
	if err := d.Dial(ep); err != nil {
		t.Fatal(err)
	}
	return d
}

func recvOne(t *testing.T, s zmq4.Socket) zmq4.Msg {
	t.Helper()
	done := make(chan zmq4.Msg, 1)
	go func() {
		m, _ := s.Recv()
		done <- m
	}()
	select {
	case m := <-done:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no reply")
		return zmq4.Msg{}
	}
}

func TestRouterRoutesByIdentity(t *testing.T) {
	r, g := listenRouter(t, "tcp://127.0.0.1:0")
	ep := "tcp://" + r.Addr().String()
	named := dealer(t, ep, zmq4.WithID(zmq4.SocketIdentity("alice")))
	anon := dealer(t, ep)

	if err := named.SendMulti(zmq4.NewMsgFrom([]byte("<IDS|MSG>"), []byte("from alice"))); err != nil {
		t.Fatal(err)
	}
	f := g.next(t)
	if string(f[0]) != "alice" || len(f) != 3 || string(f[2]) != "from alice" {
		t.Fatalf("frames %q", f)
	}
	if err := anon.Send(zmq4.NewMsgString("from anon")); err != nil {
		t.Fatal(err)
	}
	fa := g.next(t)
	if len(fa[0]) == 0 || string(fa[0]) == "alice" || string(fa[1]) != "from anon" {
		t.Fatalf("anonymous peer frames %q", fa)
	}
	// Replies go to the peer named by the first frame, and only to it.
	if err := r.Send([][]byte{fa[0], []byte("to anon")}); err != nil {
		t.Fatal(err)
	}
	if err := r.Send([][]byte{[]byte("alice"), []byte("to"), []byte("alice")}); err != nil {
		t.Fatal(err)
	}
	if m := recvOne(t, anon); string(m.Frames[0]) != "to anon" {
		t.Fatalf("anon got %q", m.Frames)
	}
	if m := recvOne(t, named); len(m.Frames) != 2 || string(m.Frames[1]) != "alice" {
		t.Fatalf("alice got %q", m.Frames)
	}
	if err := r.Send([][]byte{[]byte("bob"), []byte("x")}); !errors.Is(err, ErrUnknownPeer) {
		t.Fatalf("send to unknown peer: %v", err)
	}
}

func TestRouterHandover(t *testing.T) {
	r, g := listenRouter(t, "tcp://127.0.0.1:0")
	ep := "tcp://" + r.Addr().String()
	first := dealer(t, ep, zmq4.WithID(zmq4.SocketIdentity("same")))
	// Known to the router (it reads only registered peers) before the
	// second connects.
	if err := first.Send(zmq4.NewMsgString("first")); err != nil {
		t.Fatal(err)
	}
	g.next(t)
	second := dealer(t, ep, zmq4.WithID(zmq4.SocketIdentity("same")))
	if err := second.Send(zmq4.NewMsgString("hello")); err != nil {
		t.Fatal(err)
	}
	g.next(t)
	// The newer connection owns the identity.
	if err := r.Send([][]byte{[]byte("same"), []byte("back")}); err != nil {
		t.Fatal(err)
	}
	if m := recvOne(t, second); string(m.Frames[0]) != "back" {
		t.Fatalf("got %q", m.Frames)
	}
}

func TestRouterIPC(t *testing.T) {
	ep := "ipc://" + filepath.Join(t.TempDir(), "k-1")
	_, g := listenRouter(t, ep)
	d := dealer(t, ep)
	if err := d.Send(zmq4.NewMsgString("over ipc")); err != nil {
		t.Fatal(err)
	}
	if f := g.next(t); string(f[1]) != "over ipc" {
		t.Fatalf("frames %q", f)
	}
}

// A peer announcing a huge frame is dropped; the others go on.
func TestRouterDropsHostilePeer(t *testing.T) {
	errs := make(chan error, 4)
	g := make(got, 4)
	r, err := bindRouter("tcp://127.0.0.1:0", func(err error) { errs <- err })
	if err != nil {
		t.Fatal(err)
	}
	r.Serve(func(f [][]byte) { g <- f })
	defer r.Close()
	ep := "tcp://" + r.Addr().String()
	good := dealer(t, ep)

	c, err := net.Dial("tcp", r.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	greeting := make([]byte, 64)
	greeting[0], greeting[9], greeting[10] = 0xff, 0x7f, 3
	copy(greeting[12:], "NULL")
	ready := []byte{0x04, 0}
	body := append([]byte{5}, "READY"...)
	body = append(body, 11)
	body = append(body, "Socket-Type"...)
	body = binary.BigEndian.AppendUint32(body, 6)
	body = append(body, "DEALER"...)
	ready[1] = byte(len(body))
	huge := []byte{0x02, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint64(huge[1:], 1<<62)
	msg := append(append(greeting, append(ready, body...)...), huge...)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("hostile peer dropped with %v, want ErrTooLarge", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("hostile peer not dropped")
	}
	if err := good.Send(zmq4.NewMsgString("still here")); err != nil {
		t.Fatal(err)
	}
	if f := g.next(t); string(f[1]) != "still here" {
		t.Fatalf("frames %q", f)
	}
}

func TestPubReachesEverySubscriber(t *testing.T) {
	p, err := bindPub("tcp://127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ep := "tcp://" + p.Addr().String()
	var subs []zmq4.Socket
	for range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		s := zmq4.NewSub(ctx)
		defer func() { s.Close(); cancel() }()
		if err := s.SetOption(zmq4.OptionSubscribe, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.Dial(ep); err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	waitPeers(t, p, 2) // a PUB sends to the peers it has
	if err := p.Send([][]byte{[]byte("topic"), []byte("news")}); err != nil {
		t.Fatal(err)
	}
	for i, s := range subs {
		if m := recvOne(t, s); len(m.Frames) != 2 || string(m.Frames[1]) != "news" {
			t.Fatalf("subscriber %d got %q", i, m.Frames)
		}
	}
}

func TestCloseWaitsAndRefuses(t *testing.T) {
	r, _ := listenRouter(t, "tcp://127.0.0.1:0")
	addr := r.Addr().String()
	dealer(t, "tcp://"+addr)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("still accepting after Close")
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func zrouter(t *testing.T, addr string) zmq4.Socket {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := zmq4.NewRouter(ctx)
	if err := r.Listen("tcp://" + addr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); cancel() })
	return r
}

// A Dialer waits for a kernel that is not listening yet, talks to a zmq4
// ROUTER under its identity, and dials again when the connection drops.
func TestDialerRetriesAndReconnects(t *testing.T) {
	addr := freePort(t)
	g := make(got, 4)
	dialed := make(chan *Dialer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d, err := Dial(ctx, "tcp://"+addr, zmq4.Dealer, []byte("me"), nil)
		if err != nil {
			t.Error(err)
		} else {
			d.Serve(func(f [][]byte) { g <- f })
		}
		dialed <- d
	}()
	time.Sleep(100 * time.Millisecond) // nothing listens yet
	r := zrouter(t, addr)
	d := <-dialed
	if d == nil {
		t.FailNow()
	}
	defer d.Close()
	if err := d.Send([][]byte{[]byte("hi")}); err != nil {
		t.Fatal(err)
	}
	m := recvOne(t, r)
	if string(m.Frames[0]) != "me" || string(m.Frames[1]) != "hi" {
		t.Fatalf("router got %q", m.Frames)
	}
	if err := r.Send(zmq4.NewMsgFrom([]byte("me"), []byte("back"))); err != nil {
		t.Fatal(err)
	}
	if f := g.next(t); string(f[0]) != "back" {
		t.Fatalf("dialer got %q", f)
	}

	// The peer goes away and comes back on the same address.
	r.Close()
	r2 := zrouter(t, addr)
	in := make(chan zmq4.Msg, 100)
	go func() {
		for {
			m, err := r2.Recv()
			if err != nil {
				return
			}
			in <- m
		}
	}()
	// Sends right after the drop may still go to the old connection and be
	// lost, as with ZeroMQ; keep sending until one arrives.
	deadline := time.After(5 * time.Second)
	for done := false; !done; {
		_ = d.Send([][]byte{[]byte("again")})
		select {
		case m := <-in:
			if string(m.Frames[0]) != "me" || string(m.Frames[1]) != "again" {
				t.Fatalf("router got %q", m.Frames)
			}
			done = true
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("no reconnection")
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Send([][]byte{[]byte("x")}); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("send after Close: %v", err)
	}
}

// A SUB Dialer's subscription is understood by a zmq4 PUB, which only
// sends to subscribers.
func TestDialerSubscribes(t *testing.T) {
	addr := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pub := zmq4.NewPub(ctx)
	defer pub.Close()
	if err := pub.Listen("tcp://" + addr); err != nil {
		t.Fatal(err)
	}
	g := make(got, 100)
	d, err := Dial(ctx, "tcp://"+addr, zmq4.Sub, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.Serve(func(f [][]byte) { g <- f })
	defer d.Close()
	deadline := time.After(5 * time.Second)
	for {
		if err := pub.Send(zmq4.NewMsgString("news")); err != nil {
			t.Fatal(err)
		}
		select {
		case f := <-g:
			if string(f[0]) != "news" {
				t.Fatalf("got %q", f)
			}
			return
		case <-deadline:
			t.Fatal("the PUB never sent to the subscriber")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestPubDropsStuckSubscriber: a subscriber that stops reading fills its
// queue and is dropped with ErrSlowSubscriber; publishing never waits for
// it, and a subscriber that reads gets every message.
func TestPubDropsStuckSubscriber(t *testing.T) {
	dropped := make(chan error, 1)
	p, err := bindPub("tcp://127.0.0.1:0", func(err error) {
		if errors.Is(err, ErrSlowSubscriber) {
			select {
			case dropped <- err:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The stuck one: a real ZMTP handshake, then no reads at all.
	c, err := net.Dial("tcp", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := zmq4.Open(c, nullSecurity{}, zmq4.Sub, nil, false, nil); err != nil {
		t.Fatal(err)
	}
	// The good one reads on.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	good := zmq4.NewSub(ctx)
	defer good.Close()
	if err := good.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	if err := good.Dial("tcp://" + p.Addr().String()); err != nil {
		t.Fatal(err)
	}
	waitPeers(t, p, 2)
	const n, batch = 3 * PubQueueMessages, 100
	payload := make([]byte, 64<<10) // 3000 × 64 KiB: far past any socket buffer
	progress := make(chan int, n)
	go func() {
		for count := 1; count <= n; count++ {
			if _, err := good.Recv(); err != nil {
				break
			}
			progress <- count
		}
		close(progress)
	}()
	sent := make(chan struct{})
	got := 0
	go func() {
		defer close(sent)
		for i := 0; i < n; i++ {
			if err := p.Send([][]byte{[]byte("t"), payload}); err != nil {
				t.Errorf("Send: %v", err)
				return
			}
			// The reading subscriber stays within a batch of the
			// publisher; the stuck one falls behind without end.
			for (i+1)%batch == 0 && got < i+1 {
				c, ok := <-progress
				if !ok {
					return
				}
				got = c
			}
		}
	}()
	select {
	case <-sent:
	case <-time.After(60 * time.Second):
		t.Fatal("Send blocked on the stuck subscriber")
	}
	select {
	case err := <-dropped:
		t.Logf("dropped: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the stuck subscriber was not dropped")
	}
	if got != n {
		t.Fatalf("the reading subscriber got %d of %d messages", got, n)
	}
}

// waitPeers waits until p has n subscribers.
func waitPeers(t *testing.T, p *Pub, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		p.mu.Lock()
		got := len(p.peers)
		p.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers connected, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Over ipc (Unix sockets, the transport of local kernels): a DEALER Dialer
// talks to a Router served on a Unix listener, and a zmq4 REQ through
// Endpoint gets its ping echoed, as a kernel's heartbeat does.
func TestDialerIPC(t *testing.T) {
	ep := "ipc://" + filepath.Join(t.TempDir(), "kernel-1")
	ln, err := Listen(ep)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRouter(ln, nil)
	defer r.Close()
	g := make(got, 4)
	r.Serve(func(f [][]byte) {
		if string(f[len(f)-1]) == "ping" {
			r.Send(f) // the echo
			return
		}
		g <- f
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := Dial(ctx, ep, zmq4.Dealer, []byte("me"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Send([][]byte{[]byte("over ipc")}); err != nil {
		t.Fatal(err)
	}
	if f := g.next(t); string(f[0]) != "me" || string(f[1]) != "over ipc" {
		t.Fatalf("router got %q", f)
	}
	req := zmq4.NewReq(ctx)
	defer req.Close()
	if err := req.Dial(Endpoint(ep)); err != nil {
		t.Fatal(err)
	}
	if err := req.Send(zmq4.NewMsgString("ping")); err != nil {
		t.Fatal(err)
	}
	if m := recvOne(t, req); string(m.Frames[0]) != "ping" {
		t.Fatalf("heartbeat echo %q", m.Frames)
	}
}

// A Dialer whose peer accepts and never does the ZMTP handshake (not a
// ZeroMQ socket: a port another process holds) gives up when its ctx ends,
// not HandshakeTimeout later.
func TestDialerHandshakeStopsWithCtx(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	ctx, cancel := context.WithCancelCause(context.Background())
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := Dial(ctx, "tcp://"+ln.Addr().String(), zmq4.Sub, nil, nil)
		errc <- err
	}()
	c := <-accepted
	defer c.Close()
	stopped := errors.New("the start failed")
	cancel(stopped)
	if err := <-errc; !errors.Is(err, stopped) {
		t.Fatalf("Dial = %v, want the ctx's cause", err)
	}
	if waited := time.Since(start); waited >= HandshakeTimeout {
		t.Fatalf("Dial returned after %v: it waited out the handshake timeout", waited)
	}
}

// bindRouter binds ep and returns a Router on it.
func bindRouter(ep string, onError func(error)) (*Router, error) {
	ln, err := Listen(ep)
	if err != nil {
		return nil, err
	}
	return NewRouter(ln, onError), nil
}

// bindPub binds ep and returns a Pub on it.
func bindPub(ep string, onError func(error)) (*Pub, error) {
	ln, err := Listen(ep)
	if err != nil {
		return nil, err
	}
	return NewPub(ln, onError), nil
}
