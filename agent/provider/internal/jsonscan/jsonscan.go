// Package jsonscan reads a JSON text in place, value by value, for the
// streaming hot path of the providers: a chunk of a model's answer is
// decoded field by field without reflection and without building a tree.
//
// It is deliberately partial. A Scanner accepts only what it can read
// exactly as encoding/json (and the SDKs' decoders after it) would: valid
// JSON; strings that are valid UTF-8 and escape no surrogate half; object
// keys without escapes; integers without fraction or exponent. Anything else
// makes it fail (End reports false), and the caller hands the whole text to
// the SDK's own decoding instead. Failing is always safe; accepting
// something the SDK would read differently is the bug to avoid.
//
// Use New, then the readers in the order the text has them:
//
//	s := jsonscan.New(data)
//	if !s.Enter('{') { ... }
//	for i := 0; s.More('}', i); i++ {
//		key := s.Key()
//		switch string(key) { case "text": text = s.String(); default: s.Skip() }
//	}
//	if !s.End() { ... the SDK decodes data ... }
//
// Every reader does nothing once the scanner has failed, so a caller checks
// End once, at the end. A Scanner is not safe for concurrent use.
package jsonscan

import "unicode/utf8"

// maxDepth bounds the nesting Skip walks (encoding/json allows 10,000; a
// model's chunk nests a few levels).
const maxDepth = 64

// Scanner reads one JSON text from a byte slice it does not copy.
type Scanner struct {
	b      []byte
	i      int
	failed bool
	buf    []byte // scratch for strings with escapes
}

// New returns a scanner over b.
func New(b []byte) Scanner { return Scanner{b: b} }

// Keys are the keys of an object a reader has seen, a bit each (Once).
type Keys uint8

// Once records that the key of bit was read, and fails the scan when it
// was read before: decoders differ on which of two equal keys wins.
func (s *Scanner) Once(seen *Keys, bit Keys) {
	if *seen&bit != 0 {
		s.failed = true
	}
	*seen |= bit
}

// Fail marks the text as one the caller does not take (a repeated key, a
// value it does not expect): every later reader does nothing, and End
// reports false.
func (s *Scanner) Fail() { s.failed = true }

// plain marks the bytes a string holds as they are: not a quote, a
// backslash or a control character.
var plain = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

func (s *Scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after whitespace, 0 at the end.
func (s *Scanner) peek() byte {
	s.ws()
	if s.failed || s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// IsNull consumes a null and reports whether there was one.
func (s *Scanner) IsNull() bool {
	if s.peek() != 'n' {
		return false
	}
	return s.literal("null")
}

// Enter consumes the opening bracket open ('{' or '['), or fails.
func (s *Scanner) Enter(open byte) bool {
	if s.peek() != open {
		s.failed = true
		return false
	}
	s.i++
	return true
}

// More reports whether the object or array being read has a member after
// the i-th (0 for the first), consuming the comma between members, or the
// closing bracket close when there is none.
func (s *Scanner) More(close byte, i int) bool {
	c := s.peek()
	if s.failed {
		return false
	}
	if c == close {
		s.i++
		return false
	}
	if i == 0 {
		return true
	}
	if c != ',' {
		s.failed = true
		return false
	}
	s.i++
	return true
}

// Key reads an object member's key and the colon after it. The key aliases
// the text. A key with an escape fails the scan.
func (s *Scanner) Key() []byte {
	if s.peek() != '"' {
		s.failed = true
		return nil
	}
	start := s.i + 1
	j := start
	for j < len(s.b) && plain[s.b[j]] {
		j++
	}
	if j >= len(s.b) || s.b[j] != '"' {
		s.failed = true
		return nil
	}
	key := s.b[start:j]
	s.i = j + 1
	if s.peek() != ':' {
		s.failed = true
		return nil
	}
	s.i++
	return key
}

// String reads a string value. It fails on anything but a string, and on
// a string that is not valid UTF-8 or escapes a surrogate half (decoders
// differ on those: the SDK reads them).
func (s *Scanner) String() string {
	raw, esc := s.stringRaw()
	if s.failed {
		return ""
	}
	if !esc {
		if !utf8.Valid(raw) {
			s.failed = true
			return ""
		}
		return string(raw)
	}
	out := s.unescape(raw)
	if s.failed {
		return ""
	}
	return out
}

// StringBytes is String for a value the caller only compares (a type
// tag): the result aliases the text. It fails on a string with an escape.
func (s *Scanner) StringBytes() []byte {
	raw, esc := s.stringRaw()
	if esc {
		s.failed = true
	}
	if s.failed {
		return nil
	}
	return raw
}

// stringRaw reads a string and returns its bytes between the quotes, and
// whether it holds an escape. It validates the escapes, not the UTF-8
// (encoding/json does not either).
func (s *Scanner) stringRaw() (raw []byte, esc bool) {
	if s.peek() != '"' {
		s.failed = true
		return nil, false
	}
	start := s.i + 1
	j := start
	for j < len(s.b) {
		for j < len(s.b) && plain[s.b[j]] {
			j++ // the common case: bytes that end nothing
		}
		if j >= len(s.b) {
			break
		}
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], esc
		case c == '\\':
			esc = true
			if j+1 >= len(s.b) {
				s.failed = true
				return nil, false
			}
			switch s.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(s.b) {
					s.failed = true
					return nil, false
				}
				for _, h := range s.b[j+2 : j+6] {
					if hexVal(h) < 0 {
						s.failed = true
						return nil, false
					}
				}
				j += 6
			default:
				s.failed = true
				return nil, false
			}
		case c < 0x20:
			s.failed = true
			return nil, false
		default:
			j++
		}
	}
	s.failed = true
	return nil, false
}

// unescape decodes the escapes of raw (already validated by stringRaw).
func (s *Scanner) unescape(raw []byte) string {
	b := s.buf[:0]
	for j := 0; j < len(raw); {
		c := raw[j]
		if c != '\\' {
			k := j + 1
			for k < len(raw) && raw[k] != '\\' {
				k++
			}
			b = append(b, raw[j:k]...)
			j = k
			continue
		}
		switch raw[j+1] {
		case '"', '\\', '/':
			b = append(b, raw[j+1])
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := rune(hexVal(raw[j+2]))<<12 | rune(hexVal(raw[j+3]))<<8 | rune(hexVal(raw[j+4]))<<4 | rune(hexVal(raw[j+5]))
			if r >= 0xD800 && r < 0xE000 {
				s.failed = true // a surrogate half: decoders disagree
				return ""
			}
			b = utf8.AppendRune(b, r)
			j += 6
			continue
		}
		j += 2
	}
	s.buf = b
	if !utf8.Valid(b) {
		s.failed = true
		return ""
	}
	return string(b)
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// Int reads an integer written without fraction or exponent, of at most
// 18 digits; anything else fails.
func (s *Scanner) Int() int64 {
	c := s.peek()
	if s.failed {
		return 0
	}
	neg := false
	if c == '-' {
		neg = true
		s.i++
	}
	start := s.i
	var n int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		n = n*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > 18 || (digits > 1 && s.b[start] == '0') {
		s.failed = true
		return 0
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			s.failed = true
			return 0
		}
	}
	if neg {
		n = -n
	}
	return n
}

// Skip reads any value and drops it, checking that it is valid JSON.
func (s *Scanner) Skip() { s.skip(0) }

func (s *Scanner) skip(depth int) {
	if depth > maxDepth {
		s.failed = true
		return
	}
	switch s.peek() {
	case '{':
		s.i++
		for i := 0; s.More('}', i); i++ {
			if s.stringRaw(); s.failed {
				return
			}
			if s.peek() != ':' {
				s.failed = true
				return
			}
			s.i++
			s.skip(depth + 1)
		}
	case '[':
		s.i++
		for i := 0; s.More(']', i); i++ {
			s.skip(depth + 1)
		}
	case '"':
		s.stringRaw()
	case 't':
		s.literal("true")
	case 'f':
		s.literal("false")
	case 'n':
		s.literal("null")
	default:
		s.number()
	}
}

func (s *Scanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		s.failed = true
		return false
	}
	s.i += len(lit)
	return true
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// digits returns the index of the first byte from i on that is not a
// decimal digit.
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func (s *Scanner) number() {
	if s.failed {
		return
	}
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		s.failed = true
		return
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			s.failed = true
			return
		}
		i = digits(b, i)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			s.failed = true
			return
		}
		i = digits(b, i)
	}
	s.i = i
}

// End reports whether the text was accepted and nothing but whitespace
// follows the value read.
func (s *Scanner) End() bool {
	s.ws()
	return !s.failed && s.i == len(s.b)
}
