package scripted

import (
	"fmt"
	"slices"
	"strings"
)

// The server refuses what the real APIs refuse, with their status (400) and
// error bodies, so that a test sees what production would: a request the
// real API would turn away never reaches a scripted turn (it takes none
// from the queue), and is recorded as received.

// anthropicRefusal is why the Anthropic Messages API would refuse body, or
// "" when it would take it:
//   - tool_use or tool_result blocks with no tools defined;
//   - a tool_use whose tool_result is not in the next message, or a
//     tool_result with no tool_use in the message before;
//   - an empty text block, or a message with no content;
//   - a role other than user, assistant and system (Claude Code sends
//     system messages among the turns; they are not turns).
//
// Consecutive messages of one role are combined into one turn, as the API
// documents, before the turns are checked.
func anthropicRefusal(body map[string]any) string {
	list, _ := body["messages"].([]any)
	tools, _ := body["tools"].([]any)
	type turn struct {
		role   string
		blocks []map[string]any
	}
	var turns []turn
	for i, m := range list {
		msg, _ := m.(map[string]any)
		role, _ := msg["role"].(string)
		switch role {
		case "user", "assistant":
		case "system":
			continue // Claude Code sends system messages among the turns, and the API takes them
		default:
			return fmt.Sprintf("messages.%d.role: Input should be 'user', 'assistant' or 'system'", i)
		}
		var blocks []map[string]any
		switch c := msg["content"].(type) {
		case string:
			if c == "" && i != len(list)-1 {
				return fmt.Sprintf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
			}
			blocks = []map[string]any{{"type": "text", "text": c}}
		case []any:
			if len(c) == 0 && !(role == "assistant" && i == len(list)-1) {
				return fmt.Sprintf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
			}
			for j, b := range c {
				bm, _ := b.(map[string]any)
				typ, _ := bm["type"].(string)
				if typ == "text" {
					if s, _ := bm["text"].(string); s == "" {
						return fmt.Sprintf("messages.%d.content.%d.text: text content blocks must be non-empty", i, j)
					}
				}
				if (typ == "tool_use" || typ == "tool_result") && len(tools) == 0 {
					return "Requests which include `tool_use` or `tool_result` blocks must define tools."
				}
				blocks = append(blocks, bm)
			}
		default:
			return fmt.Sprintf("messages.%d.content: Input should be a valid list", i)
		}
		if n := len(turns); n > 0 && turns[n-1].role == role {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			continue
		}
		turns = append(turns, turn{role: role, blocks: blocks})
	}
	for i, t := range turns {
		uses := idsOf(t.blocks, "tool_use", "id")
		if len(uses) > 0 {
			var next []string
			if i+1 < len(turns) {
				next = idsOf(turns[i+1].blocks, "tool_result", "tool_use_id")
			}
			if missing := without(uses, next); len(missing) > 0 {
				return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
					"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(missing, ", "))
			}
		}
		if results := idsOf(t.blocks, "tool_result", "tool_use_id"); len(results) > 0 {
			var prev []string
			if i > 0 {
				prev = idsOf(turns[i-1].blocks, "tool_use", "id")
			}
			if extra := without(results, prev); len(extra) > 0 {
				return fmt.Sprintf("messages.%d.content.0: unexpected `tool_use_id` found in `tool_result` blocks: %s. "+
					"Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, strings.Join(extra, ", "))
			}
		}
	}
	return ""
}

// openaiRefusal is why the OpenAI chat completions API would refuse body,
// or "" when it would take it: a tool message that does not answer a
// tool call of the assistant message before it, an assistant message
// whose tool calls are not all answered by the tool messages right after
// it, an unknown role.
func openaiRefusal(body map[string]any) string {
	list, _ := body["messages"].([]any)
	var open []string // the tool calls of the last assistant message not yet answered
	answering := false
	for _, m := range list {
		msg, _ := m.(map[string]any)
		role, _ := msg["role"].(string)
		switch role {
		case "system", "developer", "user", "assistant":
			if len(open) > 0 {
				return fmt.Sprintf("An assistant message with 'tool_calls' must be followed by tool messages responding to each "+
					"'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(open, ", "))
			}
			answering = false
			if role == "assistant" {
				calls, _ := msg["tool_calls"].([]any)
				for _, c := range calls {
					cm, _ := c.(map[string]any)
					if id, _ := cm["id"].(string); id != "" {
						open = append(open, id)
					}
				}
				answering = len(open) > 0
			}
		case "tool":
			id, _ := msg["tool_call_id"].(string)
			if !answering || !slices.Contains(open, id) {
				return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
			}
			open = without(open, []string{id})
		default:
			return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", role)
		}
	}
	if len(open) > 0 {
		return fmt.Sprintf("An assistant message with 'tool_calls' must be followed by tool messages responding to each "+
			"'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(open, ", "))
	}
	return ""
}

// idsOf returns the field key of the blocks of type typ.
func idsOf(blocks []map[string]any, typ, key string) []string {
	var out []string
	for _, b := range blocks {
		if t, _ := b["type"].(string); t == typ {
			if id, _ := b[key].(string); id != "" {
				out = append(out, id)
			}
		}
	}
	return out
}

// without returns the items of a that are not in b.
func without(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

func (anthropicFormat) refusal(body map[string]any) string { return anthropicRefusal(body) }
func (openaiFormat) refusal(body map[string]any) string    { return openaiRefusal(body) }
