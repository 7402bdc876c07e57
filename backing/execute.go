package backing

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// runCell runs e with do (an execute_request to one kernel) and collects
// what it produced. When ctx ends, the kernel is interrupted (interrupt)
// and the reply is still awaited, under the runner's lifetime life rather
// than ctx, for up to grace: after an interrupt the kernel replies, and
// waiting for that reply keeps its queue in step with ours. The error is
// do's; the caller says what it means.
func runCell(ctx, life context.Context, grace time.Duration, log hclog.Logger, e Exec,
	interrupt func(context.Context) error,
	do func(context.Context, client.Request, client.Handlers) (*wire.Message, error)) (Result, error) {
	var col Collector
	h := client.Handlers{Input: e.Input, IOPub: func(m *wire.Message) {
		if e.Output != nil {
			e.Output(outputOf(m))
		}
		col.Add(m)
	}}
	ectx, ecancel := context.WithCancel(life)
	defer ecancel()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owned by runCell: stopped by done and waited for below
		defer wg.Done()
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		ictx, icancel := context.WithTimeout(life, 5*time.Second)
		if err := interrupt(ictx); err != nil {
			log.Warn("interrupt code", "error", err)
		}
		icancel()
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			ecancel()
		}
	}()
	noStop := false // one cell at a time: nothing queued behind it to abort
	req := client.Request{MsgType: wire.MsgExecuteRequest, Content: wire.ExecuteRequest{Code: e.Code,
		UserExpressions: map[string]string{}, AllowStdin: e.Input != nil, StopOnError: &noStop}}
	rep, err := do(ectx, req, h)
	close(done)
	wg.Wait()
	if errors.Is(err, client.ErrIncomplete) {
		// The code ran; the cell and the result say what may be missing.
		h.IOPub(IncompleteNote())
		err = nil
	}
	col.AddReply(rep)
	return col.Result(), err
}

// IncompleteNote is the output a cell is given when the kernel's status
// idle for it was lost on the way (client.ErrIncomplete): a stderr stream
// that says some of its outputs may be missing, so that neither the
// notebook nor the model takes what came for whole.
func IncompleteNote() *wire.Message {
	content, _ := json.Marshal(wire.Stream{Name: "stderr", Text: incompleteText})
	return &wire.Message{Header: wire.Header{MsgType: wire.MsgStream}, Content: content}
}

const incompleteText = "[agentkernel] Some outputs of this cell may be missing: the backing kernel's messages were dropped on the way (its status idle never came after its reply).\n"
