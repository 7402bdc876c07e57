package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/messages"
)

// Limits on what one result gives the model and the UI history.
const (
	// maxImages images of at most maxImageBytes each go to the model; the
	// rest are described in the text.
	maxImages     = 4
	maxImageBytes = 5 << 20
	// maxShownBytes is the largest image kept in the UI history (as a
	// data: URL) for displays.
	maxShownBytes = 1 << 20
)

// toResult turns a tool's answer into what the model and the UI get: the
// text parts (text, resources, structured content) joined and capped at
// maxChars, images as image blocks for the model (and data: URLs for the
// UI) with a placeholder line in the text for each.
func toResult(r *sdk.CallToolResult, maxChars int) agent.Result {
	var parts []string
	var res agent.Result
	texts := map[string]bool{}
	for _, c := range r.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
			texts[strings.TrimSpace(c.Text)] = true
		case *sdk.ImageContent:
			parts = append(parts, imageBlock(&res, c.MIMEType, c.Data))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %s; not shown]", orDefault(c.MIMEType, "audio"), agent.HumanBytes(len(c.Data))))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s%s]", c.URI, describeLink(c)))
		case *sdk.EmbeddedResource:
			if rc := c.Resource; rc != nil {
				if rc.Text != "" {
					parts = append(parts, fmt.Sprintf("[resource %s]\n%s", rc.URI, rc.Text))
				} else {
					parts = append(parts, fmt.Sprintf("[resource %s: %s, %s]", rc.URI, orDefault(rc.MIMEType, "binary"), agent.HumanBytes(len(rc.Blob))))
				}
			}
		default:
			parts = append(parts, "[content of an unknown type]")
		}
	}
	if r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil && !texts[strings.TrimSpace(string(b))] {
			parts = append(parts, "[structured content]\n"+string(b))
		}
	}
	text := strings.Join(parts, "\n")
	if strings.TrimSpace(text) == "" {
		text = "(no output)"
	}
	res.Text = agent.CapText(text, maxChars)
	res.IsError = r.IsError
	return res
}

// imageBlock adds an image to res (for the model, and for displays when it
// is small) and returns its placeholder line.
func imageBlock(res *agent.Result, mime string, data []byte) string {
	mime = orDefault(mime, "image/png")
	line := fmt.Sprintf("[image %s, %s]", mime, agent.HumanBytes(len(data)))
	if len(res.Blocks) >= maxImages || len(data) > maxImageBytes {
		return line + " (not sent: too many or too large)"
	}
	b64 := base64.StdEncoding.EncodeToString(data)
	res.Blocks = append(res.Blocks, messages.ContentBlock{Type: messages.BlockImage,
		Source: &messages.ImageSource{Type: "base64", MediaType: mime, Data: b64}})
	res.Images = append(res.Images, line)
	if len(data) <= maxShownBytes {
		res.Shown = append(res.Shown, "data:"+mime+";base64,"+b64)
	}
	return line
}

func describeLink(c *sdk.ResourceLink) string {
	var d []string
	if c.Name != "" {
		d = append(d, c.Name)
	}
	if c.Description != "" {
		d = append(d, c.Description)
	}
	if len(d) == 0 {
		return ""
	}
	return ": " + strings.Join(d, " — ")
}
