package wire

import (
	"encoding/json"
	"strings"
)

// decodeHeader unmarshals b, a message's header or parent header, into h
// as json.Unmarshal does: every message read decodes two headers, and
// encoding/json's reflection was a fifth of a proxying kernel's CPU time
// per execute. An object of string values is read here in one pass, other
// keys skipped (their values checked); anything else — a key that differs
// from a field's only in case (encoding/json matches those), a field's
// value that is not a string, a string that is not valid UTF-8 — is left
// to json.Unmarshal, so the result and the error are always its.
func decodeHeader(b []byte, h *Header) error {
	if t := *h; fastHeader(b, &t) {
		*h = t
		return nil
	}
	return json.Unmarshal(b, h)
}

// fastHeader is decodeHeader's one pass; false: not sure (h may then be
// half set).
func fastHeader(b []byte, h *Header) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		key, j, ok := jsonString(b, i)
		if !ok {
			return false
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		if f := h.field(key); f != nil {
			if *f, j, ok = jsonString(b, i); !ok {
				return false
			}
			i = j
		} else {
			if isFieldFold(key) {
				return false
			}
			v := validator{b: b, i: i}
			if !v.value(0) {
				return false
			}
			i = v.i
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// headerKeys are Header's JSON names.
var headerKeys = [...]string{"msg_id", "session", "username", "date", "msg_type", "version", "subshell_id"}

// field returns the field of h that key names exactly, or nil.
func (h *Header) field(key string) *string {
	switch key {
	case "msg_id":
		return &h.MsgID
	case "session":
		return &h.Session
	case "username":
		return &h.Username
	case "date":
		return &h.Date
	case "msg_type":
		return &h.MsgType
	case "version":
		return &h.Version
	case "subshell_id":
		return &h.SubshellID
	}
	return nil
}

// isFieldFold reports whether key, not a field's exact name, matches one
// the way encoding/json also matches names (ignoring case, and with
// Unicode's folds: "ſ" is an "s" to it).
func isFieldFold(key string) bool {
	for _, k := range headerKeys {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	// encoding/json folds more than EqualFold's simple folds (the Kelvin
	// sign is a "k"); a key with non-ASCII letters is left to it.
	for i := 0; i < len(key); i++ {
		if key[i] >= 0x80 {
			return true
		}
	}
	return false
}
