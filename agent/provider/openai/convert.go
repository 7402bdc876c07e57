package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
)

// chatMessages maps the system prompt and agentkernel's API history to
// chat completion messages:
//   - user text and images become one user message (images as image_url
//     parts, base64 images as data URLs);
//   - each tool_result block becomes a tool message (role "tool") placed
//     before the user's other content, so that it follows the assistant's
//     tool_calls; images inside a tool result go into a user message after
//     the tool messages, since tool messages carry only text;
//   - assistant text becomes the content, tool_use blocks the tool_calls;
//   - thinking blocks are dropped (chat completions takes no reasoning back).
func chatMessages(system string, history []messages.APIMessage) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var out []sdk.ChatCompletionMessageParamUnion
	if system != "" {
		out = append(out, sdk.SystemMessage(system))
	}
	for i, m := range history {
		switch m.Role {
		case messages.RoleUser:
			var parts []sdk.ChatCompletionContentPartUnionParam
			for _, b := range m.Content {
				switch b.Type {
				case messages.BlockText:
					parts = append(parts, sdk.TextContentPart(b.Text))
				case messages.BlockImage:
					parts = append(parts, imagePart(b.Source))
				case messages.BlockToolResult:
					var text []string
					for _, c := range b.Content {
						switch c.Type {
						case messages.BlockText:
							text = append(text, c.Text)
						case messages.BlockImage:
							parts = append(parts,
								sdk.TextContentPart(fmt.Sprintf("[image from the result of tool call %s]", b.ToolUseID)),
								imagePart(c.Source))
						}
					}
					content := strings.Join(text, "\n")
					if b.IsError && !strings.HasPrefix(content, "Error:") {
						content = "Error: " + content // OpenAI has no is_error
					}
					if content == "" {
						content = "(no output)"
					}
					out = append(out, sdk.ToolMessage(content, b.ToolUseID))
				}
			}
			if len(parts) == 0 {
				continue
			}
			if len(parts) == 1 && parts[0].OfText != nil {
				out = append(out, sdk.UserMessage(parts[0].OfText.Text))
			} else {
				out = append(out, sdk.UserMessage(parts))
			}
		case messages.RoleAssistant:
			var a sdk.ChatCompletionAssistantMessageParam
			var text []string
			for _, b := range m.Content {
				switch b.Type {
				case messages.BlockText:
					text = append(text, b.Text)
				case messages.BlockToolUse:
					args := "{}"
					if in := bytes.TrimSpace(b.Input); len(in) > 0 {
						args = string(in)
					}
					a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
						OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
							ID:       b.ID,
							Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.Name, Arguments: args},
						},
					})
				}
			}
			if len(text) > 0 {
				a.Content.OfString = sdk.String(strings.Join(text, ""))
			}
			if len(text) == 0 && len(a.ToolCalls) == 0 {
				continue // only thinking: nothing chat completions can take
			}
			out = append(out, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

func imagePart(src *messages.ImageSource) sdk.ChatCompletionContentPartUnionParam {
	url := ""
	if src != nil {
		if src.Type == "url" {
			url = src.URL
		} else {
			url = "data:" + src.MediaType + ";base64," + src.Data
		}
	}
	return sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: url})
}

// chatTools maps tools to function tools.
func chatTools(tools []provider.Tool) ([]sdk.ChatCompletionToolUnionParam, error) {
	out := make([]sdk.ChatCompletionToolUnionParam, 0, len(tools))
	for _, t := range tools {
		params := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		if len(bytes.TrimSpace(t.InputSchema)) > 0 {
			params = shared.FunctionParameters{}
			if err := json.Unmarshal(t.InputSchema, &params); err != nil {
				return nil, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
			}
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			def.Description = sdk.String(t.Description)
		}
		out = append(out, sdk.ChatCompletionFunctionTool(def))
	}
	return out, nil
}
