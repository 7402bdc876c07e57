package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
)

// apiMessages maps agentkernel's API history to Messages API messages. The
// block types are the API's own; the exceptions: empty text blocks are
// dropped (the API rejects them), thinking blocks without a signature are
// dropped (the API only takes back signed thinking, so reasoning from
// another provider is not replayed), and a message left empty is skipped.
// With cache, the last block of the last message is a cache breakpoint.
func apiMessages(history []messages.APIMessage, cache bool) ([]sdk.MessageParam, error) {
	out := make([]sdk.MessageParam, 0, len(history))
	for i, m := range history {
		var blocks []sdk.ContentBlockParamUnion
		for _, b := range m.Content {
			switch b.Type {
			case messages.BlockText:
				if b.Text != "" {
					blocks = append(blocks, sdk.NewTextBlock(b.Text))
				}
			case messages.BlockImage:
				blocks = append(blocks, imageBlock(b.Source))
			case messages.BlockToolUse:
				input := json.RawMessage("{}")
				if in := bytes.TrimSpace(b.Input); len(in) > 0 {
					input = json.RawMessage(in)
				}
				blocks = append(blocks, sdk.NewToolUseBlock(b.ID, input, b.Name))
			case messages.BlockToolResult:
				tr := sdk.ToolResultBlockParam{ToolUseID: b.ToolUseID}
				if b.IsError {
					tr.IsError = sdk.Bool(true)
				}
				for _, c := range b.Content {
					switch c.Type {
					case messages.BlockText:
						if c.Text != "" {
							tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: c.Text}})
						}
					case messages.BlockImage:
						img := imageBlock(c.Source).OfImage
						tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfImage: img})
					}
				}
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: &tr})
			case messages.BlockThinking:
				if b.Signature != "" {
					blocks = append(blocks, sdk.NewThinkingBlock(b.Signature, b.Thinking))
				}
			}
		}
		if len(blocks) == 0 {
			continue
		}
		switch m.Role {
		case messages.RoleUser:
			out = append(out, sdk.NewUserMessage(blocks...))
		case messages.RoleAssistant:
			out = append(out, sdk.NewAssistantMessage(blocks...))
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	if cache && len(out) > 0 {
		last := out[len(out)-1].Content
		if cc := last[len(last)-1].GetCacheControl(); cc != nil {
			*cc = sdk.NewCacheControlEphemeralParam()
		}
	}
	return out, nil
}

func imageBlock(src *messages.ImageSource) sdk.ContentBlockParamUnion {
	if src != nil && src.Type == "url" {
		return sdk.NewImageBlock(sdk.URLImageSourceParam{URL: src.URL})
	}
	if src == nil {
		src = &messages.ImageSource{}
	}
	return sdk.NewImageBlockBase64(src.MediaType, src.Data)
}

// apiTools maps tools; the last one is a cache breakpoint when cache is set.
func apiTools(tools []provider.Tool, cache bool) ([]sdk.ToolUnionParam, error) {
	out := make([]sdk.ToolUnionParam, 0, len(tools))
	for _, t := range tools {
		schema := sdk.ToolInputSchemaParam{Properties: map[string]any{}}
		if len(bytes.TrimSpace(t.InputSchema)) > 0 {
			var m map[string]any
			if err := json.Unmarshal(t.InputSchema, &m); err != nil {
				return nil, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
			}
			if p, ok := m["properties"]; ok {
				schema.Properties = p
			}
			if r, ok := m["required"].([]any); ok {
				for _, s := range r {
					if s, ok := s.(string); ok {
						schema.Required = append(schema.Required, s)
					}
				}
			}
			delete(m, "type")
			delete(m, "properties")
			delete(m, "required")
			if len(m) > 0 {
				schema.ExtraFields = m
			}
		}
		tp := sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		out = append(out, sdk.ToolUnionParam{OfTool: &tp})
	}
	if cache && len(out) > 0 {
		out[len(out)-1].OfTool.CacheControl = sdk.NewCacheControlEphemeralParam()
	}
	return out, nil
}
