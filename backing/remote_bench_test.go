package backing

import (
	"context"
	"testing"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// BenchmarkRemoteExecute times an empty execute (reply and idle) on one
// kernel of a real Jupyter server, side by side: "websocket" is the
// channels WebSocket client alone (wsKernel.Do), "remote" the runner's
// Execute over it (what a cell pays: the interrupt watch, the collector).
// scripts/kernelbench -gateway measures the whole path, agentkernel's
// ZeroMQ front included.
func BenchmarkRemoteExecute(b *testing.B) {
	g := jupyterServer(b, b.TempDir())
	r, err := NewRemote(RemoteOptions{Gateway: g})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	if err := r.Ready(ctx); err != nil {
		b.Fatal(err)
	}
	k, ok := r.kernels.current()
	if !ok {
		b.Fatal("no kernel after Ready")
	}
	noStop := false
	req := client.Request{MsgType: wire.MsgExecuteRequest, Content: wire.ExecuteRequest{
		UserExpressions: map[string]string{}, StopOnError: &noStop}}
	b.Run("websocket", func(b *testing.B) {
		for b.Loop() {
			if _, err := k.Do(ctx, req, client.Handlers{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("remote", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.Execute(ctx, Exec{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
