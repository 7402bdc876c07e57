package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// DecodeUI decodes one UI message from JSON and validates it. It is strict:
// unknown fields, wrong types and trailing data are errors, and so is
// anything [UIMessage.Validate] rejects. Field names match
// case-insensitively, as encoding/json does.
func DecodeUI(data []byte) (UIMessage, error) {
	var m UIMessage
	if err := decodeStrict(data, &m); err != nil {
		return UIMessage{}, fmt.Errorf("messages: decode UI message: %w", err)
	}
	// Empty collections decode as nil, so that a decoded message equals the
	// decoding of its own encoding (omitempty drops them).
	if len(m.Images) == 0 {
		m.Images = nil
	}
	if len(m.Checkpoint) == 0 {
		m.Checkpoint = nil
	}
	if err := m.Validate(); err != nil {
		return UIMessage{}, err
	}
	return m, nil
}

// DecodeAPI decodes one API message from JSON and validates it, as strictly
// as [DecodeUI].
func DecodeAPI(data []byte) (APIMessage, error) {
	var m APIMessage
	if err := decodeStrict(data, &m); err != nil {
		return APIMessage{}, fmt.Errorf("messages: decode API message: %w", err)
	}
	for i := range m.Content {
		normalizeBlock(&m.Content[i])
	}
	if err := m.Validate(); err != nil {
		return APIMessage{}, err
	}
	return m, nil
}

func decodeStrict(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("empty input")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON object")
	}
	return nil
}

// normalizeBlock turns empty collections into nil (see DecodeUI).
func normalizeBlock(b *ContentBlock) {
	if len(b.Content) == 0 {
		b.Content = nil
	}
	for i := range b.Content {
		normalizeBlock(&b.Content[i])
	}
	if len(b.Input) == 0 {
		b.Input = nil
	}
}
