package agent_test

import (
	"context"
	"testing"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/messages"
)

func TestPolicyApprover(t *testing.T) {
	tests := []struct {
		policy agent.ApprovalPolicy
		ask    messages.Ask
		want   agent.ResponseKind
	}{
		{agent.ApproveAll, messages.AskCommand, agent.ResponseYes},
		{agent.ApproveAll, messages.AskTool, agent.ResponseYes},
		{agent.ApproveNone, messages.AskCommand, agent.ResponseNo},
		{agent.ApproveReadOnly, messages.AskTool, agent.ResponseNo},
		{agent.ApproveAll, messages.AskFollowup, agent.ResponseMessage},
		{agent.ApproveNone, messages.AskFollowup, agent.ResponseMessage},
		{agent.ApproveAll, messages.AskMistakeLimitReached, agent.ResponseNo},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy)+"/"+string(tt.ask), func(t *testing.T) {
			r, ok := tt.policy.Approver()(context.Background(), messages.UIMessage{Type: messages.TypeAsk, Ask: tt.ask})
			if !ok || r.Kind != tt.want || r.By != "policy:"+string(tt.policy) {
				t.Errorf("got %+v %v, want %s", r, ok, tt.want)
			}
		})
	}
}

func TestParseApprovalPolicy(t *testing.T) {
	for in, want := range map[string]agent.ApprovalPolicy{"": agent.ApproveNone, "none": agent.ApproveNone, "read-only": agent.ApproveReadOnly, "all": agent.ApproveAll} {
		if got, err := agent.ParseApprovalPolicy(in); err != nil || got != want {
			t.Errorf("ParseApprovalPolicy(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := agent.ParseApprovalPolicy("yes"); err == nil {
		t.Error("ParseApprovalPolicy(yes) succeeded")
	}
}
