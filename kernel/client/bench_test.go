package client

import (
	"context"
	"slices"
	"testing"
	"time"
)

// reportPercentiles reports the p50 and p99 of per-op durations in µs.
func reportPercentiles(b *testing.B, durs []time.Duration) {
	b.Helper()
	if len(durs) == 0 {
		return
	}
	slices.Sort(durs)
	pct := func(p float64) float64 {
		i := int(p * float64(len(durs)-1))
		return float64(durs[i].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// benchRoundTrips measures op against one ipykernel.
func benchRoundTrips(b *testing.B, op func(ctx context.Context, c *Client) error) {
	k := startKernel(b, python3Spec(b), Options{})
	c := k.Client()
	ctx := context.Background()
	for range 20 { // warm up
		if err := op(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := op(ctx, c); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	b.StopTimer()
	reportPercentiles(b, durs)
}

// BenchmarkKernelInfo is a kernel_info round trip (reply and idle).
func BenchmarkKernelInfo(b *testing.B) {
	benchRoundTrips(b, func(ctx context.Context, c *Client) error {
		_, err := c.KernelInfo(ctx)
		return err
	})
}

// BenchmarkExecuteEmpty is an empty execute_request (reply and idle).
func BenchmarkExecuteEmpty(b *testing.B) {
	benchRoundTrips(b, func(ctx context.Context, c *Client) error {
		_, err := c.Execute(ctx, "", ExecuteOptions{}, Handlers{})
		return err
	})
}

// BenchmarkStart is launching ipykernel until it is ready, plus Shutdown.
func BenchmarkStart(b *testing.B) {
	spec := python3Spec(b)
	dir := b.TempDir()
	durs := make([]time.Duration, 0, b.N)
	for range b.N {
		t0 := time.Now()
		k, err := Start(context.Background(), spec, Options{Logger: testLogger(), ConnectionDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
		if err := k.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	reportPercentiles(b, durs)
}
