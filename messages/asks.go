package messages

import (
	"encoding/json"
	"strings"
)

// The texts of some asks are JSON; these are their shapes, and the one
// place they are written and read.

// ToolAsk is the text of an ask "tool" (a call of a tool that is neither
// execute_code nor an MCP server's), decoded.
type ToolAsk struct {
	Tool   string          `json:"tool"`
	Input  json.RawMessage `json:"input"`
	Reason string          `json:"reason,omitempty"`
	// Diff shows what the call would change: a notebook cell's lines,
	// removed ("- ") and added ("+ ").
	Diff string `json:"diff,omitempty"`
}

// ParseToolAsk decodes the text of an ask "tool".
func ParseToolAsk(m UIMessage) (ToolAsk, bool) {
	var a ToolAsk
	if m.Ask != AskTool || json.Unmarshal([]byte(m.Text), &a) != nil || a.Tool == "" {
		return a, false
	}
	return a, true
}

// FollowupAsk is the text of an ask "followup": the question and the
// answers the agent suggests.
type FollowupAsk struct {
	Question string   `json:"question"`
	Suggest  []string `json:"suggest,omitempty"`
}

// Text is the ask's text.
func (f FollowupAsk) Text() string {
	b, _ := json.Marshal(f)
	return string(b)
}

// ParseFollowup decodes the text of an ask "followup". A text that is not
// the JSON form is the question itself.
func ParseFollowup(m UIMessage) (FollowupAsk, bool) {
	if m.Ask != AskFollowup {
		return FollowupAsk{}, false
	}
	var a FollowupAsk
	if json.Unmarshal([]byte(m.Text), &a) != nil || a.Question == "" {
		return FollowupAsk{Question: m.Text}, true
	}
	return a, true
}

// FirstLine is s's first non-blank line cut to n runes (an ellipsis marks
// the cut): an ask, a message or a title in one line for people.
func FirstLine(s string, n int) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if r := []rune(l); len(r) > n {
				return string(r[:n-1]) + "…"
			}
			return l
		}
	}
	return ""
}

// ToolResult is the text of a tool_result message: what a file tool did.
type ToolResult struct {
	Tool string `json:"tool"`
	Path string `json:"path,omitempty"`
	OK   bool   `json:"ok"`
	// Summary is the tool's answer ("Replaced 1 occurrence in a.py."), or
	// its error.
	Summary string `json:"summary"`
	// Diff previews an edit: the lines removed ("-") and added ("+").
	Diff string `json:"diff,omitempty"`
}

// ParseToolResult decodes the text of a tool_result message.
func ParseToolResult(m UIMessage) (ToolResult, bool) {
	var r ToolResult
	if m.Say != SayToolResult || json.Unmarshal([]byte(m.Text), &r) != nil {
		return r, false
	}
	return r, true
}
