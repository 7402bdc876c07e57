package client

import (
	"context"
	"errors"
	"net"
	"strings"
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
		case "no_idle_request", "execute_request": // reply, but the idle is lost
			f.status(m, "busy")
			f.reply(f.shell, m, strings.TrimSuffix(m.Header.MsgType, "_request")+"_reply", nil)
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
		case "big_request": // a big output signed badly, then one signed right
			big := map[string]string{"name": "stdout", "text": strings.Repeat("x", wire.LazyMin)}
			r, _ := wire.Reply(m, f.session, "stream", big)
			r.Identities = [][]byte{[]byte("kernel.stream")}
			frames, _ := f.signer.Encode(r)
			frames[2] = []byte("00" + string(frames[2][2:]))
			f.status(m, "busy")
			f.pubMu.Lock()
			f.iopub.SendMulti(zmq4.NewMsgFrom(frames...))
			f.pubMu.Unlock()
			f.publish(m, "stream", big)
			f.reply(f.shell, m, "big_reply", nil)
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
		// The probe's status comes, the idle never did: it was lost.
		// A request that makes no outputs is its reply; of an execution
		// Do says that outputs may have been lost too.
		r, err := c.Do(testCtx(t), Request{MsgType: "no_idle_request"}, Handlers{})
		if err != nil || r == nil || r.Header.MsgType != "no_idle_reply" {
			t.Fatalf("got %v, %v; want the reply", r, err)
		}
		r, err = c.Do(testCtx(t), Request{MsgType: "execute_request"}, Handlers{})
		if !errors.Is(err, ErrIncomplete) || r == nil || r.Header.MsgType != "execute_reply" {
			t.Fatalf("an execution: got %v, %v; want the reply and ErrIncomplete", r, err)
		}
	})
	t.Run("forged reply dropped", func(t *testing.T) {
		r, err := c.Do(testCtx(t), Request{MsgType: "forged_request"}, Handlers{})
		if err != nil || content(t, r)["who"] != "kernel" {
			t.Fatalf("got %v, %v", r, err)
		}
	})
	t.Run("big output forged", func(t *testing.T) {
		// A request whose handlers read their outputs gets only the one
		// signed right; one that sends them on gets both, unchecked, and
		// Verify refuses the forged one.
		streams := func(forward bool) (got []*wire.Message) {
			_, err := c.Do(testCtx(t), Request{MsgType: "big_request", Forward: forward}, Handlers{IOPub: func(m *wire.Message) {
				if m.Header.MsgType == "stream" {
					got = append(got, m)
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		if got := streams(false); len(got) != 1 || got[0].Verify() != nil {
			t.Errorf("read: got %d streams, want the 1 signed right", len(got))
		}
		got := streams(true)
		if len(got) != 2 || !got[0].Lazy() || !errors.Is(got[0].Verify(), wire.ErrBadSignature) || got[1].Verify() != nil {
			t.Errorf("sent on: got %d streams, want 2, the first refused by Verify", len(got))
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

// TestOutputsAfterTheReply: a kernel whose outputs and idle come well
// after its reply (a big output on a busy machine: the reply is small and
// on another socket) keeps them in the request. Here the kernel publishes
// them only once Do has waited IdleTimeout and probed; Do returned at the
// end of that wait before, without them. Output sent under the probe is
// the request's. A kernel that answers the probes but never publishes a
// status for them is given up on, with ErrIncomplete, after IdleProbes.
func TestOutputsAfterTheReply(t *testing.T) {
	var (
		mu     sync.Mutex
		owed   *wire.Message // a request whose outputs are still to come
		probes int
		silent atomic.Bool           // kernel_info gets its reply only
		bound  atomic.Bool           // the late output is bound to the probe (ipykernel binds output when it flushes it)
		held   = make(chan struct{}) // a busy kernel goes on at a send (or the close at the end)
	)
	defer close(held)
	f := newFakeKernel(t, func(f *fakeKernel, m *wire.Message) {
		switch m.Header.MsgType {
		case "late_request":
			f.status(m, "busy")
			f.reply(f.shell, m, "late_reply", nil)
			mu.Lock()
			owed = m
			mu.Unlock()
		case "busy_request", "execute_request":
			var code struct{ Code string }
			_ = m.DecodeContent(&code)
			if code.Code == "lost" { // the idle is lost
				f.status(m, "busy")
				f.reply(f.shell, m, "execute_reply", nil)
				return
			}
			// A reply without status, then busy with what follows.
			f.reply(f.shell, m, "busy_reply", nil)
			<-held
		case "kernel_info_request":
			mu.Lock()
			late := owed
			owed = nil
			probes++
			mu.Unlock()
			if late != nil {
				to := late
				if bound.Load() {
					to = m
				}
				f.publish(to, "stream", map[string]string{"name": "stdout", "text": "late output"})
				f.status(late, "idle")
			}
			if silent.Load() {
				f.reply(f.shell, m, "kernel_info_reply", map[string]string{"status": "ok"})
				return
			}
			standard(f, m)
		}
	})
	c := dialFake(t, f, Options{IdleTimeout: 50 * time.Millisecond, HeartbeatInterval: -1})
	t.Run("outputs after the reply", func(t *testing.T) {
		col := &collector{}
		r, err := c.Do(testCtx(t), Request{MsgType: "late_request"}, col.handlers())
		if err != nil || r == nil || r.Header.MsgType != "late_reply" {
			t.Fatalf("got %v, %v", r, err)
		}
		if got := col.types(); !contains(got, "stream:stdout") || !contains(got, "status:idle") {
			t.Fatalf("the request's iopub: %v; want the output and the idle that came after the reply", got)
		}
	})
	t.Run("output under the probe", func(t *testing.T) {
		bound.Store(true)
		defer bound.Store(false)
		col := &collector{}
		if _, err := c.Do(testCtx(t), Request{MsgType: "late_request"}, col.handlers()); err != nil {
			t.Fatal(err)
		}
		if got := col.types(); !contains(got, "stream:stdout") {
			t.Fatalf("the request's iopub: %v; want the output the kernel sent under the probe", got)
		}
	})
	t.Run("kernel busy after a reply without status", func(t *testing.T) {
		// The probe waits behind what the kernel does next: the reply is
		// taken as it is, and an execution's outputs may be missing.
		r, err := c.Do(testCtx(t), Request{MsgType: "busy_request"}, Handlers{})
		held <- struct{}{}
		if err != nil || r == nil {
			t.Fatalf("got %v, %v; want the reply", r, err)
		}
		_, err = c.Do(testCtx(t), Request{MsgType: "execute_request", Content: map[string]string{"code": "busy"}}, Handlers{})
		held <- struct{}{}
		if !errors.Is(err, ErrIncomplete) {
			t.Fatalf("an execution: %v, want ErrIncomplete", err)
		}
		if _, err := c.KernelInfo(testCtx(t)); err != nil { // after the probes that waited
			t.Fatal(err)
		}
	})
	t.Run("probes without status", func(t *testing.T) {
		silent.Store(true)
		mu.Lock()
		probes = 0
		mu.Unlock()
		_, err := c.Do(testCtx(t), Request{MsgType: "execute_request", Content: map[string]string{"code": "lost"}}, Handlers{})
		mu.Lock()
		n := probes
		mu.Unlock()
		if !errors.Is(err, ErrIncomplete) || n != IdleProbes {
			t.Fatalf("got %v after %d probes; want ErrIncomplete after %d", err, n, IdleProbes)
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
