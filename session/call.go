package session

import (
	"context"
	"encoding/json"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/backing"
)

// Call runs a call of one of the agent's tools that comes from outside
// the model — a client of agentkernel's MCP server — in the current
// session (opened on first use), as agent.Task.Call says: the permission
// policy, the hooks and approve decide it, and it is recorded in the UI
// history and the event log. Code it runs reports its outputs to out. An
// execute_code call that ran joins the cells the model is given with the
// next prompt, as a cell the user ran does: the agent knows what was done
// to the kernel.
func (h *Host) Call(ctx context.Context, call provider.ToolCall, approve agent.Approver, out func(backing.Output)) (agent.Result, error) {
	c, err := h.session(ctx)
	if err != nil {
		return agent.Result{}, err
	}
	h.logCommand(ctx, c, "call", call.Name)
	res, err := c.task.Call(ctx, call, approve, codeSink(out))
	if call.Name == agent.ToolExecuteCode && err == nil {
		var in struct {
			Code string `json:"code"`
		}
		if json.Unmarshal(call.Input, &in) == nil {
			c.addCell(newCell(in.Code, res.Text, nil))
		}
	}
	return res, err
}

// Note writes an operation a surface did beside the host's own (an MCP
// client's interrupt or restart of the kernel) to the event log, as a
// command of the current session.
func (h *Host) Note(ctx context.Context, name, arg string) {
	c := h.active()
	h.logCommand(ctx, c, name, arg)
}

// Decide is what the current session decides of call now, before the
// hooks (which run with the call itself), and the call as it is decided,
// as agent.Task.Decide says: a surface that must ask before it calls (an
// MCP client answers in a second round trip) asks it first. An error is a
// call that cannot be done (a notebook call's unknown cell): there is
// nothing to ask.
func (h *Host) Decide(ctx context.Context, call provider.ToolCall) (agent.Decision, provider.ToolCall, error) {
	c, err := h.session(ctx)
	if err != nil {
		return agent.Decision{}, call, err
	}
	return c.task.Decide(ctx, call)
}
