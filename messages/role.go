package messages

// The roles of UI messages (RoleOf). RoleUser and RoleAssistant are also
// the API messages' roles.
const (
	RoleTool   Role = "tool"
	RoleSystem Role = "system"
	// RoleMeta is bookkeeping (api_req_*, checkpoints, status): never
	// previewed.
	RoleMeta Role = "meta"
)

// RoleOf is the role of a UI message for previews, searches and history
// filters: user, assistant, tool, system or meta. first says whether m is
// the first message of its session: the task the user typed is a say:text.
func RoleOf(m UIMessage, first bool) Role {
	if m.Type == TypeAsk {
		switch m.Ask {
		case AskFollowup, AskCompletionResult:
			return RoleAssistant
		case AskTool, AskCommand, AskCommandOutput, AskUseMCPServer:
			return RoleTool
		}
		return RoleSystem
	}
	if m.Decision != nil {
		return RoleTool // a permission decision on a tool call, not the model's words
	}
	switch m.Say {
	case SayText:
		if first {
			return RoleUser
		}
		return RoleAssistant
	case SayUserFeedback, SayUserFeedbackDiff:
		return RoleUser
	case SayReasoning, SayCompletionResult, SaySubtaskResult:
		return RoleAssistant
	case SayCommandOutput, SayMCPServerRequestStarted, SayMCPServerResponse,
		SayCellExecuted, SayImage, SayDiffError, SayToolResult:
		return RoleTool
	case SayAPIReqStarted, SayAPIReqFinished, SayAPIReqRetried,
		SayAPIReqRetryDelayed, SayAPIReqDeleted, SayCheckpointSaved,
		SayKernelStatus:
		return RoleMeta
	}
	return RoleSystem
}
