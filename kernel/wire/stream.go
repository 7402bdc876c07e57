package wire

import (
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// DecodeStream returns the content of m, a stream message: what
// DecodeContent into a Stream gives, faster. A stream's text can be
// megabytes, which encoding/json scans three times (to validate, to find
// the value's end, to unquote); the common shape of a stream's content (an
// object of the keys name and text, string values) is read here in one
// pass, and anything else goes to DecodeContent.
func (m *Message) DecodeStream() (Stream, error) {
	if s, ok := fastStream(m.Content); ok {
		return s, nil
	}
	var s Stream
	err := m.DecodeContent(&s)
	return s, err
}

// fastStream reads b as an object of the keys "name" and "text" (exactly
// spelt, each at most once, string values); ok is false for anything else,
// which encoding/json then decides on.
func fastStream(b []byte) (s Stream, ok bool) {
	var seen [2]bool
	ok = members(b, func(key string, i int) (int, bool) {
		val, j, ok := jsonString(b, i)
		switch {
		case !ok:
			return 0, false
		case key == "name" && !seen[0]:
			s.Name, seen[0] = val, true
		case key == "text" && !seen[1]:
			s.Text, seen[1] = val, true
		default:
			return 0, false
		}
		return j, true
	})
	return s, ok
}

// members reads b as one JSON object (with surrounding white space) in one
// pass: member reads the value of key at b[i:] (white space skipped) and
// returns the index after it. false: b is not such an object, or member
// said false — not sure, for a caller that then leaves b to encoding/json.
func members(b []byte, member func(key string, i int) (int, bool)) bool {
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
		if i, ok = member(key, skipSpace(b, i+1)); !ok {
			return false
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

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// jsonString unquotes the JSON string at b[i:] and returns it and the
// index after it; ok is false when there is none, or one that is not
// valid UTF-8 (encoding/json replaces such bytes; it decides then).
func jsonString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	i++
	start := i
	i = plainEnd(b, i)
	if i < len(b) && b[i] == '"' { // no escapes: the common case
		raw := b[start:i]
		if !utf8.Valid(raw) {
			return "", 0, false
		}
		return string(raw), i + 1, true
	}
	// Unquoting never lengthens, so what is left of b bounds the string,
	// and the buffer is not grown (a megabyte copied again for a last
	// "\n"). Escapes are rare in a short string ahead of a long one (a
	// stream's "name" before its "text"), the case this bound wastes on.
	out := make([]byte, 0, len(b)-start)
	out = append(out, b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return "", 0, false
			}
			if len(out) == 0 {
				return "", i + 1, true
			}
			// out is this string's alone and never written again.
			return unsafe.String(&out[0], len(out)), i + 1, true
		case c < 0x20:
			return "", 0, false
		case c != '\\':
			j := plainEnd(b, i+1)
			out = append(out, b[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(b) {
			return "", 0, false
		}
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b, i+2)
			if !ok {
				return "", 0, false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				// A pair makes one rune; a lone half is U+FFFD, as in
				// encoding/json.
				if r2, ok := hex4(b, i+2); ok && i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						out = utf8.AppendRune(out, dec)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", 0, false
		}
		i += 2
	}
	return "", 0, false
}

// hex4 reads the four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
