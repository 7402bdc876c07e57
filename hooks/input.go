package hooks

import "encoding/json"

// Input is what a hook reads on stdin, as JSON with Claude Code's field
// names: session_id, cwd, permission_mode and hook_event_name always, and
// per event source (SessionStart), prompt (UserPromptSubmit), tool_name,
// tool_input and tool_use_id (PreToolUse, PostToolUse), tool_response
// (PostToolUse) and stop_hook_active (Stop).
type Input struct {
	Event          Event
	SessionID      string
	CWD            string
	PermissionMode string
	// Source is "startup" or "resume" (SessionStart).
	Source string
	// Prompt is the user's text (UserPromptSubmit).
	Prompt string
	// ToolName, ToolInput and ToolUseID name the call (PreToolUse,
	// PostToolUse); ToolInput must be valid JSON or empty.
	ToolName  string
	ToolInput json.RawMessage
	ToolUseID string
	// ToolResponse is the call's result (PostToolUse).
	ToolResponse any
	// StopHookActive is set when a Stop hook already made this turn go on
	// (Stop).
	StopHookActive bool
}

// MarshalJSON writes the fields of i's event.
func (i Input) MarshalJSON() ([]byte, error) {
	m := map[string]any{
		"session_id":      i.SessionID,
		"cwd":             i.CWD,
		"permission_mode": i.PermissionMode,
		"hook_event_name": i.Event,
	}
	switch i.Event {
	case SessionStart:
		m["source"] = i.Source
	case UserPromptSubmit:
		m["prompt"] = i.Prompt
	case PreToolUse, PostToolUse:
		in := i.ToolInput
		if !json.Valid(in) {
			in = json.RawMessage("{}")
		}
		m["tool_name"], m["tool_input"], m["tool_use_id"] = i.ToolName, in, i.ToolUseID
		if i.Event == PostToolUse {
			m["tool_response"] = i.ToolResponse
		}
	case Stop:
		m["stop_hook_active"] = i.StopHookActive
	}
	return json.Marshal(m)
}

// subject is what matchers of i's event look at.
func (i Input) subject() string {
	if i.Event == SessionStart {
		return i.Source
	}
	return i.ToolName
}

// usesMatcher reports whether matchers select hooks for ev.
func usesMatcher(ev Event) bool { return ev == PreToolUse || ev == PostToolUse || ev == SessionStart }
