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
	key     []byte
	limits  Limits
	lazyMin int // LazyMin; less in tests
	pool    sync.Pool
}

// NewSigner returns a Signer for key using scheme ("" means hmac-sha256).
func NewSigner(scheme string, key []byte, limits Limits) (*Signer, error) {
	if scheme != "" && scheme != SignatureScheme {
		return nil, fmt.Errorf("wire: unsupported signature scheme %q (want %s)", scheme, SignatureScheme)
	}
	s := &Signer{key: bytes.Clone(key), limits: limits.withDefaults(), lazyMin: LazyMin}
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
	d, err := s.frame(frames)
	if err != nil {
		return nil, err
	}
	return s.decode(frames, d)
}

// decode is Decode once frame has checked the frames and found the
// delimiter at d.
func (s *Signer) decode(frames [][]byte, d int) (*Message, error) {
	rest := frames[d+1:]
	sig, header, parent, meta, content := rest[0], rest[1], rest[2], rest[3], rest[4]
	if !s.Enabled() {
		return s.parse(frames, d)
	}
	verify := func() bool { return hmac.Equal(s.sign(make([]byte, 0, 64), header, parent, meta, content), sig) }
	if len(content) < parallelVerify {
		if !verify() {
			return nil, ErrBadSignature
		}
		return s.parse(frames, d)
	}
	// A big message: its signature is checked beside the parse (the JSON
	// checks), which reads the same bytes, and the parse's verdict is only
	// told once the signature holds: a forged message is ErrBadSignature
	// whatever its JSON.
	ok := make(chan bool, 1)
	go func() { ok <- verify() }()
	m, err := s.parse(frames, d)
	if !<-ok {
		return nil, ErrBadSignature
	}
	return m, err
}

// frame checks the frames' shape (the limits, the delimiter, five frames
// after it, a signature when messages are signed) and returns the
// delimiter's index.
func (s *Signer) frame(frames [][]byte) (int, error) {
	if len(frames) > s.limits.MaxFrames {
		return 0, fmt.Errorf("%w: %d frames (limit %d)", ErrTooLarge, len(frames), s.limits.MaxFrames)
	}
	total := 0
	for _, f := range frames {
		total += len(f)
	}
	if total > s.limits.MaxBytes {
		return 0, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, total, s.limits.MaxBytes)
	}
	d := -1
	for i, f := range frames {
		if bytes.Equal(f, delimiter) {
			d = i
			break
		}
	}
	if d < 0 {
		return 0, ErrNoDelimiter
	}
	if rest := len(frames) - d - 1; rest < 5 {
		return 0, fmt.Errorf("%w: got %d, need 5", ErrTooFewFrames, rest)
	}
	if s.Enabled() && len(frames[d+1]) == 0 {
		return 0, ErrMissingSignature
	}
	return d, nil
}

// parallelVerify is the content size from which Decode checks a
// signature on a goroutine of its own, beside the parse: a megabyte's
// HMAC and its JSON check take about as long each, and starting a
// goroutine is a microsecond.
const parallelVerify = 256 << 10

// LazyMin is the content size from which DecodeLazy leaves a message's
// checks to Verify.
const LazyMin = 64 << 10

// DecodeLazy is Decode for a message that is likely only to be sent on:
// one whose content is LazyMin or more (and that is not a status) has its
// frames' shape checked and its header and parent header parsed, and its
// signature and the JSON of its metadata and content are checked by
// Verify, which must succeed before they are used. A proxy that shares
// the key of the kernel it reads and of the frontend it serves sends such
// a message on as signed (Signed), and the frontend checks the
// signature; its own uses of the content call Verify first. Smaller
// messages are decoded as Decode does.
func (s *Signer) DecodeLazy(frames [][]byte) (*Message, error) {
	d, err := s.frame(frames)
	if err != nil {
		return nil, err
	}
	if len(frames[d+5]) < s.lazyMin {
		return s.decode(frames, d)
	}
	rest := frames[d+1:]
	m := &Message{Identities: frames[:d:d], rawHeader: json.RawMessage(rest[1]), signed: rest, signer: s}
	if err := decodeHeader(rest[1], &m.Header); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrMalformed, err)
	}
	if m.Header.MsgType == "" || m.Header.MsgType == MsgStatus {
		return s.decode(frames, d)
	}
	if !isObject(rest[2]) {
		return nil, fmt.Errorf("%w: parent_header is not a JSON object", ErrMalformed)
	}
	m.ParentHeader, m.Metadata, m.Content = rest[2], rest[3], rest[4]
	if len(rest) > 5 {
		m.Buffers = rest[5:]
	}
	m.check = &lazyCheck{s: s, frames: frames, d: d}
	return m, nil
}

// lazyCheck is what DecodeLazy left to Verify.
type lazyCheck struct {
	once   sync.Once
	err    error
	s      *Signer
	frames [][]byte
	d      int
}

// Verify reports whether m may be used: nil for a message decoded by
// Decode or built here; for one decoded lazily (DecodeLazy), the verdict
// of the checks Decode would have made, reached once.
func (m *Message) Verify() error {
	c := m.check
	if c == nil {
		return nil
	}
	c.once.Do(func() {
		_, c.err = c.s.decode(c.frames, c.d)
		c.frames = nil
	})
	return c.err
}

// Lazy reports whether m was decoded lazily: its Verify makes the checks
// Decode would have made.
func (m *Message) Lazy() bool { return m.check != nil }

// Signed returns the frames of m from its signature on, as they were
// read, when s can send them on unchanged: m was read from a socket by a
// Signer with s's key, and its header, metadata, content and buffers are
// still those frames. Otherwise nil: m must be encoded (Encode) to be
// sent.
func (s *Signer) Signed(m *Message) [][]byte {
	f := m.signed
	if f == nil || m.signer == nil || !bytes.Equal(m.signer.key, s.key) ||
		!same(m.rawHeader, f[1]) || !same(m.Metadata, f[3]) || !same(m.Content, f[4]) || len(m.Buffers) != len(f)-5 {
		return nil
	}
	return f
}

// same reports whether a and b are the same bytes in memory (not only
// equal ones).
func same(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// parse is Decode's part after the signature: frames[d] is the delimiter,
// and at least five frames follow it.
func (s *Signer) parse(frames [][]byte, d int) (*Message, error) {
	rest := frames[d+1:]
	header, parent, meta, content := rest[1], rest[2], rest[3], rest[4]
	m := &Message{
		Identities: frames[:d:d],
		rawHeader:  json.RawMessage(header),
		signed:     rest,
		signer:     s,
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
