package session

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/anthropic"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// BenchmarkAnswer is the session's cost per streamed chunk of an answer,
// from the model's bytes to the listeners: the provider's decoding, the
// task's partial messages, the store (real SQLite), the host's event
// fan-out and a listener that reads each message as the bridge does. The
// model's bytes (the scripted server's, one word of prose a chunk) come from memory,
// so that no server's work is counted; each iteration asks in a new
// session (not timed).
func BenchmarkAnswer(b *testing.B) {
	for _, api := range []string{"openai", "anthropic"} {
		for _, n := range []int{2000, 10000} {
			b.Run(fmt.Sprintf("%s/words=%d", api, n), func(b *testing.B) { benchAnswer(b, api, n) })
		}
	}
}

func benchAnswer(b *testing.B, api string, n int) {
	ctx := context.Background()
	vocab := strings.Fields("the kernel streams each word of the answer into the cell while the model " +
		"writes it and a notebook shows what it has so far with markdown tables code and lists")
	pieces := make([]string, n)
	for i := range pieces {
		pieces[i] = vocab[i%len(vocab)] + " "
	}
	want := strings.Join(pieces, "")
	body, err := scripted.Record(api, scripted.Reply(scripted.Text(pieces...), scripted.UsageStep(scripted.Usage{Input: 10, Output: n})))
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: scripted.Canned{Body: body}}
	st, err := store.Open(ctx, store.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	h := New(Config{Store: st, Workspace: b.TempDir(), Runner: &fakeRunner{}, Model: api + ":bench",
		OpenModel: func(string) (provider.Provider, error) {
			if api == "anthropic" {
				return anthropic.New(anthropic.Config{APIKey: "k", BaseURL: "http://model.invalid", Model: "bench", HTTPClient: client})
			}
			return openai.New(openai.Config{APIKey: "k", BaseURL: "http://model.invalid/v1", Model: "bench", HTTPClient: client})
		}})
	defer h.Close()
	var shown string
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		b.StopTimer()
		if _, err := h.NewSession(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := h.Submit(ctx, "go", Follow{Events: func(e agent.Event) {
			if e.Message != nil && e.Message.Partial {
				shown = e.Message.Text
			}
		}})
		if err != nil {
			b.Fatal(err)
		}
		if res.Text != want || !strings.HasPrefix(want, shown) {
			b.Fatalf("answer of %d bytes, shown %d, want %d", len(res.Text), len(shown), len(want))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
	// The process's CPU time: steadier than the wall time on a shared
	// machine (it counts every goroutine's work, the store's writer too).
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/chunk")
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
