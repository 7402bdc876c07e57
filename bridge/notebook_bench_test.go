package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/internal/nbcomm"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/session/surfacetest"
)

// BenchmarkNotebookCommRead is the kernel's side of reading a 2,000-cell
// notebook from a frontend, each cell with an output of 2,000 characters
// (the browser test's big.ipynb): the read request on the notebook comm,
// the frontend's answer over ZeroMQ (a stand-in answering from memory; the
// page's own part is what tests/browser/notebookbench.mjs measures), and
// its decoding into the agent's cells. With agent's BenchmarkNotebookRead
// (bounding and writing them for the model) it is the kernel's share of
// the 30 ms goal. Reports p50 and p90 in ms.
//
//	go test -run NONE -bench NotebookCommRead -benchtime 50x ./bridge
func BenchmarkNotebookCommRead(b *testing.B) {
	h := surfacetest.NewHost(b)
	br, conn, stop := serveBridgeOf(b, h.Host, h.Runner, PromptCells)
	defer stop()
	ctx := context.Background()
	output := json.RawMessage(`{"output_type": "stream", "name": "stdout", "text": "` + strings.Repeat("x", 1999) + `\n"}`)
	fe := &fakeFrontend{id: uuid.NewString()}
	for i := range 2000 {
		count := i + 1
		fe.cells = append(fe.cells, nbcomm.Cell{ID: fmt.Sprintf("big%d", i), CellType: "code", Source: fmt.Sprintf("v%d = %d  # cell %d", i, i, i),
			ExecutionCount: &count, Outputs: []json.RawMessage{output}})
	}
	c := fe.connect(ctx, b, conn, "big.ipynb")
	defer c.Close()
	var nb session.Cells
	for deadline := time.Now().Add(time.Minute); nb == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		nb = br.notebooks.Current()
	}
	if nb == nil {
		b.Fatal("the frontend's notebook comm did not open")
	}
	times := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		v, err := nb.Read(ctx, 2000)
		times = append(times, time.Since(t0))
		if err != nil || len(v.Cells) != 2000 {
			b.Fatalf("read: %d cells, %v", len(v.Cells), err)
		}
	}
	reportPercentiles(b, times)
}
