package bridge

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/messages"
)

// benchHandler runs the benchmark body inside a real execute request, so
// that display updates go through the real server to a real subscriber.
type benchHandler struct {
	b    *testing.B
	text string
}

func (h *benchHandler) KernelInfo() kernel.KernelInfo        { return kernel.KernelInfo{} }
func (h *benchHandler) Interrupt(context.Context) error      { return nil }
func (h *benchHandler) Shutdown(context.Context, bool) error { return nil }

func (h *benchHandler) HandleShell(ctx context.Context, r *kernel.Request) bool {
	if r.Type() != "execute_request" {
		return false
	}
	c := newCellOut(&Bridge{log: logger()}, r)
	m := messages.UIMessage{TS: 1, Type: messages.TypeSay, Say: messages.SayText}
	h.b.ReportAllocs()
	h.b.ResetTimer()
	for i := 0; i < h.b.N; i++ {
		m.Text = h.text[:len(h.text)*(i%100+1)/100] // growing, as a stream does
		c.show(m, func(s string) string { return s })
	}
	h.b.StopTimer()
	r.Reply("execute_reply", map[string]any{"status": "ok", "execution_count": 1})
	return true
}

// BenchmarkDisplayUpdate is the kernel's cost of one display update of a
// streamed answer up to ~60 KB (10,000 tokens): render, encode, sign and
// publish on iopub to a subscribed client.
func BenchmarkDisplayUpdate(b *testing.B) {
	conn, err := wire.NewConnectionInfo("127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	h := &benchHandler{b: b, text: strings.Repeat("token ", 10000)}
	srv, err := kernel.New(kernel.Config{Conn: conn, Handler: h, Logger: logger()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	c, err := client.Dial(ctx, conn, client.Options{Logger: logger()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	updates := 0
	ectx, ecancel := context.WithTimeout(ctx, 5*time.Minute)
	defer ecancel()
	if _, err := c.Execute(ectx, "bench", client.ExecuteOptions{}, client.Handlers{IOPub: func(m *wire.Message) {
		if strings.HasSuffix(m.Header.MsgType, "display_data") {
			updates++
		}
	}}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(updates)/float64(b.N), "published/op")
	cancel()
	<-done
}
