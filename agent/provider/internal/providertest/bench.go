// Package providertest holds what the providers' benchmarks share: a
// streamed answer of n words, and the per-chunk cost of reading it through
// a provider. Only tests import it.
package providertest

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// Words is an answer of n words, one streamed chunk each.
func Words(n int) []string {
	pieces := make([]string, n)
	for i := range pieces {
		pieces[i] = fmt.Sprintf("word%d ", i)
	}
	return pieces
}

// Chunks reads req's answer of n text chunks through p to its end, b.N
// times, and reports the cost of a chunk: wall time, and the process's CPU
// time (steadier than the wall time on a shared machine: it counts every
// goroutine's work).
func Chunks(b *testing.B, p provider.Provider, req provider.Request, n int) {
	b.ReportAllocs()
	cpu0 := CPUTime()
	for b.Loop() {
		s, err := p.Stream(context.Background(), req)
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
	b.ReportMetric(float64((CPUTime()-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/chunk")
}

// CPUTime is the CPU time this process has used, user and system.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
