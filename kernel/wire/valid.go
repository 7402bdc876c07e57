package wire

import "encoding/json"

// validJSON reports whether b is one JSON value (with surrounding white
// space), as json.Valid does, in one tight pass: a forwarded output of
// megabytes is checked on every message a proxy reads, and json.Valid's
// state machine takes a function call per byte. Values nested deeper than
// maxFastDepth, and anything this pass rejects, are left to json.Valid, so
// the verdict is always encoding/json's.
func validJSON(b []byte) bool {
	v := validator{b: b}
	if v.value(0) && skipSpace(b, v.i) == len(b) {
		return true
	}
	return json.Valid(b)
}

// maxFastDepth bounds validator's recursion (json.Valid allows 10,000).
const maxFastDepth = 512

type validator struct {
	b []byte
	i int
}

// value reads one value at v.i (after white space); false: not valid, or
// not sure.
func (v *validator) value(depth int) bool {
	b := v.b
	v.i = skipSpace(b, v.i)
	if v.i >= len(b) {
		return false
	}
	switch c := b[v.i]; {
	case c == '"':
		return v.str()
	case c == '{':
		return depth < maxFastDepth && v.object(depth+1)
	case c == '[':
		return depth < maxFastDepth && v.array(depth+1)
	case c == 't':
		return v.word("true")
	case c == 'f':
		return v.word("false")
	case c == 'n':
		return v.word("null")
	case c == '-' || '0' <= c && c <= '9':
		return v.number()
	}
	return false
}

func (v *validator) object(depth int) bool {
	b := v.b
	v.i = skipSpace(b, v.i+1)
	if v.i < len(b) && b[v.i] == '}' {
		v.i++
		return true
	}
	for {
		if v.i >= len(b) || b[v.i] != '"' || !v.str() {
			return false
		}
		v.i = skipSpace(b, v.i)
		if v.i >= len(b) || b[v.i] != ':' {
			return false
		}
		v.i++
		if !v.value(depth) {
			return false
		}
		v.i = skipSpace(b, v.i)
		if v.i >= len(b) {
			return false
		}
		switch b[v.i] {
		case ',':
			v.i = skipSpace(b, v.i+1)
		case '}':
			v.i++
			return true
		default:
			return false
		}
	}
}

func (v *validator) array(depth int) bool {
	b := v.b
	v.i = skipSpace(b, v.i+1)
	if v.i < len(b) && b[v.i] == ']' {
		v.i++
		return true
	}
	for {
		if !v.value(depth) {
			return false
		}
		v.i = skipSpace(b, v.i)
		if v.i >= len(b) {
			return false
		}
		switch b[v.i] {
		case ',':
			v.i++
		case ']':
			v.i++
			return true
		default:
			return false
		}
	}
}

// str reads a string at v.i: bytes from 0x20 up, and escapes (json.Valid
// does not check UTF-8).
func (v *validator) str() bool {
	b := v.b
	i := v.i + 1
	for i < len(b) {
		i = plainEnd(b, i)
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			v.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(b, i+2); !ok {
					return false
				}
				i += 6
			default:
				return false
			}
		}
	}
	return false
}

func (v *validator) word(w string) bool {
	if len(v.b)-v.i < len(w) || string(v.b[v.i:v.i+len(w)]) != w {
		return false
	}
	v.i += len(w)
	return true
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (v *validator) number() bool {
	b, i := v.b, v.i
	digits := func() bool {
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	v.i = i
	return true
}
