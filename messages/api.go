package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
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

// validate checks b as block path of a role message (nested: inside a
// tool_result): the fields its type needs, then that it sets no field
// another type's block has.
func (b ContentBlock) validate(path string, role Role, nested bool) error {
	var err error
	switch b.Type {
	case BlockText:
	case BlockImage:
		err = validateSource(path+".source", b.Source)
	case BlockToolUse:
		err = b.validateToolUse(path, role, nested)
	case BlockToolResult:
		err = b.validateToolResult(path, role, nested)
	case BlockThinking:
		if nested {
			return fieldErr(path+".type", "thinking inside a tool_result")
		}
		if role != RoleAssistant {
			return fieldErr(path+".type", "thinking in a %s message", role)
		}
	case "":
		return fieldErr(path+".type", "missing")
	default:
		return fieldErr(path+".type", "unknown block type %q", b.Type)
	}
	if err != nil {
		return err
	}
	return b.validateFields(path)
}

// blockFields are the fields a block of each type may set (besides type).
var blockFields = map[BlockType][]string{
	BlockText:       {"text"},
	BlockImage:      {"source"},
	BlockToolUse:    {"id", "name", "input"},
	BlockToolResult: {"tool_use_id", "content", "is_error"},
	BlockThinking:   {"thinking", "signature"},
}

// validateFields reports the first field b sets that a block of its type
// does not have (blockFields), in the order of the JSON fields.
func (b ContentBlock) validateFields(path string) error {
	set := []struct {
		field string
		set   bool
	}{
		{"text", b.Text != ""},
		{"source", b.Source != nil},
		{"id", b.ID != ""},
		{"name", b.Name != ""},
		{"input", b.Input != nil},
		{"tool_use_id", b.ToolUseID != ""},
		{"content", b.Content != nil},
		{"is_error", b.IsError},
		{"thinking", b.Thinking != ""},
		{"signature", b.Signature != ""},
	}
	for _, f := range set {
		if f.set && !slices.Contains(blockFields[b.Type], f.field) {
			return fieldErr(path+"."+f.field, "not allowed in a %s block", b.Type)
		}
	}
	return nil
}

// validateSource checks an image block's source, at path.
func validateSource(path string, s *ImageSource) error {
	if s == nil {
		return fieldErr(path, "missing on an image block")
	}
	switch s.Type {
	case "base64":
		if s.MediaType == "" {
			return fieldErr(path+".media_type", "missing on a base64 image")
		}
		if s.Data == "" {
			return fieldErr(path+".data", "missing on a base64 image")
		}
	case "url":
		if s.URL == "" {
			return fieldErr(path+".url", "missing on a url image")
		}
	default:
		return fieldErr(path+".type", "unknown image source %q (want \"base64\" or \"url\")", s.Type)
	}
	return nil
}

// validateToolUse checks a tool_use block: only in an assistant
// message, never in a tool_result, with an id, a name and an input that
// is a JSON object, if any.
func (b ContentBlock) validateToolUse(path string, role Role, nested bool) error {
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
	return nil
}

// validateToolResult checks a tool_result block: only in a user message,
// never in another tool_result, naming its tool_use, and holding text and
// images only.
func (b ContentBlock) validateToolResult(path string, role Role, nested bool) error {
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
	return nil
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
