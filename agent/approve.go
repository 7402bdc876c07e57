package agent

import (
	"context"
	"fmt"

	"github.com/agentkernel/agentkernel/messages"
)

// ApprovalPolicy answers the agent's asks when no person can (nbconvert,
// agentkernel run and ask without a terminal): AGENTKERNEL_APPROVE, the
// kernelspec's --approve, ask's --approve. It is not the permission Mode,
// which decides what needs asking in the first place.
type ApprovalPolicy string

// The policies.
const (
	ApproveNone     ApprovalPolicy = "none"      // deny every ask
	ApproveReadOnly ApprovalPolicy = "read-only" // deny every ask: only what needs no approval (reads) runs
	ApproveAll      ApprovalPolicy = "all"       // allow every ask
)

// ParseApprovalPolicy checks a policy name; "" means none.
func ParseApprovalPolicy(s string) (ApprovalPolicy, error) {
	switch ApprovalPolicy(s) {
	case "":
		return ApproveNone, nil
	case ApproveNone, ApproveReadOnly, ApproveAll:
		return ApprovalPolicy(s), nil
	}
	return "", fmt.Errorf("agent: unknown approval policy %q (want none, read-only or all)", s)
}

// Approver answers an ask of the agent: a tool or command approval, a
// followup question, a failed request to retry. It returns the answer and
// true, or false when it cannot answer (the turn then ends with the ask
// pending, to be answered by the next prompt).
type Approver func(ctx context.Context, ask messages.UIMessage) (Response, bool)

// NoAnswer is the followup answer of a policy: nobody is there to answer,
// so the model is told to decide by itself.
const NoAnswer = "No one can answer questions in this non-interactive run. Make a reasonable assumption, say which, and continue."

// Decide answers an approval by the policy: allowed (all) or denied (none,
// read-only), marked By "policy:NAME".
func (p ApprovalPolicy) Decide() Response {
	by := "policy:" + string(p)
	if p == ApproveAll {
		return Response{Kind: ResponseYes, By: by}
	}
	return Response{Kind: ResponseNo, By: by}
}

// Approver answers every ask by the policy: approvals as Decide says,
// followup questions with NoAnswer, and a failed model request is not
// retried (resumable asks end the run rather than loop).
func (p ApprovalPolicy) Approver() Approver {
	return func(_ context.Context, ask messages.UIMessage) (Response, bool) {
		switch ask.Ask {
		case messages.AskFollowup:
			return Response{Kind: ResponseMessage, Text: NoAnswer, By: "policy:" + string(p)}, true
		case messages.AskCommand, messages.AskTool, messages.AskUseMCPServer:
			return p.Decide(), true
		}
		return Response{Kind: ResponseNo, By: "policy:" + string(p)}, true
	}
}
