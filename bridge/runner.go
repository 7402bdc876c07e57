package bridge

import (
	"context"
	"errors"
	"fmt"
	_ "image/gif"  // image sizes for the model's summary
	_ "image/jpeg" // "
	_ "image/png"  // "

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/headless"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// codeRunner runs the agent's execute_code in the backing kernel. The
// outputs go to the notebook cell that is running the prompt (unchanged,
// with that cell's request as parent) and, summarised, to the model.
type codeRunner struct{ b *Bridge }

// Run implements agent.CodeRunner.
func (cr *codeRunner) Run(ctx context.Context, code string) (agent.CodeResult, error) {
	b := cr.b
	k, err := b.kernelFor(ctx)
	if err != nil {
		return agent.CodeResult{}, err
	}
	cell := b.currentCell()
	var col headless.Collector
	h := client.Handlers{IOPub: func(m *wire.Message) {
		if cell != nil {
			cell.relayCode(m)
		}
		col.Add(m)
	}}
	done := make(chan struct{})
	defer close(done)
	go func() {
		// Cancelling the turn interrupts the code, as a user's interrupt would.
		select {
		case <-ctx.Done():
			ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5e9)
			defer cancel()
			if err := k.Interrupt(ictx); err != nil {
				b.log.Warn("interrupt agent code", "error", err)
			}
		case <-done:
		}
	}()
	// The reply comes after the KeyboardInterrupt: wait for it without ctx
	// so the backing kernel's queue stays in step, bounded by the bridge.
	rep, err := k.Client().Execute(b.ctx, code, client.ExecuteOptions{}, h)
	if err != nil {
		res := col.CodeResult()
		if errors.Is(err, client.ErrDead) {
			return res, fmt.Errorf("the backing kernel (%s) died while running the code; it restarts at the next execution", b.cfg.Backing)
		}
		return res, err
	}
	col.AddReply(rep)
	if ctx.Err() != nil {
		return col.CodeResult(), ctx.Err()
	}
	return col.CodeResult(), nil
}

// relayCode forwards the backing kernel's outputs of agent code to the
// cell. Status and execute_input are the backing kernel's bookkeeping and
// stay there.
func (c *cellOut) relayCode(m *wire.Message) {
	switch m.Header.MsgType {
	case "status", "execute_input":
		return
	}
	if err := c.r.PublishRaw(m.Header.MsgType, m.Content, m.Metadata, m.Buffers); err != nil {
		c.b.log.Debug("relay agent output", "error", err)
	}
}
