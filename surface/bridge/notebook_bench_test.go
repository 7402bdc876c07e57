package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
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

// BenchmarkNotebookCommCall is an MCP client's notebook_insert_cell and
// notebook_edit_cell as the kernel runs them (Host.Call: decided, recorded
// in the UI history, the world's checkpoint around the step, the cell
// change stored for a rewind), on a page that answers at once and sends
// its changes (the mirror), in a notebook of 1 and of 2,001 cells: the
// kernel's share of tests/browser/peerbench.mjs's figures, between the
// page's reply and the tool's result. The notebook's file is in the
// workspace, and changed before each call (outside the figures), as
// jupyter-collaboration saves the page's document after a change: the
// file checkpoints see it. Reports p50 and p90 in ms.
//
//	go test -run NONE -bench NotebookCommCall -benchtime 200x ./surface/bridge
func BenchmarkNotebookCommCall(b *testing.B) {
	for _, cells := range []int{1, 2001} {
		b.Run(fmt.Sprintf("insert-%d", cells), func(b *testing.B) { benchNotebookCommCall(b, agent.ToolNotebookInsert, cells) })
		b.Run(fmt.Sprintf("edit-%d", cells), func(b *testing.B) { benchNotebookCommCall(b, agent.ToolNotebookEdit, cells) })
	}
}

func benchNotebookCommCall(b *testing.B, tool string, cells int) {
	h := surfacetest.NewHost(b)
	br, conn, stop := serveBridgeOf(b, h.Host, h.Runner, CodeCells)
	defer stop()
	ctx := context.Background()
	fe := &fakeFrontend{id: uuid.NewString(), mirror: true}
	for i := range cells {
		fe.cells = append(fe.cells, nbcomm.Cell{ID: fmt.Sprintf("c%d", i), CellType: "code", Source: fmt.Sprintf("v%d = %d", i, i)})
	}
	file := filepath.Join(h.Host.Workspace(), "work.ipynb")
	output := `{"output_type": "stream", "name": "stdout", "text": "` + strings.Repeat("x", 1999) + `\n"}`
	save := func(i int) { // the page's save: the cells, each with 2,000 characters of output
		var sb strings.Builder
		fmt.Fprintf(&sb, `{"cells": [{"id": "c0", "source": "x = %d", "outputs": []}`, i)
		for j := 1; j < cells; j++ {
			fmt.Fprintf(&sb, `, {"id": "c%d", "source": "v%d = %d", "outputs": [%s]}`, j, j, j, output)
		}
		sb.WriteString("]}")
		if err := os.WriteFile(file, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	save(-2)
	c := fe.connect(ctx, b, conn, "work.ipynb")
	defer c.Close()
	openedNotebook(b, br)
	caughtUp(b, br, fe)
	call := func(i int) provider.ToolCall {
		in := fmt.Sprintf(`{"index": 0, "source": "x = %d"}`, i)
		if tool == agent.ToolNotebookEdit {
			in = fmt.Sprintf(`{"id": "c0", "source": "x = %d"}`, i)
		}
		return provider.ToolCall{ID: fmt.Sprintf("call%d", i), Name: tool, Input: json.RawMessage(in)}
	}
	if _, err := h.Host.Call(ctx, call(-1), agent.ApproveAll.Approver(), nil); err != nil {
		b.Fatal(err) // the session opened, its first call out of the figures
	}
	times := make([]time.Duration, 0, b.N)
	i := 0
	for b.Loop() {
		b.StopTimer()
		save(i)
		b.StartTimer()
		t0 := time.Now()
		res, err := h.Host.Call(ctx, call(i), agent.ApproveAll.Approver(), nil)
		times = append(times, time.Since(t0))
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %s", tool, err, res.Text)
		}
		i++
	}
	reportPercentiles(b, times)
}
