package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCallOverhead measures what a tool call through the Manager
// costs over the server's own time: an in-process go-sdk server whose echo
// tool times itself, reached in memory and over streamable HTTP on
// loopback. It reports the p50 and p90 of (call time − handler time).
func BenchmarkCallOverhead(b *testing.B) {
	var inHandler atomic.Int64 // ns spent in the handler by the last call
	srv := sdk.NewServer(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echoes."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			start := time.Now()
			r := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Echo: " + in.Message}}}
			inHandler.Store(int64(time.Since(start)))
			return r, nil, nil
		})
	run := func(b *testing.B, m *Manager) {
		input := json.RawMessage(`{"message":"hello"}`)
		ctx := context.Background()
		if _, err := m.Call(ctx, "mcp__b__echo", input, nil); err != nil {
			b.Fatal(err)
		}
		overhead := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for b.Loop() {
			start := time.Now()
			if _, err := m.Call(ctx, "mcp__b__echo", input, nil); err != nil {
				b.Fatal(err)
			}
			overhead = append(overhead, time.Since(start)-time.Duration(inHandler.Load()))
		}
		b.StopTimer()
		slices.Sort(overhead)
		b.ReportMetric(float64(overhead[len(overhead)/2].Microseconds())/1000, "ms-p50")
		b.ReportMetric(float64(overhead[len(overhead)*9/10].Microseconds())/1000, "ms-p90")
	}
	b.Run("memory", func(b *testing.B) {
		m := newManager(b, Options{transport: func(ServerConfig) sdk.Transport {
			ct, st := sdk.NewInMemoryTransports()
			if _, err := srv.Connect(context.Background(), st, nil); err != nil {
				b.Fatal(err)
			}
			return ct
		}}, ServerConfig{Name: "b", Command: "unused"})
		run(b, m)
	})
	b.Run("http", func(b *testing.B) {
		hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
		defer hs.Close()
		m := newManager(b, Options{}, ServerConfig{Name: "b", Type: "http", URL: hs.URL})
		run(b, m)
		m.Close()
	})
}
