package store

import (
	"github.com/agentkernel/agentkernel/messages"
)

// Roles of the derived role column, used by previews and first-user lookups.
const (
	roleUser      = string(messages.RoleUser)
	roleAssistant = string(messages.RoleAssistant)
	roleMeta      = string(messages.RoleMeta)
)

// uiKind is the ask or say kind of m.
func uiKind(m messages.UIMessage) string {
	if m.Type == messages.TypeAsk {
		return string(m.Ask)
	}
	return string(m.Say)
}

// uiRole classifies a UI message for previews (messages.RoleOf).
func uiRole(m messages.UIMessage, first bool) string { return string(messages.RoleOf(m, first)) }

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
