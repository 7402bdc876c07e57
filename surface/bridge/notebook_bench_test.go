package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/internal/nbcomm"
	"github.com/agentkernel/agentkernel/session/surfacetest"
)

// BenchmarkNotebookCommRead is the kernel's side of reading a 2,000-cell
// notebook from a frontend, each cell with an output of 2,000 characters
// (the browser test's big.ipynb): the read request on the notebook comm,
// the frontend's answer over ZeroMQ (a stand-in answering from memory; the
// page's own part is what tests/browser/notebookbench.mjs measures), and
// its decoding into the agent's cells. With agent's BenchmarkNotebookRead
// (bounding and writing them for the model) it is the kernel's share of
// the 30 ms goal. Reports p50 and p90 in ms: "whole" is a read of every
// cell (an extension that knows no ranges), "range" notebook_read's with
// its default budget (the extension sends the cells that fit), and
// "mirror-whole" and "mirror-range" the same reads answered from the
// kernel's mirror of a page that sends its changes (no round trip).
//
//	go test -run NONE -bench NotebookCommRead -benchtime 50x ./surface/bridge
func BenchmarkNotebookCommRead(b *testing.B) {
	b.Run("whole", func(b *testing.B) { benchNotebookCommRead(b, false, false) })
	b.Run("range", func(b *testing.B) { benchNotebookCommRead(b, true, false) })
	b.Run("mirror-whole", func(b *testing.B) { benchNotebookCommRead(b, false, true) })
	b.Run("mirror-range", func(b *testing.B) { benchNotebookCommRead(b, true, true) })
}

func benchNotebookCommRead(b *testing.B, ranges, mirror bool) {
	h := surfacetest.NewHost(b)
	br, conn, stop := serveBridgeOf(b, h.Host, h.Runner, PromptCells)
	defer stop()
	ctx := context.Background()
	output := json.RawMessage(`{"output_type": "stream", "name": "stdout", "text": "` + strings.Repeat("x", 1999) + `\n"}`)
	fe := &fakeFrontend{id: uuid.NewString(), ranges: ranges, mirror: mirror}
	for i := range 2000 {
		count := i + 1
		fe.cells = append(fe.cells, nbcomm.Cell{ID: fmt.Sprintf("big%d", i), CellType: "code", Source: fmt.Sprintf("v%d = %d  # cell %d", i, i, i),
			ExecutionCount: &count, Outputs: []json.RawMessage{output}})
	}
	c := fe.connect(ctx, b, conn, "big.ipynb")
	defer c.Close()
	nb := openedNotebook(b, br)
	if mirror {
		caughtUp(b, br, fe)
	}
	times := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		var v agent.NotebookView
		var err error
		if ranges {
			v, err = nb.(agent.RangeReader).ReadRange(ctx, agent.ReadRange{MaxChars: 32000, MaxOutput: 4000})
		} else {
			v, err = nb.Read(ctx, 2000)
		}
		times = append(times, time.Since(t0))
		if err != nil || len(v.Cells) == 0 || ranges != v.Part {
			b.Fatalf("read: %d cells (part %v), %v", len(v.Cells), v.Part, err)
		}
	}
	if mirror && fe.reads() > 0 {
		b.Fatalf("the page was asked for %d reads: the mirror was not used", fe.reads())
	}
	reportPercentiles(b, times)
}
