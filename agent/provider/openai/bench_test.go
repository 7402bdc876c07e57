package openai

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/scripted"
)

// words is an answer of n words, one streamed chunk each.
func words(n int) []string {
	pieces := make([]string, n)
	for i := range pieces {
		pieces[i] = fmt.Sprintf("word%d ", i)
	}
	return pieces
}

// BenchmarkChunk is the provider's own cost per streamed chunk: a
// 2,000-word answer in the scripted server's bytes (OpenAI's format, with
// usage), served from memory so that no server's work is counted, read
// to its end through the SDK's request path and this package's decoding.
func BenchmarkChunk(b *testing.B) {
	const n = 2000
	body, err := scripted.Record("openai", scripted.Reply(scripted.Text(words(n)...),
		scripted.UsageStep(scripted.Usage{Input: 10, Output: n})))
	if err != nil {
		b.Fatal(err)
	}
	p, err := New(Config{APIKey: testKey, Model: "gpt-4.1", BaseURL: "http://model.invalid/v1",
		HTTPClient: &http.Client{Transport: scripted.Canned{Body: body}}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		s, err := p.Stream(context.Background(), simpleReq())
		if err != nil {
			b.Fatal(err)
		}
		texts := 0
		for {
			ev, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if ev.Type == provider.EventText {
				texts++
			}
		}
		s.Close()
		if texts != n {
			b.Fatalf("%d text events, want %d", texts, n)
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
