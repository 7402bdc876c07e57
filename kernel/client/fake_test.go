package client

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// fakeKernel is a minimal kernel on loopback ZeroMQ whose behaviour a test
// scripts per request type, to reach the paths ipykernel never takes.
type fakeKernel struct {
	t       testing.TB
	conn    *wire.ConnectionInfo
	signer  *wire.Signer
	session string

	shell, control, stdin, iopub, hb zmq4.Socket
	pubMu                            sync.Mutex
	hbMute                           atomic.Bool
	handle                           func(f *fakeKernel, m *wire.Message) // per shell/control request
	wg                               sync.WaitGroup
}

func newFakeKernel(t testing.TB, handle func(f *fakeKernel, m *wire.Message)) *fakeKernel {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &fakeKernel{t: t, session: wire.NewSessionID(), handle: handle,
		conn: &wire.ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", SignatureScheme: wire.SignatureScheme, Key: wire.NewKey()}}
	f.signer, _ = wire.NewSigner("", []byte(f.conn.Key), wire.Limits{})
	f.shell, f.control, f.stdin = zmq4.NewRouter(ctx), zmq4.NewRouter(ctx), zmq4.NewRouter(ctx)
	f.iopub, f.hb = zmq4.NewPub(ctx), zmq4.NewRep(ctx)
	for _, s := range []struct {
		sock zmq4.Socket
		port *int
	}{{f.shell, &f.conn.ShellPort}, {f.control, &f.conn.ControlPort}, {f.stdin, &f.conn.StdinPort},
		{f.iopub, &f.conn.IOPubPort}, {f.hb, &f.conn.HBPort}} {
		if err := s.sock.Listen("tcp://127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		*s.port = s.sock.Addr().(*net.TCPAddr).Port
	}
	f.wg.Add(3)
	go f.serve(f.shell)
	go f.serve(f.control)
	go func() {
		defer f.wg.Done()
		for {
			m, err := f.hb.Recv()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				continue
			}
			if !f.hbMute.Load() {
				f.hb.Send(m)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		for _, s := range []zmq4.Socket{f.shell, f.control, f.stdin, f.iopub, f.hb} {
			s.Close()
		}
		f.wg.Wait()
	})
	return f
}

func (f *fakeKernel) serve(sock zmq4.Socket) {
	defer f.wg.Done()
	for {
		zm, err := sock.Recv()
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return
			}
			time.Sleep(time.Millisecond)
			continue
		}
		m, err := f.signer.Decode(zm.Frames)
		if err != nil {
			continue
		}
		f.handle(f, m)
	}
}

// reply sends a reply to m on sock.
func (f *fakeKernel) reply(sock zmq4.Socket, m *wire.Message, msgType string, content any) {
	r, _ := wire.Reply(m, f.session, msgType, content)
	frames, _ := f.signer.Encode(r)
	sock.SendMulti(zmq4.NewMsgFrom(frames...))
}

// publish sends an iopub message with parent m.
func (f *fakeKernel) publish(m *wire.Message, msgType string, content any) {
	r, _ := wire.Reply(m, f.session, msgType, content)
	r.Identities = [][]byte{[]byte("kernel." + msgType)}
	frames, _ := f.signer.Encode(r)
	f.pubMu.Lock()
	defer f.pubMu.Unlock()
	f.iopub.SendMulti(zmq4.NewMsgFrom(frames...))
}

func (f *fakeKernel) status(m *wire.Message, state string) {
	f.publish(m, "status", map[string]string{"execution_state": state})
}

// standard answers kernel_info like a kernel: busy, reply, idle.
func standard(f *fakeKernel, m *wire.Message) bool {
	if m.Header.MsgType != "kernel_info_request" {
		return false
	}
	f.status(m, "busy")
	f.reply(f.shell, m, "kernel_info_reply", map[string]string{"status": "ok", "protocol_version": "5.3"})
	f.status(m, "idle")
	return true
}

func dialFake(t *testing.T, f *fakeKernel, opts Options) *Client {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger()
	}
	c, err := Dial(testCtx(t), f.conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestFakeKernel(t *testing.T) {
	var foreign atomic.Int32
	f := newFakeKernel(t, func(f *fakeKernel, m *wire.Message) {
		if standard(f, m) {
			return
		}
		switch m.Header.MsgType {
		case "no_idle_request": // reply, but the idle is lost
			f.status(m, "busy")
			f.reply(f.shell, m, "no_idle_reply", nil)
		case "forged_request": // a badly signed reply first, then the real one
			r, _ := wire.Reply(m, f.session, "forged_reply", map[string]string{"who": "forger"})
			frames, _ := f.signer.Encode(r)
			frames[len(r.Identities)+1] = []byte("00" + string(frames[len(r.Identities)+1][2:]))
			f.shell.SendMulti(zmq4.NewMsgFrom(frames...))
			f.status(m, "busy")
			f.reply(f.shell, m, "forged_reply", map[string]string{"who": "kernel"})
			f.status(m, "idle")
		case "foreign_request": // output for someone else's request
			other := &wire.Message{Header: wire.NewHeader("other", "u", "execute_request")}
			f.publish(other, "stream", map[string]string{"name": "stdout", "text": "not yours"})
			f.status(m, "busy")
			f.reply(f.shell, m, "foreign_reply", nil)
			f.status(m, "idle")
		case "hang_request": // never answers
		}
	})
	c := dialFake(t, f, Options{IdleTimeout: 50 * time.Millisecond, HeartbeatInterval: -1,
		OnIOPub: func(m *wire.Message) {
			if m.Header.MsgType == "stream" {
				foreign.Add(1)
			}
		}})

	t.Run("reply without idle", func(t *testing.T) {
		r, err := c.Do(testCtx(t), Request{MsgType: "no_idle_request"}, Handlers{})
		if err != nil || r.Header.MsgType != "no_idle_reply" {
			t.Fatalf("got %v, %v", r, err)
		}
	})
	t.Run("forged reply dropped", func(t *testing.T) {
		r, err := c.Do(testCtx(t), Request{MsgType: "forged_request"}, Handlers{})
		if err != nil || content(t, r)["who"] != "kernel" {
			t.Fatalf("got %v, %v", r, err)
		}
	})
	t.Run("foreign iopub to OnIOPub", func(t *testing.T) {
		col := &collector{}
		if _, err := c.Do(testCtx(t), Request{MsgType: "foreign_request"}, col.handlers()); err != nil {
			t.Fatal(err)
		}
		if foreign.Load() != 1 || contains(col.types(), "stream:stdout") {
			t.Fatalf("foreign %d, request saw %v", foreign.Load(), col.types())
		}
	})
	t.Run("ctx cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(testCtx(t))
		go func() { time.Sleep(20 * time.Millisecond); cancel() }()
		if _, err := c.Do(ctx, Request{MsgType: "hang_request"}, Handlers{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("bad requests", func(t *testing.T) {
		for _, req := range []Request{{MsgType: ""}, {MsgType: "x", Channel: "iopub"}, {Header: &wire.Header{}}} {
			if _, err := c.Do(testCtx(t), req, Handlers{}); err == nil {
				t.Errorf("%+v: no error", req)
			}
		}
	})
}

func TestFakeHeartbeatDeath(t *testing.T) {
	f := newFakeKernel(t, func(f *fakeKernel, m *wire.Message) { standard(f, m) })
	c := dialFake(t, f, Options{HeartbeatInterval: 20 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(testCtx(t), Request{MsgType: "hang_request"}, Handlers{})
		done <- err
	}()
	f.hbMute.Store(true)
	if err := <-done; !errors.Is(err, ErrDead) {
		t.Fatalf("pending request: got %v, want ErrDead", err)
	}
	if _, err := c.KernelInfo(testCtx(t)); !errors.Is(err, ErrDead) {
		t.Fatalf("later request: got %v, want ErrDead", err)
	}
}

// TestSendAnswersGoToOnIOPub: what the kernel publishes for a message sent
// with Send (a panel comm's state frame for its comm_open) reaches
// OnIOPub, however soon it comes: Send registers no request that could
// take it and then forget it.
func TestSendAnswersGoToOnIOPub(t *testing.T) {
	f := newFakeKernel(t, func(f *fakeKernel, m *wire.Message) {
		if !standard(f, m) && m.Header.MsgType == "comm_open" {
			f.publish(m, "comm_msg", map[string]string{"comm_id": "x"})
		}
	})
	const n = 500
	got := make(chan struct{}, n)
	c := dialFake(t, f, Options{HeartbeatInterval: -1, OnIOPub: func(m *wire.Message) {
		if m.Header.MsgType == "comm_msg" {
			got <- struct{}{}
		}
	}})
	ctx := testCtx(t)
	for i := range n {
		if err := c.Send(ctx, Request{MsgType: "comm_open", Content: map[string]string{"comm_id": "x"}}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
		case <-time.After(5 * time.Second):
			t.Fatalf("the answer to Send %d never reached OnIOPub", i+1)
		}
	}
}
