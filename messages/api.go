package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Role is the author of an API message.
type Role string

// The two API roles. System prompts are not part of the history.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// BlockType is the type of a content block.
type BlockType string

// Content block types, spelled as the Anthropic Messages API spells them.
const (
	BlockText       BlockType = "text"
	BlockImage      BlockType = "image"
	BlockToolUse    BlockType = "tool_use"
	BlockToolResult BlockType = "tool_result"
	BlockThinking   BlockType = "thinking"
)

// ImageSource is an image block's data: base64 (MediaType and Data) or a URL.
type ImageSource struct {
	Type      string `json:"type"` // "base64" or "url"
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// ContentBlock is one block of an API message. Which fields are set depends
// on Type: Text for text; Source for image; ID, Name, Input for tool_use;
// ToolUseID, Content, IsError for tool_result; Thinking, Signature for thinking.
type ContentBlock struct {
	Type   BlockType    `json:"type"`
	Text   string       `json:"text,omitempty"`
	Source *ImageSource `json:"source,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID string         `json:"tool_use_id,omitempty"`
	Content   []ContentBlock `json:"content,omitempty"`
	IsError   bool           `json:"is_error,omitempty"`
	// thinking
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
}

// APIMessage is one entry of the API history: what the model is sent.
//
// Context bookkeeping never deletes API messages (see [Condense], [Truncate]):
// a summary (IsSummary, CondenseID) hides the messages whose CondenseParent
// is its id; a truncation marker (IsTruncationMarker, TruncationID) hides the
// messages whose TruncationParent is its id. TS is optional (0 = unknown).
type APIMessage struct {
	Role               Role           `json:"role"`
	Content            []ContentBlock `json:"content"`
	TS                 int64          `json:"ts,omitempty"`
	IsSummary          bool           `json:"isSummary,omitempty"`
	CondenseID         string         `json:"condenseId,omitempty"`
	CondenseParent     string         `json:"condenseParent,omitempty"`
	IsTruncationMarker bool           `json:"isTruncationMarker,omitempty"`
	TruncationID       string         `json:"truncationId,omitempty"`
	TruncationParent   string         `json:"truncationParent,omitempty"`
}

// Validate reports the first thing wrong with m, naming the field, as a
// *[FieldError] wrapped with "messages: invalid API message".
func (m APIMessage) Validate() error {
	if err := m.validate(); err != nil {
		return fmt.Errorf("messages: invalid API message (ts %d): %w", m.TS, err)
	}
	return nil
}

func (m APIMessage) validate() error {
	switch m.Role {
	case RoleUser, RoleAssistant:
	case "":
		return fieldErr("role", "missing (want %q or %q)", RoleUser, RoleAssistant)
	default:
		return fieldErr("role", "unknown role %q (want %q or %q)", m.Role, RoleUser, RoleAssistant)
	}
	if m.TS < 0 {
		return fieldErr("ts", "negative (%d)", m.TS)
	}
	if len(m.Content) == 0 {
		return fieldErr("content", "empty")
	}
	for i, b := range m.Content {
		if err := b.validate(fmt.Sprintf("content[%d]", i), m.Role, false); err != nil {
			return err
		}
	}
	if m.IsSummary {
		if m.CondenseID == "" {
			return fieldErr("condenseId", "missing on a summary")
		}
		if m.IsTruncationMarker {
			return fieldErr("isTruncationMarker", "set on a summary")
		}
	} else if m.CondenseID != "" {
		return fieldErr("condenseId", "set on a message that is not a summary")
	}
	if m.IsTruncationMarker {
		if m.TruncationID == "" {
			return fieldErr("truncationId", "missing on a truncation marker")
		}
	} else if m.TruncationID != "" {
		return fieldErr("truncationId", "set on a message that is not a truncation marker")
	}
	if m.CondenseParent != "" && m.CondenseParent == m.CondenseID {
		return fieldErr("condenseParent", "points at the message itself")
	}
	if m.TruncationParent != "" && m.TruncationParent == m.TruncationID {
		return fieldErr("truncationParent", "points at the message itself")
	}
	return nil
}

func (b ContentBlock) validate(path string, role Role, nested bool) error {
	extra := func(field string, set bool) error {
		if set {
			return fieldErr(path+"."+field, "not allowed in a %s block", b.Type)
		}
		return nil
	}
	var err error
	check := func(field string, set bool) {
		if err == nil {
			err = extra(field, set)
		}
	}
	switch b.Type {
	case BlockText:
		check("source", b.Source != nil)
		check("id", b.ID != "")
		check("name", b.Name != "")
		check("input", b.Input != nil)
		check("tool_use_id", b.ToolUseID != "")
		check("content", b.Content != nil)
		check("is_error", b.IsError)
		check("thinking", b.Thinking != "")
		check("signature", b.Signature != "")
	case BlockImage:
		if b.Source == nil {
			return fieldErr(path+".source", "missing on an image block")
		}
		switch b.Source.Type {
		case "base64":
			if b.Source.MediaType == "" {
				return fieldErr(path+".source.media_type", "missing on a base64 image")
			}
			if b.Source.Data == "" {
				return fieldErr(path+".source.data", "missing on a base64 image")
			}
		case "url":
			if b.Source.URL == "" {
				return fieldErr(path+".source.url", "missing on a url image")
			}
		default:
			return fieldErr(path+".source.type", "unknown image source %q (want \"base64\" or \"url\")", b.Source.Type)
		}
		check("text", b.Text != "")
		check("id", b.ID != "")
		check("name", b.Name != "")
		check("input", b.Input != nil)
		check("tool_use_id", b.ToolUseID != "")
		check("content", b.Content != nil)
		check("is_error", b.IsError)
		check("thinking", b.Thinking != "")
		check("signature", b.Signature != "")
	case BlockToolUse:
		if nested {
			return fieldErr(path+".type", "tool_use inside a tool_result")
		}
		if role != RoleAssistant {
			return fieldErr(path+".type", "tool_use in a %s message (only assistant messages use tools)", role)
		}
		if b.ID == "" {
			return fieldErr(path+".id", "missing on a tool_use block")
		}
		if b.Name == "" {
			return fieldErr(path+".name", "missing on a tool_use block")
		}
		if b.Input != nil {
			in := bytes.TrimSpace(b.Input)
			if !json.Valid(in) || len(in) == 0 || in[0] != '{' {
				return fieldErr(path+".input", "not a JSON object")
			}
		}
		check("text", b.Text != "")
		check("source", b.Source != nil)
		check("tool_use_id", b.ToolUseID != "")
		check("content", b.Content != nil)
		check("is_error", b.IsError)
		check("thinking", b.Thinking != "")
		check("signature", b.Signature != "")
	case BlockToolResult:
		if nested {
			return fieldErr(path+".type", "tool_result inside a tool_result")
		}
		if role != RoleUser {
			return fieldErr(path+".type", "tool_result in a %s message (only user messages carry results)", role)
		}
		if b.ToolUseID == "" {
			return fieldErr(path+".tool_use_id", "missing on a tool_result block")
		}
		for i, c := range b.Content {
			p := fmt.Sprintf("%s.content[%d]", path, i)
			if c.Type != BlockText && c.Type != BlockImage {
				return fieldErr(p+".type", "%q in a tool_result (want text or image)", c.Type)
			}
			if err := c.validate(p, role, true); err != nil {
				return err
			}
		}
		check("text", b.Text != "")
		check("source", b.Source != nil)
		check("id", b.ID != "")
		check("name", b.Name != "")
		check("input", b.Input != nil)
		check("thinking", b.Thinking != "")
		check("signature", b.Signature != "")
	case BlockThinking:
		if nested {
			return fieldErr(path+".type", "thinking inside a tool_result")
		}
		if role != RoleAssistant {
			return fieldErr(path+".type", "thinking in a %s message", role)
		}
		check("text", b.Text != "")
		check("source", b.Source != nil)
		check("id", b.ID != "")
		check("name", b.Name != "")
		check("input", b.Input != nil)
		check("tool_use_id", b.ToolUseID != "")
		check("content", b.Content != nil)
		check("is_error", b.IsError)
	case "":
		return fieldErr(path+".type", "missing")
	default:
		return fieldErr(path+".type", "unknown block type %q", b.Type)
	}
	return err
}

// PlainText returns the text of m's text blocks and of the text inside its
// tool_result blocks, joined by newlines: for search indexes and previews.
// Images, tool inputs and thinking are left out.
func (m APIMessage) PlainText() string {
	var sb strings.Builder
	add := func(s string) {
		if s == "" {
			return
		}
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(s)
	}
	for _, b := range m.Content {
		switch b.Type {
		case BlockText:
			add(b.Text)
		case BlockToolResult:
			for _, c := range b.Content {
				if c.Type == BlockText {
					add(c.Text)
				}
			}
		}
	}
	return sb.String()
}
