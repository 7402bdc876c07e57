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
	return members(b, func(key string, i int) (int, bool) {
		if f := h.field(key); f != nil {
			v, j, ok := jsonString(b, i)
			*f = v
			return j, ok
		}
		if isFieldFold(key) {
			return 0, false
		}
		v := validator{b: b, i: i}
		ok := v.value(0)
		return v.i, ok
	})
}

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

// isFieldFold reports whether key, not a field's exact name, may match one
// the way encoding/json also matches names: ignoring ASCII case, and with
// Unicode's folds (the Kelvin sign is a "k" to it), so a key with any
// non-ASCII byte is left to it.
func isFieldFold(key string) bool {
	for i := 0; i < len(key); i++ {
		if key[i] >= 0x80 {
			return true
		}
	}
	return new(Header).field(strings.ToLower(key)) != nil
}
