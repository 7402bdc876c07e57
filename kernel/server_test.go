package kernel

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/agentkernel/agentkernel/internal/zmtp"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// zmq4 v0.17.0's PUB writer goroutine waits on a sync.Cond that Close never
// signals: one goroutine per closed PUB socket, theirs not ours.
var zmq4Leaks = goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, zmq4Leaks) }

// fakeHandler is a tiny kernel: "error" fails, "sleep" blocks until
// interrupted, "input" asks for input, anything else prints itself.
type fakeHandler struct {
	mu        sync.Mutex
	count     int
	interrupt chan struct{}
	shutdowns []bool
}

func newFake() *fakeHandler { return &fakeHandler{interrupt: make(chan struct{}, 1)} }

func (h *fakeHandler) KernelInfo() KernelInfo {
	return KernelInfo{Implementation: "fake", LanguageInfo: json.RawMessage(`{"name":"fake"}`)}
}

func (h *fakeHandler) HandleShell(ctx context.Context, r *Request) bool {
	if r.Type() != "execute_request" {
		return false
	}
	var c struct {
		Code string `json:"code"`
	}
	r.Msg.DecodeContent(&c)
	h.mu.Lock()
	h.count++
	n := h.count
	h.mu.Unlock()
	switch c.Code {
	case "error":
		r.Publish("error", map[string]any{"ename": "E", "evalue": "boom", "traceback": []string{}})
		r.Reply("execute_reply", map[string]any{"status": "error", "execution_count": n, "ename": "E", "evalue": "boom", "traceback": []string{}})
		return true
	case "sleep":
		select {
		case <-h.interrupt:
			r.Reply("execute_reply", map[string]any{"status": "error", "execution_count": n, "ename": "KeyboardInterrupt", "evalue": "", "traceback": []string{}})
		case <-ctx.Done():
		}
		return true
	case "input":
		v, err := r.Input(ctx, "name? ", false)
		if err != nil {
			v = "ERR:" + err.Error()
		}
		r.Publish("stream", map[string]any{"name": "stdout", "text": v})
	default:
		r.Publish("stream", map[string]any{"name": "stdout", "text": c.Code})
	}
	r.Reply("execute_reply", map[string]any{"status": "ok", "execution_count": n})
	return true
}

func (h *fakeHandler) Interrupt(ctx context.Context) error {
	select {
	case h.interrupt <- struct{}{}:
	default:
	}
	return nil
}

func (h *fakeHandler) Shutdown(ctx context.Context, restart bool) error {
	h.mu.Lock()
	h.shutdowns = append(h.shutdowns, restart)
	h.mu.Unlock()
	return nil
}

// testKernel runs a Server on loopback and gives raw zmq4 peers to it.
type testKernel struct {
	t      *testing.T
	conn   *wire.ConnectionInfo
	signer *wire.Signer
	h      *fakeHandler
	srv    *Server
	done   chan error
	cancel context.CancelFunc

	shell, control, stdin zmq4.Socket
	iopub                 zmq4.Socket
	session               string
	iopubMsgs             chan *wire.Message
	wg                    sync.WaitGroup
}

// startKernel starts a server on a fakeHandler; wrap, if given, makes the
// server's handler out of it.
func startKernel(t *testing.T, wrap ...func(*fakeHandler) Handler) *testKernel {
	t.Helper()
	// Ports 0: the server picks them, and nothing can take one first.
	conn := &wire.ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", SignatureScheme: wire.SignatureScheme, Key: wire.NewKey()}
	h := newFake()
	var handler Handler = h
	for _, w := range wrap {
		handler = w(h)
	}
	srv, err := New(Config{Conn: conn, Handler: handler, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &testKernel{t: t, h: h, srv: srv, done: make(chan error, 1), cancel: cancel,
		session: wire.NewSessionID(), iopubMsgs: make(chan *wire.Message, 1000)}
	k.signer, _ = wire.NewSigner("", []byte(conn.Key), wire.Limits{})
	go func() { k.done <- srv.Serve(ctx) }()
	select {
	case <-srv.Listening():
	case err := <-k.done:
		cancel()
		t.Fatalf("Serve: %v", err)
	}
	conn = srv.ConnectionInfo()
	k.conn = conn

	cctx, ccancel := context.WithCancel(context.Background())
	id := zmq4.WithID(zmq4.SocketIdentity(k.session))
	k.shell = zmq4.NewDealer(cctx, id)
	k.control = zmq4.NewDealer(cctx)
	k.stdin = zmq4.NewDealer(cctx, id)
	k.iopub = zmq4.NewSub(cctx)
	for _, d := range []struct {
		s    zmq4.Socket
		port int
	}{{k.shell, conn.ShellPort}, {k.control, conn.ControlPort}, {k.stdin, conn.StdinPort}, {k.iopub, conn.IOPubPort}} {
		if err := dialRetry(d.s, conn.Addr(d.port)); err != nil {
			t.Fatalf("dial %d (shell %d control %d stdin %d iopub %d): %v", d.port, conn.ShellPort, conn.ControlPort, conn.StdinPort, conn.IOPubPort, err)
		}
	}
	k.iopub.SetOption(zmq4.OptionSubscribe, "")
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		for {
			msg, err := k.iopub.Recv()
			if err != nil {
				return
			}
			m, err := k.signer.Decode(msg.Frames)
			if err != nil {
				continue
			}
			k.iopubMsgs <- m
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-k.done
		ccancel()
		for _, s := range []zmq4.Socket{k.shell, k.control, k.stdin, k.iopub} {
			s.Close()
		}
		k.wg.Wait()
	})
	// Wait until iopub is connected: send kernel_info until a status arrives.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		k.send(k.shell, "kernel_info_request", nil)
		k.recv(k.shell)
		select {
		case <-k.iopubMsgs:
			time.Sleep(50 * time.Millisecond)
			k.drainIOPub()
			return k
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("iopub never delivered a message")
	return nil
}

func dialRetry(s zmq4.Socket, addr string) error {
	var err error
	for range 50 {
		if err = s.Dial(addr); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

func (k *testKernel) drainIOPub() {
	for {
		select {
		case <-k.iopubMsgs:
		default:
			return
		}
	}
}

func (k *testKernel) send(s zmq4.Socket, msgType string, content any) *wire.Message {
	k.t.Helper()
	raw, _ := json.Marshal(content)
	if content == nil {
		raw = []byte("{}")
	}
	m := &wire.Message{Header: wire.NewHeader(k.session, "tester", msgType), Content: raw}
	frames, _ := k.signer.Encode(m)
	if err := s.SendMulti(zmq4.NewMsgFrom(frames...)); err != nil {
		k.t.Fatalf("send %s: %v", msgType, err)
	}
	return m
}

func (k *testKernel) recv(s zmq4.Socket) *wire.Message {
	k.t.Helper()
	type result struct {
		m   *wire.Message
		err error
	}
	ch := make(chan result, 1)
	go func() {
		msg, err := s.Recv()
		if err != nil {
			ch <- result{nil, err}
			return
		}
		m, err := k.signer.Decode(msg.Frames)
		ch <- result{m, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			k.t.Fatal(r.err)
		}
		return r.m
	case <-time.After(10 * time.Second):
		k.t.Fatal("no reply within 10s")
		return nil
	}
}

// iopubFor collects iopub messages whose parent is req until status idle.
func (k *testKernel) iopubFor(req *wire.Message) []*wire.Message {
	k.t.Helper()
	var out []*wire.Message
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m := <-k.iopubMsgs:
			p, _ := m.Parent()
			if p.MsgID != req.Header.MsgID {
				continue
			}
			out = append(out, m)
			if m.Header.MsgType == "status" && strings.Contains(string(m.Content), "idle") {
				return out
			}
		case <-timeout:
			k.t.Fatalf("no idle for %s; got %d messages", req.Header.MsgType, len(out))
		}
	}
}

func types(ms []*wire.Message) string {
	var s []string
	for _, m := range ms {
		t := m.Header.MsgType
		if t == "status" {
			var c struct {
				S string `json:"execution_state"`
			}
			json.Unmarshal(m.Content, &c)
			t = c.S
		}
		s = append(s, t)
	}
	return strings.Join(s, ",")
}

func TestKernelInfoBothChannels(t *testing.T) {
	k := startKernel(t)
	for _, s := range []zmq4.Socket{k.shell, k.control} {
		req := k.send(s, "kernel_info_request", nil)
		rep := k.recv(s)
		if rep.Header.MsgType != "kernel_info_reply" {
			t.Fatalf("reply type %s", rep.Header.MsgType)
		}
		var info map[string]any
		rep.DecodeContent(&info)
		if info["status"] != "ok" || info["protocol_version"] != wire.ProtocolVersion || info["implementation"] != "fake" {
			t.Fatalf("info = %v", info)
		}
		if p, _ := rep.Parent(); p.MsgID != req.Header.MsgID {
			t.Fatal("reply parent is not the request")
		}
		if got := types(k.iopubFor(req)); got != "busy,idle" {
			t.Fatalf("iopub = %s, want busy,idle", got)
		}
	}
}

func TestExecuteBracketedAndOrdered(t *testing.T) {
	k := startKernel(t)
	req := k.send(k.shell, "execute_request", map[string]any{"code": "hello", "silent": false})
	rep := k.recv(k.shell)
	if rep.Header.MsgType != "execute_reply" {
		t.Fatal(rep.Header.MsgType)
	}
	if got := types(k.iopubFor(req)); got != "busy,stream,idle" {
		t.Fatalf("iopub = %s", got)
	}
}

// deferring defers busy for every request it is asked about.
type deferring struct {
	*fakeHandler
	asked atomic.Int32
}

func (d *deferring) DeferBusy(r *Request) bool {
	d.asked.Add(1)
	return true
}

func TestDeferredBusyStillComesFirst(t *testing.T) {
	var d *deferring
	k := startKernel(t, func(h *fakeHandler) Handler {
		d = &deferring{fakeHandler: h}
		return d
	})
	for _, tc := range []struct {
		msgType string
		content map[string]any
		want    string
	}{
		{"execute_request", map[string]any{"code": "hello"}, "busy,stream,idle"}, // busy at the first Publish
		{"execute_request", map[string]any{"code": "error"}, "busy,error,idle"},
		{"comm_info_request", map[string]any{}, "busy,idle"},   // handler declines: busy when it returns
		{"kernel_info_request", map[string]any{}, "busy,idle"}, // the server's own: never deferred
	} {
		before := d.asked.Load()
		req := k.send(k.shell, tc.msgType, tc.content)
		if tc.msgType != "comm_info_request" {
			k.recv(k.shell)
		}
		if got := types(k.iopubFor(req)); got != tc.want {
			t.Fatalf("%s %v: iopub = %s, want %s", tc.msgType, tc.content, got, tc.want)
		}
		if asked := d.asked.Load() - before; (tc.msgType == "kernel_info_request") != (asked == 0) {
			t.Fatalf("%s: DeferBusy asked %d times", tc.msgType, asked)
		}
	}
}

func TestStopOnErrorAbortsQueue(t *testing.T) {
	k := startKernel(t)
	// Block the shell so the next three queue up behind it.
	first := k.send(k.shell, "execute_request", map[string]any{"code": "sleep"})
	errReq := k.send(k.shell, "execute_request", map[string]any{"code": "error"})
	queued := k.send(k.shell, "execute_request", map[string]any{"code": "never"})
	info := k.send(k.shell, "kernel_info_request", nil)
	time.Sleep(100 * time.Millisecond) // let them reach the queue
	k.send(k.control, "interrupt_request", nil)
	k.recv(k.control)
	replies := map[string]string{}
	for range 4 {
		m := k.recv(k.shell)
		p, _ := m.Parent()
		var c struct {
			Status string `json:"status"`
		}
		m.DecodeContent(&c)
		replies[p.MsgID] = m.Header.MsgType + ":" + c.Status
	}
	want := map[string]string{
		first.Header.MsgID:  "execute_reply:error",
		errReq.Header.MsgID: "execute_reply:aborted", // the interrupt is an error too
		queued.Header.MsgID: "execute_reply:aborted",
		info.Header.MsgID:   "kernel_info_reply:ok",
	}
	for id, w := range want {
		if replies[id] != w {
			t.Errorf("reply for %s = %q, want %q", id[:8], replies[id], w)
		}
	}
	if got := types(k.iopubFor(queued)); got != "busy,idle" {
		t.Fatalf("aborted request iopub = %s", got)
	}
	// stop_on_error false: the next request runs.
	k.send(k.shell, "execute_request", map[string]any{"code": "error", "stop_on_error": false})
	next := k.send(k.shell, "execute_request", map[string]any{"code": "runs"})
	for range 2 {
		m := k.recv(k.shell)
		t.Logf("%s %s", m.Header.MsgType, m.Content)
	}
	if got := types(k.iopubFor(next)); got != "busy,stream,idle" {
		t.Fatalf("after stop_on_error=false: %s", got)
	}
}

func TestControlAnswersWhileShellBusy(t *testing.T) {
	k := startKernel(t)
	k.send(k.shell, "execute_request", map[string]any{"code": "sleep"})
	time.Sleep(50 * time.Millisecond)
	k.send(k.control, "kernel_info_request", nil)
	if m := k.recv(k.control); m.Header.MsgType != "kernel_info_reply" {
		t.Fatal(m.Header.MsgType)
	}
	k.send(k.control, "interrupt_request", nil)
	if m := k.recv(k.control); m.Header.MsgType != "interrupt_reply" {
		t.Fatal(m.Header.MsgType)
	}
	rep := k.recv(k.shell)
	if !strings.Contains(string(rep.Content), "KeyboardInterrupt") {
		t.Fatalf("interrupted reply %s", rep.Content)
	}
}

func TestForgedSignatureDropped(t *testing.T) {
	k := startKernel(t)
	forger, _ := wire.NewSigner("", []byte("not-the-key"), wire.Limits{})
	m := &wire.Message{Header: wire.NewHeader(k.session, "evil", "execute_request"), Content: json.RawMessage(`{"code":"pwned"}`)}
	frames, _ := forger.Encode(m)
	k.shell.SendMulti(zmq4.NewMsgFrom(frames...))
	// Unsigned too.
	frames[len(frames)-5] = nil
	k.shell.SendMulti(zmq4.NewMsgFrom(frames...))
	// Garbage frames.
	k.shell.SendMulti(zmq4.NewMsgFrom([]byte("garbage")))
	k.shell.SendMulti(zmq4.NewMsgFrom([]byte(wire.Delimiter), []byte("x")))
	// The kernel still serves, and ran nothing.
	req := k.send(k.shell, "kernel_info_request", nil)
	if rep := k.recv(k.shell); rep.Header.MsgType != "kernel_info_reply" {
		t.Fatal(rep.Header.MsgType)
	}
	k.iopubFor(req)
	k.h.mu.Lock()
	defer k.h.mu.Unlock()
	if k.h.count != 0 {
		t.Fatalf("forged request executed %d times", k.h.count)
	}
}

func TestUnknownTypeIgnored(t *testing.T) {
	k := startKernel(t)
	req := k.send(k.shell, "frobnicate_request", nil)
	if got := types(k.iopubFor(req)); got != "busy,idle" {
		t.Fatalf("iopub = %s", got)
	}
	k.send(k.control, "frobnicate_request", nil)
	k.send(k.shell, "kernel_info_request", nil)
	if rep := k.recv(k.shell); rep.Header.MsgType != "kernel_info_reply" {
		t.Fatal(rep.Header.MsgType)
	}
}

func TestStdinRoundTrip(t *testing.T) {
	k := startKernel(t)
	req := k.send(k.shell, "execute_request", map[string]any{"code": "input", "allow_stdin": true})
	ir := k.recv(k.stdin)
	if ir.Header.MsgType != "input_request" {
		t.Fatal(ir.Header.MsgType)
	}
	var c struct {
		Prompt   string `json:"prompt"`
		Password bool   `json:"password"`
	}
	ir.DecodeContent(&c)
	if c.Prompt != "name? " {
		t.Fatalf("prompt %q", c.Prompt)
	}
	if p, _ := ir.Parent(); p.MsgID != req.Header.MsgID {
		t.Fatal("input_request parent is not the execute request")
	}
	reply := &wire.Message{Header: wire.NewHeader(k.session, "tester", "input_reply"), ParentHeader: ir.RawHeader(), Content: json.RawMessage(`{"value":"Ada"}`)}
	frames, _ := k.signer.Encode(reply)
	k.stdin.SendMulti(zmq4.NewMsgFrom(frames...))
	k.recv(k.shell)
	msgs := k.iopubFor(req)
	if !strings.Contains(string(msgs[1].Content), "Ada") {
		t.Fatalf("stream %s", msgs[1].Content)
	}
	// allow_stdin false: Input refuses instead of hanging.
	req = k.send(k.shell, "execute_request", map[string]any{"code": "input", "allow_stdin": false})
	k.recv(k.shell)
	msgs = k.iopubFor(req)
	if !strings.Contains(string(msgs[1].Content), "does not support input") {
		t.Fatalf("stream %s", msgs[1].Content)
	}
}

func TestHeartbeat(t *testing.T) {
	k := startKernel(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := zmq4.NewReq(ctx)
	defer req.Close()
	if err := dialRetry(req, k.conn.Addr(k.conn.HBPort)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ping := []byte{'p', byte('0' + i)}
		if err := req.Send(zmq4.NewMsg(ping)); err != nil {
			t.Fatal(err)
		}
		msg, err := req.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if string(msg.Frames[0]) != string(ping) {
			t.Fatalf("echo %q", msg.Frames[0])
		}
	}
}

func TestShutdown(t *testing.T) {
	k := startKernel(t)
	req := k.send(k.control, "shutdown_request", map[string]any{"restart": true})
	rep := k.recv(k.control)
	if rep.Header.MsgType != "shutdown_reply" || !strings.Contains(string(rep.Content), `"restart":true`) {
		t.Fatalf("%s %s", rep.Header.MsgType, rep.Content)
	}
	if got := types(k.iopubFor(req)); got != "busy,shutdown_reply,idle" {
		t.Fatalf("iopub = %s: the last idle must go out before the sockets close", got)
	}
	select {
	case err := <-k.done:
		if err != nil {
			t.Fatalf("Serve returned %v after shutdown", err)
		}
		k.done <- nil // for cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after shutdown")
	}
	if len(k.h.shutdowns) != 1 || !k.h.shutdowns[0] {
		t.Fatalf("handler shutdowns %v", k.h.shutdowns)
	}
}

// TestHostileFrames speaks raw ZMTP to the shell port: a frame that
// announces 2^62 bytes must cost that peer its connection, not crash or
// wedge the kernel.
func TestHostileFrames(t *testing.T) {
	k := startKernel(t)
	addr := net.JoinHostPort(k.conn.IP, itoa(k.conn.ShellPort))
	for _, size := range []uint64{1 << 62, zmtp.MaxMessage + 1} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		greet := make([]byte, 64)
		greet[0], greet[9], greet[10], greet[11] = 0xff, 0x7f, 3, 0
		copy(greet[12:], "NULL")
		c.Write(greet)
		hdr := make([]byte, 9)
		hdr[0] = 0x02 // long message frame
		binary.BigEndian.PutUint64(hdr[1:], size)
		c.Write(hdr)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4096)
		var rerr error
		for rerr == nil {
			_, rerr = c.Read(buf)
		}
		var ne net.Error
		if errors.As(rerr, &ne) && ne.Timeout() {
			t.Fatalf("size %d: connection not dropped", size)
		}
		c.Close()
	}
	k.send(k.shell, "kernel_info_request", nil)
	if rep := k.recv(k.shell); rep.Header.MsgType != "kernel_info_reply" {
		t.Fatal(rep.Header.MsgType)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func testLogger() hclog.Logger {
	if os.Getenv("KERNEL_TEST_LOG") == "" {
		return nil
	}
	return hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: os.Stderr})
}

// TestShellTypesOnControl: as ipykernel does, control answers shell request
// types too, on its own goroutine, with the reply on control.
func TestShellTypesOnControl(t *testing.T) {
	k := startKernel(t)
	req := k.send(k.control, "execute_request", map[string]any{"code": "on control"})
	rep := k.recv(k.control)
	if rep.Header.MsgType != "execute_reply" {
		t.Fatal(rep.Header.MsgType)
	}
	if got := types(k.iopubFor(req)); got != "busy,stream,idle" {
		t.Fatalf("iopub = %s", got)
	}
}

// subscribe joins iopub and returns what the new subscriber is sent
// first: up to two messages, within wait.
func (k *testKernel) subscribe(wait time.Duration) []*wire.Message {
	k.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	if err := dialRetry(sub, k.conn.Addr(k.conn.IOPubPort)); err != nil {
		k.t.Fatal(err)
	}
	sub.SetOption(zmq4.OptionSubscribe, "")
	got := make(chan *wire.Message, 2)
	go func() {
		for range 2 {
			msg, err := sub.Recv()
			if err != nil {
				return
			}
			m, _ := k.signer.Decode(msg.Frames)
			got <- m
		}
	}()
	var out []*wire.Message
	deadline := time.After(wait)
	for len(out) < 2 {
		select {
		case m := <-got:
			out = append(out, m)
		case <-deadline:
			return out
		}
	}
	return out
}

// TestWelcomeNewSubscriber: each new iopub subscriber is sent
// iopub_welcome naming its subscription (protocol 5.5); one that joins an
// idle kernel is then told it is idle (it missed the last idle: Jupyter
// Server's activity monitor would otherwise take the kernel for busy); one
// that joins while a request runs is told nothing more (busy/idle of that
// request reach it in order).
func TestWelcomeNewSubscriber(t *testing.T) {
	k := startKernel(t)
	ms := k.subscribe(10 * time.Second)
	if len(ms) != 2 || ms[0].Header.MsgType != "iopub_welcome" || string(ms[0].Content) != `{"subscription":""}` {
		t.Fatalf("welcome %+v, want iopub_welcome then status idle", ms)
	}
	if m := ms[1]; m.Header.MsgType != "status" || string(m.Content) != `{"execution_state":"idle"}` {
		t.Fatalf("second message %+v, want status idle", m)
	}
	for _, m := range ms {
		if p, _ := m.Parent(); p.MsgID != "" {
			t.Fatalf("%s has parent %+v, want none", m.Header.MsgType, p)
		}
	}
	req := k.send(k.shell, "execute_request", map[string]any{"code": "sleep"})
	for {
		if busy := k.waitBusy(req); busy {
			break
		}
	}
	ms = k.subscribe(time.Second)
	if len(ms) == 0 || ms[0].Header.MsgType != "iopub_welcome" {
		t.Fatalf("a subscriber that joined a busy kernel got %+v, want iopub_welcome", ms)
	}
	if len(ms) > 1 && ms[1].Header.MsgType == "status" {
		t.Fatalf("a subscriber that joined a busy kernel was told %s", ms[1].Content)
	}
	k.srv.Interrupt(context.Background())
	k.recv(k.shell)
}

// waitBusy reports whether the next iopub message is a status of req.
func (k *testKernel) waitBusy(req *wire.Message) bool {
	select {
	case m := <-k.iopubMsgs:
		p, _ := m.Parent()
		return p.MsgID == req.Header.MsgID && m.Header.MsgType == "status"
	case <-time.After(10 * time.Second):
		k.t.Fatal("no busy for the request")
		return false
	}
}

// TestListening: Listening is closed once the ports accept connections, and
// stays open when a port cannot be bound (Serve returns that error).
func TestListening(t *testing.T) {
	k := startKernel(t)
	select {
	case <-k.srv.Listening():
	default:
		t.Fatal("Listening still open while the kernel serves")
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	conn, err := wire.NewConnectionInfo("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	conn.ShellPort = taken.Addr().(*net.TCPAddr).Port
	srv, err := New(Config{Conn: conn, Handler: newFake(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(context.Background()); err == nil || !strings.Contains(err.Error(), "bind shell") {
		t.Fatalf("Serve on a taken port = %v", err)
	}
	select {
	case <-srv.Listening():
		t.Fatal("Listening closed although the shell port could not be bound")
	default:
	}
}

// serveUntilListening serves cfg until the test ends and returns the
// server once it listens.
func serveUntilListening(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Handler == nil {
		cfg.Handler = newFake()
	}
	cfg.Logger = testLogger()
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-srv.Listening():
	case err := <-done:
		t.Fatalf("Serve: %v", err)
	}
	return srv
}

// ping checks the heartbeat at ep answers.
func ping(t *testing.T, ep string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := zmq4.NewReq(ctx)
	defer req.Close()
	if err := req.Dial(ep); err != nil {
		t.Fatal(err)
	}
	if err := req.Send(zmq4.NewMsgString("ping")); err != nil {
		t.Fatal(err)
	}
	if msg, err := req.Recv(); err != nil || string(msg.Frames[0]) != "ping" {
		t.Fatalf("heartbeat at %s: %q, %v", ep, msg.Frames, err)
	}
}

// TestPortsPicked: a port of 0 in the connection file is picked by the
// server as it binds (no probe and release: nothing can take it between),
// a free TCP port or the first free ipc name, as ipykernel does.
func TestPortsPicked(t *testing.T) {
	t.Run("tcp", func(t *testing.T) {
		conn := &wire.ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", Key: "k"}
		srv := serveUntilListening(t, Config{Conn: conn})
		got := srv.ConnectionInfo()
		if len(got.Unassigned()) != 0 {
			t.Fatalf("ports left unassigned: %+v", got)
		}
		if conn.ShellPort != 0 {
			t.Fatal("the caller's connection info was changed")
		}
		seen := map[int]bool{}
		for _, ch := range wire.Channels() {
			p := got.Port(ch)
			if seen[p] {
				t.Fatalf("port %d twice: %+v", p, got)
			}
			seen[p] = true
			if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", itoa(p))); err == nil {
				ln.Close()
				t.Fatalf("%s port %d is not bound", ch, p)
			}
		}
		ping(t, got.Addr(got.HBPort))
	})
	t.Run("ipc", func(t *testing.T) {
		dir := t.TempDir()
		base := filepath.Join(dir, "k")
		if err := os.WriteFile(base+"-1", nil, 0o600); err != nil { // taken
			t.Fatal(err)
		}
		conn := &wire.ConnectionInfo{Transport: "ipc", IP: base, Key: "k", ShellPort: 7}
		srv := serveUntilListening(t, Config{Conn: conn})
		got := srv.ConnectionInfo()
		want := &wire.ConnectionInfo{Transport: "ipc", IP: base, Key: "k", ShellPort: 7, IOPubPort: 2,
			StdinPort: 3, ControlPort: 4, HBPort: 5}
		if *got != *want {
			t.Fatalf("ConnectionInfo = %+v, want %+v", got, want)
		}
		ping(t, got.Addr(got.HBPort))
	})
}

// TestListenersGiven: listeners bound by the caller (Enterprise Gateway's
// launcher picks the ports in its range) are served as they are, and
// closed with the server.
func TestListenersGiven(t *testing.T) {
	conn := &wire.ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", Key: "k"}
	given := map[wire.Channel]net.Listener{}
	for _, ch := range wire.Channels() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		given[ch] = ln
		conn.SetPort(ch, ln.Addr().(*net.TCPAddr).Port)
	}
	srv, err := New(Config{Conn: conn, Listeners: given, Handler: newFake(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	<-srv.Listening()
	if got := srv.ConnectionInfo(); *got != *conn {
		t.Fatalf("ConnectionInfo = %+v, want %+v", got, conn)
	}
	ping(t, conn.Addr(conn.HBPort))
	cancel()
	<-done
	for ch, ln := range given {
		if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("%s listener not closed: %v", ch, err)
		}
	}
}

// TestStaleIPCSocket: a socket file left by a killed kernel (Jupyter
// restarts a kernel on the same connection file) is replaced, as libzmq
// replaces it; a socket something still accepts on is not taken over.
func TestStaleIPCSocket(t *testing.T) {
	dir := t.TempDir()
	conn := &wire.ConnectionInfo{Transport: "ipc", IP: filepath.Join(dir, "k"), Key: "k",
		ShellPort: 1, IOPubPort: 2, StdinPort: 3, ControlPort: 4, HBPort: 5}
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: conn.IPCPath(conn.IOPubPort), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	srv := serveUntilListening(t, Config{Conn: conn})
	ping(t, srv.ConnectionInfo().Addr(conn.HBPort))

	other := *conn
	other.IP = filepath.Join(dir, "other")
	live, err := net.Listen("unix", other.IPCPath(other.StdinPort))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	srv2, err := New(Config{Conn: &other, Handler: newFake(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv2.Serve(context.Background()); err == nil || !strings.Contains(err.Error(), "bind stdin") {
		t.Fatalf("Serve over a live socket = %v", err)
	}
	if c, err := net.Dial("unix", other.IPCPath(other.StdinPort)); err != nil {
		t.Fatalf("the live socket was taken over: %v", err)
	} else {
		c.Close()
	}
}
