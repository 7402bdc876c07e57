package messages

import (
	"encoding/json"
	"strings"
	"unicode"
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

// FirstLine is s's first non-blank line, made Printable and cut to n runes
// (an ellipsis marks the cut): an ask, a message or a title in one line
// for people.
func FirstLine(s string, n int) string {
	for _, l := range strings.Split(s, "\n") {
		if l = Printable(l, n); l != "" {
			return l
		}
	}
	return ""
}

// Printable is the one sanitiser of every string that reaches a person
// from a store, a kernel or another user (titles, owner names, workspaces,
// roles; in terminals, the magics' output, the panel and the sidebar): one
// line of text that cannot forge a row or move the cursor. Terminal escape
// sequences (CSI, OSC and the two-byte ones) are removed, every other
// control character, line or paragraph separator and run of white space
// becomes one space, the bidirectional overrides and isolates (which can
// reorder what a reader sees) are dropped, and the ends are trimmed. With
// n > 0 the result is cut to n runes, an ellipsis marking the cut.
func Printable(s string, n int) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean && !strings.HasPrefix(s, " ") && !strings.HasSuffix(s, " ") && !strings.Contains(s, "  ") {
		return cutTo(s, n)
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	rs := []rune(strings.ToValidUTF8(s, "\uFFFD"))
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == 0x1b || r == 0x9b || r == 0x9d: // ESC, CSI, OSC
			i = skipEscape(rs, i)
			continue
		case bidiControl(r):
			continue
		case unicode.IsSpace(r) || unicode.IsControl(r):
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return cutTo(b.String(), n)
}

// skipEscape returns the index of the last rune of the escape sequence
// that starts at rs[i] (ESC, or the 8-bit CSI or OSC).
func skipEscape(rs []rune, i int) int {
	kind := rs[i]
	if kind == 0x1b {
		if i+1 >= len(rs) {
			return i
		}
		switch rs[i+1] {
		case '[':
			kind = 0x9b
		case ']', 'P', '_', '^': // OSC, DCS, APC, PM: strings
			kind = 0x9d
		default:
			return i + 1
		}
		i++
	}
	for j := i + 1; j < len(rs); j++ {
		r := rs[j]
		if kind == 0x9b && r >= 0x40 && r <= 0x7e {
			return j
		}
		if kind == 0x9d && (r == 0x07 || r == 0x9c) {
			return j
		}
		if kind == 0x9d && r == 0x1b && j+1 < len(rs) && rs[j+1] == '\\' {
			return j + 1
		}
	}
	return len(rs) - 1
}

// bidiControl reports the marks, embeddings, overrides and isolates of
// Unicode's bidirectional algorithm.
func bidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// cutTo cuts s to n runes, the last an ellipsis; n <= 0 keeps it whole.
func cutTo(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
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
