package store

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/agentkernel/agentkernel/messages"
)

// Caps of tool summaries, as in estelle-pylon's MessageStore.
const (
	MaxToolInputChars  = 300
	MaxToolOutputChars = 500
)

// toolClass groups tool names (normalised: lower case, no '_' or '-') by
// how their input is summarised.
var toolClass = map[string]string{
	// File tools: the path only.
	"read": "file", "edit": "file", "write": "file", "multiedit": "file", "notebookedit": "file",
	"readfile": "file", "writetofile": "file", "applydiff": "file", "insertcontent": "file",
	"searchandreplace": "file", "editfile": "file", "editedexistingfile": "file",
	"newfilecreated": "file", "applieddiff": "file", "listcodedefinitionnames": "file",
	// Commands: description + first line of the command.
	"bash": "command", "executecommand": "command", "executecode": "command",
	"command": "command", "runcommand": "command",
	// Searches: pattern + path.
	"glob": "search", "grep": "search", "searchfiles": "search", "listfiles": "search",
	"listfilestoplevel": "search", "listfilesrecursive": "search", "codebasesearch": "search",
}

func normTool(name string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(name))
}

// SummarizeToolInput is the short form of a tool call for previews: the
// path only for file tools; the description and the first command line for
// commands; pattern and path for searches; otherwise the input's JSON cut to
// MaxToolInputChars. The full input stays stored; only previews use this.
func SummarizeToolInput(name string, input json.RawMessage) string {
	var fields map[string]any
	_ = json.Unmarshal(input, &fields) // not an object: fields stays nil
	str := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := fields[k].(string); ok && v != "" {
				return v
			}
		}
		return ""
	}
	var out string
	switch toolClass[normTool(name)] {
	case "file":
		out = str("file_path", "path", "notebook_path", "filePath", "notebookPath")
	case "command":
		cmd := firstLine(str("command", "code", "cmd"))
		if d := str("description"); d != "" {
			out = strings.TrimSpace(d + "\n" + cmd)
		} else {
			out = cmd
		}
	case "search":
		out = strings.TrimSpace(str("pattern", "regex", "query") + " " + str("path", "directory"))
	}
	if out == "" {
		out = compactJSON(input, fields)
	}
	return cutRunes(out, MaxToolInputChars)
}

// SummarizeToolOutput cuts a tool's output to MaxToolOutputChars.
func SummarizeToolOutput(output string) string {
	return cutRunes(output, MaxToolOutputChars)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// compactJSON renders the values of an object input as "key: value" pairs in
// key order, or the raw JSON when it is not an object.
func compactJSON(raw json.RawMessage, fields map[string]any) string {
	if fields == nil {
		return strings.TrimSpace(string(raw))
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v, ok := fields[k].(string)
		if !ok {
			b, _ := json.Marshal(fields[k])
			v = string(b)
		}
		parts = append(parts, k+": "+v)
	}
	return strings.Join(parts, ", ")
}

// previewText is the text a preview shows for a UI message, "" when the
// message is bookkeeping. Tool asks are summarised (their text is the tool
// call as JSON, {"tool": name, ...}); outputs are cut to MaxToolOutputChars.
func previewText(m messages.UIMessage) string {
	if uiRole(m, false) == roleMeta {
		return ""
	}
	text := m.Text
	switch {
	case m.Ask == messages.AskTool || m.Ask == messages.AskUseMCPServer:
		var call struct {
			Tool       string `json:"tool"`
			ServerName string `json:"serverName"`
			ToolName   string `json:"toolName"`
		}
		if json.Unmarshal([]byte(text), &call) == nil && (call.Tool != "" || call.ToolName != "") {
			name := call.Tool
			if name == "" {
				name = call.ToolName
			}
			return name + ": " + SummarizeToolInput(name, json.RawMessage(text))
		}
		return cutRunes(text, MaxToolInputChars)
	case m.Ask == messages.AskCommand:
		return firstLine(text)
	case m.Say == messages.SayCommandOutput || m.Ask == messages.AskCommandOutput ||
		m.Say == messages.SayCellExecuted || m.Say == messages.SayMCPServerResponse:
		return SummarizeToolOutput(text)
	case m.Say == messages.SayCondenseContext && m.ContextCondense != nil && text == "":
		return m.ContextCondense.Summary
	case m.Say == messages.SayReasoning && text == "":
		return m.Reasoning
	}
	if text == "" && len(m.Images) > 0 {
		return "[image]"
	}
	return text
}
