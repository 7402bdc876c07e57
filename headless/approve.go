package headless

import (
	"context"
	"fmt"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/messages"
)

// Approve is a headless approval policy: what the agent's asks get when no
// person answers them. The names are the kernel's (AGENTKERNEL_APPROVE).
type Approve string

// The policies.
const (
	ApproveNone     Approve = "none"      // deny every ask
	ApproveReadOnly Approve = "read-only" // deny every ask: only what needs no approval (reads) runs
	ApproveAll      Approve = "all"       // allow every ask
)

// ParseApprove checks a policy name; "" means none.
func ParseApprove(s string) (Approve, error) {
	switch Approve(s) {
	case "":
		return ApproveNone, nil
	case ApproveNone, ApproveReadOnly, ApproveAll:
		return Approve(s), nil
	}
	return "", fmt.Errorf("headless: unknown approval policy %q (want none, read-only or all)", s)
}

// Approver answers an ask of the agent: a tool or command approval, a
// followup question, a failed request to retry. It returns the answer and
// true, or false when it cannot answer (the turn then ends with the ask
// pending, to be answered by the next prompt). It is called on the
// goroutine of Session.Ask.
type Approver func(ctx context.Context, ask messages.UIMessage) (agent.Response, bool)

// NoAnswer is the followup answer of PolicyApprover: nobody is there to
// answer, so the model is told to decide by itself.
const NoAnswer = "No one can answer questions in this non-interactive run. Make a reasonable assumption, say which, and continue."

// PolicyApprover answers asks by policy p: approvals are allowed (all) or
// denied (none, read-only), followup questions get NoAnswer, and a failed
// model request is not retried. Answers are marked By "policy:NAME".
func PolicyApprover(p Approve) Approver {
	by := "policy:" + string(p)
	return func(_ context.Context, ask messages.UIMessage) (agent.Response, bool) {
		switch ask.Ask {
		case messages.AskFollowup:
			return agent.Response{Kind: agent.ResponseMessage, Text: NoAnswer, By: by}, true
		case messages.AskCommand, messages.AskTool, messages.AskUseMCPServer:
			if p == ApproveAll {
				return agent.Response{Kind: agent.ResponseYes, By: by}, true
			}
			return agent.Response{Kind: agent.ResponseNo, By: by}, true
		}
		// Resumable asks (api_req_failed, mistake_limit_reached, …) end
		// the run rather than loop.
		return agent.Response{Kind: agent.ResponseNo, By: by}, true
	}
}
