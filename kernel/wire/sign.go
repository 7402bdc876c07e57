package wire

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"sync"
)

// SignatureScheme is the only scheme Jupyter defines and we support.
const SignatureScheme = "hmac-sha256"

// Errors returned by Decode. Use errors.Is; the returned error wraps one of
// these with detail.
var (
	ErrNoDelimiter      = errors.New("wire: no <IDS|MSG> delimiter")
	ErrTooFewFrames     = errors.New("wire: too few frames after delimiter")
	ErrBadSignature     = errors.New("wire: bad signature")
	ErrMissingSignature = errors.New("wire: missing signature")
	ErrTooLarge         = errors.New("wire: message too large")
	ErrMalformed        = errors.New("wire: malformed message")
)

// Limits bound what Decode accepts. The zero value applies the defaults.
type Limits struct {
	// MaxFrames caps the number of frames (identities + 5 + buffers).
	// Default 1024.
	MaxFrames int
	// MaxBytes caps the total size of all frames. Default 256 MiB.
	MaxBytes int
}

func (l Limits) withDefaults() Limits {
	if l.MaxFrames <= 0 {
		l.MaxFrames = 1024
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = 256 << 20
	}
	return l
}

// Signer signs and verifies messages with one key. An empty key disables
// signing (as Jupyter does): signatures are empty and not checked.
// A Signer is safe for concurrent use.
type Signer struct {
	key    []byte
	limits Limits
	pool   sync.Pool
}

// NewSigner returns a Signer for key using scheme ("" means hmac-sha256).
func NewSigner(scheme string, key []byte, limits Limits) (*Signer, error) {
	if scheme != "" && scheme != SignatureScheme {
		return nil, fmt.Errorf("wire: unsupported signature scheme %q (want %s)", scheme, SignatureScheme)
	}
	s := &Signer{key: bytes.Clone(key), limits: limits.withDefaults()}
	s.pool.New = func() any { return hmac.New(sha256.New, s.key) }
	return s, nil
}

// Enabled reports whether messages are signed.
func (s *Signer) Enabled() bool { return len(s.key) > 0 }

// sign returns the hex HMAC of the four signed frames, appended to dst.
func (s *Signer) sign(dst []byte, parts ...[]byte) []byte {
	if !s.Enabled() {
		return dst
	}
	h := s.pool.Get().(hash.Hash)
	h.Reset()
	for _, p := range parts {
		h.Write(p)
	}
	var sum [sha256.Size]byte
	mac := h.Sum(sum[:0])
	s.pool.Put(h)
	return hex.AppendEncode(dst, mac)
}

// Encode returns the frames of m: identities, delimiter, signature, header,
// parent header, metadata, content, buffers.
func (s *Signer) Encode(m *Message) ([][]byte, error) {
	header := m.RawHeader()
	parent := orEmpty(m.ParentHeader)
	meta := orEmpty(m.Metadata)
	content := orEmpty(m.Content)
	frames := make([][]byte, 0, len(m.Identities)+6+len(m.Buffers))
	frames = append(frames, m.Identities...)
	frames = append(frames, []byte(Delimiter))
	frames = append(frames, s.sign(make([]byte, 0, 64), header, parent, meta, content))
	frames = append(frames, header, parent, meta, content)
	frames = append(frames, m.Buffers...)
	return frames, nil
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return emptyObject
	}
	return b
}

var delimiter = []byte(Delimiter)

// Decode verifies and parses frames read from a socket. It never panics; on
// any error the message must be dropped.
func (s *Signer) Decode(frames [][]byte) (*Message, error) {
	if len(frames) > s.limits.MaxFrames {
		return nil, fmt.Errorf("%w: %d frames (limit %d)", ErrTooLarge, len(frames), s.limits.MaxFrames)
	}
	total := 0
	for _, f := range frames {
		total += len(f)
	}
	if total > s.limits.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, total, s.limits.MaxBytes)
	}
	d := -1
	for i, f := range frames {
		if bytes.Equal(f, delimiter) {
			d = i
			break
		}
	}
	if d < 0 {
		return nil, ErrNoDelimiter
	}
	rest := frames[d+1:]
	if len(rest) < 5 {
		return nil, fmt.Errorf("%w: got %d, need 5", ErrTooFewFrames, len(rest))
	}
	sig, header, parent, meta, content := rest[0], rest[1], rest[2], rest[3], rest[4]
	if !s.Enabled() {
		return parse(frames, d)
	}
	if len(sig) == 0 {
		return nil, ErrMissingSignature
	}
	verify := func() bool { return hmac.Equal(s.sign(make([]byte, 0, 64), header, parent, meta, content), sig) }
	if len(content) < parallelVerify {
		if !verify() {
			return nil, ErrBadSignature
		}
		return parse(frames, d)
	}
	// A big message: its signature is checked beside the parse (the JSON
	// checks), which reads the same bytes, and the parse's verdict is only
	// told once the signature holds: a forged message is ErrBadSignature
	// whatever its JSON.
	ok := make(chan bool, 1)
	go func() { ok <- verify() }()
	m, err := parse(frames, d)
	if !<-ok {
		return nil, ErrBadSignature
	}
	return m, err
}

// parallelVerify is the content size from which Decode checks a
// signature on a goroutine of its own, beside the parse: a megabyte's
// HMAC and its JSON check take about as long each, and starting a
// goroutine is a microsecond.
const parallelVerify = 256 << 10

// parse is Decode's part after the signature: frames[d] is the delimiter,
// and at least five frames follow it.
func parse(frames [][]byte, d int) (*Message, error) {
	rest := frames[d+1:]
	header, parent, meta, content := rest[1], rest[2], rest[3], rest[4]
	m := &Message{
		Identities: frames[:d:d],
		rawHeader:  json.RawMessage(header),
	}
	if err := decodeHeader(header, &m.Header); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrMalformed, err)
	}
	if m.Header.MsgType == "" {
		return nil, fmt.Errorf("%w: header has no msg_type", ErrMalformed)
	}
	for _, part := range []struct {
		name string
		raw  []byte
		dst  *json.RawMessage
	}{{"parent_header", parent, &m.ParentHeader}, {"metadata", meta, &m.Metadata}, {"content", content, &m.Content}} {
		if !isObject(part.raw) {
			return nil, fmt.Errorf("%w: %s is not a JSON object", ErrMalformed, part.name)
		}
		*part.dst = json.RawMessage(part.raw)
	}
	if len(rest) > 5 {
		m.Buffers = rest[5:]
	}
	return m, nil
}

// isObject reports whether b is a valid JSON object.
func isObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{' && validJSON(b)
}
