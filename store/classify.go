package store

import (
	"github.com/agentkernel/agentkernel/messages"
)

// Roles of the derived role column, used by previews and first-user lookups.
const (
	roleUser      = "user"
	roleAssistant = "assistant"
	roleTool      = "tool"
	roleSystem    = "system"
	roleMeta      = "meta" // bookkeeping (api_req_*, checkpoints, status): never previewed
)

// uiKind is the ask or say kind of m.
func uiKind(m messages.UIMessage) string {
	if m.Type == messages.TypeAsk {
		return string(m.Ask)
	}
	return string(m.Say)
}

// uiRole classifies a UI message for previews. first says whether m is the
// first message of its session: the task the user typed is a say:text.
func uiRole(m messages.UIMessage, first bool) string {
	if m.Type == messages.TypeAsk {
		switch m.Ask {
		case messages.AskFollowup, messages.AskCompletionResult:
			return roleAssistant
		case messages.AskTool, messages.AskCommand, messages.AskCommandOutput, messages.AskUseMCPServer:
			return roleTool
		}
		return roleSystem
	}
	switch m.Say {
	case messages.SayText:
		if first {
			return roleUser
		}
		return roleAssistant
	case messages.SayUserFeedback, messages.SayUserFeedbackDiff:
		return roleUser
	case messages.SayReasoning, messages.SayCompletionResult, messages.SaySubtaskResult:
		return roleAssistant
	case messages.SayCommandOutput, messages.SayMCPServerRequestStarted, messages.SayMCPServerResponse,
		messages.SayCellExecuted, messages.SayImage, messages.SayDiffError:
		return roleTool
	case messages.SayAPIReqStarted, messages.SayAPIReqFinished, messages.SayAPIReqRetried,
		messages.SayAPIReqRetryDelayed, messages.SayAPIReqDeleted, messages.SayCheckpointSaved,
		messages.SayKernelStatus:
		return roleMeta
	}
	return roleSystem
}

// uiText is the indexed text of a UI message: its text, then its reasoning.
func uiText(m messages.UIMessage) string {
	switch {
	case m.Reasoning == "":
		return m.Text
	case m.Text == "":
		return m.Reasoning
	}
	return m.Text + "\n" + m.Reasoning
}

// apiKind is the kind column of an API message.
func apiKind(m messages.APIMessage) string {
	switch {
	case m.IsSummary:
		return "summary"
	case m.IsTruncationMarker:
		return "truncation_marker"
	case len(m.Content) > 0:
		return string(m.Content[0].Type)
	}
	return ""
}
