package webview

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentkernel/agentkernel/messages"
)

// drained reports whether every client's queue is empty (or full: that
// client goes at the next broadcast) and no resync is under way: the
// server has handed everything to the sockets.
func (h *hub) drained(skip *conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.resyncing {
		return false
	}
	for c := range h.clients {
		if c == skip {
			continue
		}
		if n := len(c.send); n > 0 && n < cap(c.send) {
			return false
		}
	}
	return true
}

// stalledConn names, per server, a client the pacing must not wait for.
var stalledConn sync.Map // *Server → *conn

func waitDrained(s *Server) {
	var skip *conn
	if v, ok := stalledConn.Load(s); ok {
		skip = v.(*conn)
	}
	for !s.hub.drained(skip) {
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
}

// stream plays a scripted session of n updates on f: text messages
// streamed piece by piece, reasoning, an ask answered, kernel status,
// token totals and two rewinds. batch updates go out between waits for
// the clients' queues to drain (a model streams far slower than this).
func stream(s *Server, f *fakeAgent, n, batch int, piece func(seq int) string) {
	streamUntil(s, f, n, batch, piece, "final")
}

// streamUntil is stream ending with kernel status final.
func streamUntil(s *Server, f *fakeAgent, n, batch int, piece func(seq int) string, final string) {
	seq := 0
	var rewindAt []int64
	for seq < n {
		ts := f.nextTS()
		m := messages.UIMessage{TS: ts, Type: messages.TypeSay, Say: messages.SayText, Partial: true}
		if seq%3 == 1 {
			m.Say = messages.SayReasoning
		}
		f.create(m)
		f.status("busy")
		for i := 0; i < 100 && seq < n; i++ {
			if m.Say == messages.SayReasoning {
				m.Reasoning += piece(seq)
			} else {
				m.Text += piece(seq)
			}
			f.update(m)
			seq++
			if seq%batch == 0 {
				waitDrained(s)
			}
		}
		m.Partial = false
		f.update(m)
		f.totals(Totals{InputTokens: seq, OutputTokens: seq / 2, Cost: float64(seq) / 1e4, Requests: 1})
		if seq%1000 < 100 {
			ask := messages.UIMessage{TS: f.nextTS(), Type: messages.TypeAsk, Ask: messages.AskCommand, Text: "print(1)"}
			f.create(ask)
			f.status("waiting")
			_ = f.Respond(context.Background(), ask.TS, Response{Kind: ResponseYes})
			rewindAt = append(rewindAt, ask.TS)
		}
		if len(rewindAt) == 3 || len(rewindAt) == 6 {
			_, _ = f.Rewind(context.Background(), rewindAt[len(rewindAt)-2], RewindChoice{})
			rewindAt = append(rewindAt, 0) // once
			waitDrained(s)
		}
	}
	f.status(final)
}

// follow reads frames until the kernel status is "final".
func (c *testClient) follow(ctx context.Context) error { return c.followTo(ctx, "final") }

func (c *testClient) followTo(ctx context.Context, final string) error {
	for c.st.KernelStatus != final {
		if _, _, err := c.next(ctx); err != nil {
			return err
		}
	}
	return nil
}

func TestFanOut100Clients(t *testing.T) {
	const clients, updates = 100, 10000
	f := newFake()
	s := startServer(t, f.parts(), Options{})
	cs := make([]*testClient, clients)
	for i := range cs {
		cs[i] = dial(t, s)
		cs[i].until("state")
	}
	var wg sync.WaitGroup
	errs := make([]error, clients)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.follow(ctx)
		}()
	}
	stream(s, f, updates, 50, func(seq int) string { return fmt.Sprintf("w%d ", seq) })
	wg.Wait()
	want, _ := f.Snapshot(context.Background())
	wantJSON, _ := json.Marshal(want)
	mirror, _ := json.Marshal(s.State())
	if string(mirror) != string(wantJSON) {
		t.Fatalf("server mirror differs from the agent\n got %s\nwant %s", tail(mirror), tail(wantJSON))
	}
	for i, c := range cs {
		if errs[i] != nil {
			t.Fatalf("client %d: %v", i, errs[i])
		}
		got, _ := json.Marshal(c.st)
		if string(got) != string(wantJSON) {
			t.Fatalf("client %d ends in another state\n got %.500s\nwant %.500s", i, got, wantJSON)
		}
	}
	if d := s.Dropped(); d != 0 {
		t.Fatalf("%d clients dropped", d)
	}
	t.Logf("%d clients × %d frames, %d messages in the final state", clients, cs[0].seen, len(want.Messages))
}

func TestStalledClientDropped(t *testing.T) {
	const clients, updates = 5, 500
	f := newFake()
	s := startServer(t, f.parts(), Options{SendBuffer: 64})
	// The stalled client connects and then never reads.
	stalled, _, err := websocket.Dial(context.Background(), wsURL(s), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.CloseNow()
	for s.Clients() != 1 {
		runtime.Gosched()
	}
	s.hub.mu.Lock()
	for c := range s.hub.clients {
		stalledConn.Store(s, c)
	}
	s.hub.mu.Unlock()
	defer stalledConn.Delete(s)
	cs := make([]*testClient, clients)
	for i := range cs {
		cs[i] = dial(t, s)
		cs[i].until("state")
	}
	big := strings.Repeat("x", 8<<10)
	// Stream rounds until the stalled client is dropped (how much loopback
	// TCP buffers absorb varies); the pacing waits for the others only.
	for round := 1; s.Dropped() == 0; round++ {
		if round > 40 {
			t.Fatal("the stalled client was never dropped")
		}
		var wg sync.WaitGroup
		errs := make([]error, clients)
		final := fmt.Sprintf("final-%d", round)
		for i, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c.followTo(context.Background(), final)
			}()
		}
		streamUntil(s, f, updates, 20, func(int) string { return big }, final)
		wg.Wait()
		for i := range cs {
			if errs[i] != nil {
				t.Fatalf("client %d: %v", i, errs[i])
			}
		}
	}
	want, _ := json.Marshal(s.State())
	for i, c := range cs {
		if got, _ := json.Marshal(c.st); string(got) != string(want) {
			t.Fatalf("client %d ends in another state", i)
		}
	}
	if d := s.Dropped(); d != 1 {
		t.Fatalf("%d clients dropped, want the stalled one", d)
	}
	if s.Clients() != clients {
		t.Fatalf("%d clients left, want %d", s.Clients(), clients)
	}
	// It reconnects and resyncs with the full state.
	again := dial(t, s)
	again.until("state")
	if got, _ := json.Marshal(again.st); string(got) != string(want) {
		t.Fatal("reconnected client did not get the full state")
	}
}

// TestTimedOutWriteIsADrop: a client whose write timed out is dropped
// (counted, logged) even when its transport's reader notices first and
// detaches it — a WebSocket whose write times out is closed, so the
// server's read loop ends at once too. Under load the write timeout
// comes before the queue fills, and that race lost the stalled client
// from the count (TestStalledClientDropped never saw it dropped).
func TestTimedOutWriteIsADrop(t *testing.T) {
	p := NewPanel(newFake().parts(), PanelOptions{WriteTimeout: 50 * time.Millisecond})
	defer p.Close()
	tr := &readerFirst{p: p, client: make(chan *Client, 1), detached: make(chan struct{})}
	cl, err := p.Attach(tr)
	if err != nil {
		t.Fatal(err)
	}
	tr.client <- cl
	<-tr.detached
	if d := p.hub.dropped.Load(); d != 1 {
		t.Fatalf("%d clients dropped, want the one whose write timed out", d)
	}
	if n := p.Clients(); n != 0 {
		t.Fatalf("%d clients left", n)
	}
}

// readerFirst is a peer that reads nothing: its first write lasts until
// the write's deadline, and then its reader sees the connection end and
// detaches the client before the write returns.
type readerFirst struct {
	p        *Panel
	client   chan *Client
	detached chan struct{}
}

func (r *readerFirst) Write(ctx context.Context, _ []byte) error {
	<-ctx.Done()
	cl := <-r.client
	go func() { // waited for by the test (detached)
		defer close(r.detached)
		cl.Detach()
	}()
	// Return once Detach has made its first move, whichever it is.
	for !isDropped(cl.c) && r.p.Clients() != 0 {
		runtime.Gosched()
	}
	return ctx.Err()
}

func (r *readerFirst) Close(string, bool) {}

func isDropped(c *conn) bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// BenchmarkFanOut is the figure: 100 clients attached while the
// agent streams 10,000 updates. It reports the p50/p99/max latency from
// the agent's event to a client's decoded frame, and the server's memory.
func BenchmarkFanOut(b *testing.B) {
	const clients, updates = 100, 10000
	for b.Loop() {
		f := newFake()
		s, err := Start(f.parts(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		var sent [updates]atomic.Int64 // seq → publish time (ns)
		lat := make([][]time.Duration, clients)
		var wg sync.WaitGroup
		ready := make(chan struct{})
		for i := range clients {
			c := dial(b, s)
			c.until("state")
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-ready
				for {
					_, data, err := c.ws.Read(context.Background())
					now := time.Now().UnixNano()
					if err != nil {
						b.Error(err)
						return
					}
					frames, err := splitFrames(data)
					if err != nil {
						b.Error(err)
						return
					}
					for _, data := range frames {
						var fr struct {
							Type   string `json:"type"`
							Append string `json:"append"`
							Status string `json:"status"`
						}
						_ = json.Unmarshal(data, &fr)
						if fr.Type == "kernelStatus" && fr.Status == "final" {
							return
						}
						if fr.Type == "messageUpdated" && strings.HasPrefix(fr.Append, "w") {
							if seq, err := strconv.Atoi(strings.TrimSpace(fr.Append[1:])); err == nil {
								lat[i] = append(lat[i], time.Duration(now-sent[seq].Load()))
							}
						}
					}
				}
			}()
		}
		close(ready)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		stream(s, f, updates, 10, func(seq int) string {
			sent[seq].Store(time.Now().UnixNano())
			return fmt.Sprintf("w%d ", seq)
		})
		wg.Wait()
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		var all []time.Duration
		for _, l := range lat {
			all = append(all, l...)
		}
		slices.Sort(all)
		if len(all) == 0 {
			b.Fatal("no latencies")
		}
		q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))]) / 1e6 }
		b.ReportMetric(q(0.50), "p50-ms")
		b.ReportMetric(q(0.99), "p99-ms")
		b.ReportMetric(float64(all[len(all)-1])/1e6, "max-ms")
		b.ReportMetric(float64(len(all))/elapsed.Seconds(), "frames/s")
		b.ReportMetric(float64(after.HeapInuse)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(len(all)), "alloc-B/frame")
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func tail(b []byte) string {
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return string(b)
}

func TestBatchFrames(t *testing.T) {
	q := make(chan []byte, 200)
	var buf []byte
	if got := batchFrames([]byte(`{"a":1}`), q, &buf); string(got) != `{"a":1}` {
		t.Fatalf("alone: %s", got)
	}
	q <- []byte(`{"b":2}`)
	q <- []byte(`{"c":3}`)
	got := batchFrames([]byte(`{"a":1}`), q, &buf)
	frames, err := splitFrames(got)
	if err != nil || len(frames) != 3 || string(frames[2]) != `{"c":3}` || len(q) != 0 {
		t.Fatalf("batch %s: %v", got, err)
	}
	for range 150 {
		q <- []byte(`{"x":0}`)
	}
	frames, _ = splitFrames(batchFrames([]byte(`{"a":1}`), q, &buf))
	if len(frames) != maxBatchFrames || len(q) != 150-(maxBatchFrames-1) {
		t.Fatalf("bounded batch: %d frames, %d left", len(frames), len(q))
	}
}

// TestJoinDuringResync: a client that connects while a rewind's snapshot
// is still being read is shown the rewound history as its state, never
// the messages the rewind removed; a client connected before gets
// messagesRewound.
func TestJoinDuringResync(t *testing.T) {
	f := newFake()
	s := startServer(t, f.parts(), Options{})
	before := dial(t, s)
	before.until("state")
	for i := range 3 {
		f.create(messages.UIMessage{TS: f.nextTS(), Type: messages.TypeSay, Say: messages.SayText, Text: fmt.Sprint("m", i)})
	}
	before.waitFor(func() bool { return len(before.st.Messages) == 3 })
	gate := make(chan struct{})
	f.mu.Lock()
	f.gate = gate
	second := f.st.Messages[1].TS
	f.mu.Unlock()
	if _, err := f.Rewind(context.Background(), second, RewindChoice{}); err != nil {
		t.Fatal(err)
	}
	joined := dial(t, s)
	for s.Clients() != 2 {
		runtime.Gosched()
	}
	close(gate)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	typ, _, err := joined.next(ctx)
	if err != nil || typ != "state" {
		t.Fatalf("first frame %q (%v), want state", typ, err)
	}
	if n := len(joined.st.Messages); n != 1 || joined.st.Messages[0].Text != "m0" {
		t.Errorf("the client that joined during the resync was shown %+v, want only m0", joined.st.Messages)
	}
	before.until("messagesRewound")
	if n := len(before.st.Messages); n != 1 {
		t.Errorf("the client connected before has %d messages after the rewind, want 1", n)
	}
}
