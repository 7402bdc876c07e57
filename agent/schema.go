package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// This file: the tools' JSON schemas and input validation.

type paramType int

const (
	tString paramType = iota
	tInteger
	tBoolean
	tStrings
)

type param struct {
	name     string
	typ      paramType
	required bool
	desc     string
	min      int64 // integers
	// blank allows an empty or all-space required string (file content,
	// a replacement); other required strings must have text.
	blank bool
	// internal marks a field the tool's check sets (a run's code): it is
	// not in the schema, and a caller's input may not give it.
	internal bool
	// enum, for a string, are the values it may take.
	enum []string
}

func (t *Tool) schema() (json.RawMessage, error) {
	props := map[string]any{}
	required := []string{}
	for _, p := range t.params {
		if p.internal {
			continue
		}
		s := map[string]any{"description": p.desc}
		switch p.typ {
		case tString:
			s["type"] = "string"
			if len(p.enum) > 0 {
				s["enum"] = p.enum
			}
		case tInteger:
			s["type"] = "integer"
			s["minimum"] = p.min
		case tBoolean:
			s["type"] = "boolean"
		case tStrings:
			s["type"] = "array"
			s["items"] = map[string]any{"type": "string"}
		}
		props[p.name] = s
		if p.required {
			required = append(required, p.name)
		}
	}
	return json.Marshal(map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	})
}

func (t *Tool) validate(input json.RawMessage) (map[string]any, error) {
	if t.external != nil {
		return t.validateObject(input)
	}
	bad := func(field, format string, args ...any) error {
		return &InputError{Tool: t.name, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	raw := map[string]json.RawMessage{}
	trimmed := bytes.TrimSpace(input)
	if len(trimmed) != 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' {
			return nil, bad("", "want a JSON object")
		}
		if err := json.Unmarshal(trimmed, &raw); err != nil {
			return nil, bad("", "not valid JSON: %v", err)
		}
	}
	if extra := t.unknownFields(raw, true); len(extra) > 0 {
		return nil, t.unknownField(extra[0])
	}
	out := map[string]any{}
	for _, p := range t.params {
		v, ok := raw[p.name]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			if p.required {
				return nil, bad(p.name, "missing (required)")
			}
			continue
		}
		switch p.typ {
		case tString:
			var s string
			if json.Unmarshal(v, &s) != nil {
				return nil, bad(p.name, "want a string, got %s", jsonKind(v))
			}
			if p.required && !p.blank && strings.TrimSpace(s) == "" {
				return nil, bad(p.name, "empty")
			}
			if len(p.enum) > 0 && !slices.Contains(p.enum, s) {
				return nil, bad(p.name, "want one of %s, got %q", strings.Join(p.enum, ", "), s)
			}
			out[p.name] = s
		case tInteger:
			var f float64
			if json.Unmarshal(v, &f) != nil {
				return nil, bad(p.name, "want an integer, got %s", jsonKind(v))
			}
			if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return nil, bad(p.name, "want an integer, got %s", v)
			}
			if int64(f) < p.min {
				return nil, bad(p.name, "must be at least %d, got %d", p.min, int64(f))
			}
			out[p.name] = int64(f)
		case tBoolean:
			var b bool
			if json.Unmarshal(v, &b) != nil {
				return nil, bad(p.name, "want a boolean, got %s", jsonKind(v))
			}
			out[p.name] = b
		case tStrings:
			var ss []string
			if json.Unmarshal(v, &ss) != nil {
				return nil, bad(p.name, "want an array of strings, got %s", jsonKind(v))
			}
			out[p.name] = ss
		}
	}
	return out, nil
}

// unknownFields are the fields of raw the tool does not take, sorted; the
// fields its check sets are known only with internal.
func (t *Tool) unknownFields(raw map[string]json.RawMessage, internal bool) []string {
	extra := []string{}
	for k := range raw {
		if !slices.ContainsFunc(t.params, func(p param) bool { return p.name == k && (internal || !p.internal) }) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	return extra
}

// unknownField is the error of a field the tool does not take: it names
// the fields a caller may give.
func (t *Tool) unknownField(name string) error {
	var names []string
	for _, p := range t.params {
		if !p.internal {
			names = append(names, p.name)
		}
	}
	return &InputError{Tool: t.name, Field: name, Reason: fmt.Sprintf("unknown field (the fields are: %s)", strings.Join(names, ", "))}
}

func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
