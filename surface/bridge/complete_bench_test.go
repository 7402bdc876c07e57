package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
)

// BenchmarkCompleteOverhead is what an inline completion costs the kernel
// beyond the model, with a model that answers at once (in process): the
// frontend's request on the completion comm (ZeroMQ, the comm's decoding),
// the live namespace asked quietly of a real ipykernel whose user has a
// pandas DataFrame of 20 columns (a class of that shape without pandas),
// 50 other names and two functions, the prompt built from a cell and 10
// cells around it, and the reply on iopub. Sub-benchmark "namespace" is
// the namespace summary alone. Each reports its p50 and p90 in ms.
//
//	go test -run NONE -bench CompleteOverhead -benchtime 200x ./bridge
func BenchmarkCompleteOverhead(b *testing.B) {
	if _, err := client.FindSpec("python3"); err != nil {
		b.Skipf("no python3 kernelspec: %v", err)
	}
	ctx := context.Background()
	r := backing.NewLocal(backing.LocalOptions{Kernel: "python3"})
	defer r.Close()
	setup := `try:
    import pandas
    sales = pandas.DataFrame({'col%d' % i: [1.0] * 100 for i in range(20)})
except ImportError:
    class Frame:
        columns = ['col%d' % i for i in range(20)]
        dtypes = ['float64'] * 20
        shape = (100, 20)
    sales = Frame()
for i in range(50):
    globals()['v%d' % i] = i
def monthly(frame, year=2026):
    return frame
def total(rows, tax=0.2):
    return rows`
	if res, err := r.Execute(ctx, backing.Exec{Code: setup}); err != nil || res.Error != nil {
		b.Fatalf("setup: %v %+v", err, res.Error)
	}
	st, err := store.Open(ctx, store.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	h := session.New(session.Config{Store: st, Runner: r, Workspace: b.TempDir(), Kind: "bench", Model: "instant:m",
		OpenModel: func(string) (provider.Provider, error) { return instant{}, nil }})
	defer h.Close()

	b.Run("namespace", func(b *testing.B) {
		times := make([]time.Duration, 0, b.N)
		for b.Loop() {
			t0 := time.Now()
			vars, err := backing.Namespace(ctx, r)
			times = append(times, time.Since(t0))
			if err != nil || len(vars) < 50 {
				b.Fatalf("namespace: %d names, %v", len(vars), err)
			}
		}
		reportPercentiles(b, times)
	})

	b.Run("comm", func(b *testing.B) {
		conn, stop := serveHost(b, h, r, CodeCells)
		defer stop()
		id := uuid.NewString()
		replies := make(chan completeReply, 1)
		c, err := client.Dial(ctx, conn, client.Options{Logger: logger(), OnIOPub: func(m *wire.Message) {
			var cm struct {
				Data struct {
					Reply *completeReply `json:"reply"`
				} `json:"data"`
			}
			if m.Header.MsgType == wire.MsgCommMsg && json.Unmarshal(m.Content, &cm) == nil && cm.Data.Reply != nil {
				replies <- *cm.Data.Reply
			}
		}})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		send := func(data map[string]any) {
			if err := c.Send(ctx, client.Request{MsgType: wire.MsgCommMsg, Content: map[string]any{"comm_id": id, "data": data}}); err != nil {
				b.Fatal(err)
			}
		}
		if err := c.Send(ctx, client.Request{MsgType: wire.MsgCommOpen, Content: map[string]any{"comm_id": id,
			"target_name": CompleteTarget, "data": map[string]any{}}}); err != nil {
			b.Fatal(err)
		}
		var around []string
		for i := range 10 {
			around = append(around, fmt.Sprintf("summary_%d = sales.describe()\nprint(summary_%d)", i, i))
		}
		times := make([]time.Duration, 0, b.N)
		n := 0
		for b.Loop() {
			n++
			t0 := time.Now()
			send(map[string]any{"request": map[string]any{"id": fmt.Sprint("r", n), "prefix": "by_month = monthly(sales)\nsales.col",
				"suffix": "", "before": around, "after": around}})
			select {
			case rep := <-replies:
				times = append(times, time.Since(t0))
				if !rep.OK || rep.Text == "" {
					b.Fatalf("reply %+v", rep)
				}
			case <-time.After(10 * time.Second):
				b.Fatal("no reply")
			}
		}
		reportPercentiles(b, times)
	})
}

// reportPercentiles reports the p50 and p90 of times, in ms.
func reportPercentiles(b *testing.B, times []time.Duration) {
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(times[len(times)/2]), "p50-ms")
	b.ReportMetric(ms(times[len(times)*9/10]), "p90-ms")
}

// instant is a model that answers every request at once: "3 + 4".
type instant struct{}

func (instant) Name() string              { return "instant" }
func (instant) Model() provider.ModelInfo { return provider.ModelInfo{ID: "m", ContextWindow: 100000} }
func (instant) Stream(context.Context, provider.Request) (provider.Stream, error) {
	return &instantStream{}, nil
}

type instantStream struct{ done bool }

func (s *instantStream) Next() (provider.Event, error) {
	if s.done {
		return provider.Event{}, io.EOF
	}
	s.done = true
	return provider.Event{Type: provider.EventText, Text: "3 + 4"}, nil
}

func (*instantStream) Close() error { return nil }
