package wire

import (
	"bytes"
	"testing"
)

// FuzzDecode feeds arbitrary frame sets to Decode: it must never panic, and
// whatever it accepts must re-encode and decode to the same header.
func FuzzDecode(f *testing.F) {
	s, _ := NewSigner("", nil, Limits{})
	frames, _ := s.Encode(sample())
	f.Add(bytes.Join(frames, []byte{0}), uint8(0))
	f.Add([]byte("<IDS|MSG>\x00\x00{}\x00{}\x00{}\x00{}"), uint8(1))
	f.Add([]byte{}, uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		parts := bytes.Split(data, []byte{0})
		signer := s
		if mode%2 == 1 {
			signer, _ = NewSigner("", []byte("k"), Limits{MaxFrames: 16, MaxBytes: 4096})
		}
		m, err := signer.Decode(parts)
		if err != nil {
			return
		}
		out, err := signer.Encode(m)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		m2, err := signer.Decode(out)
		if err != nil {
			t.Fatalf("decode of re-encoded message: %v", err)
		}
		if m2.Header != m.Header {
			t.Fatalf("header changed: %+v vs %+v", m2.Header, m.Header)
		}
		_, _ = m.Parent()
		var v map[string]any
		_ = m.DecodeContent(&v)
	})
}

// FuzzDecodeLazy checks that a message decoded lazily is usable (Verify)
// exactly when Decode takes it, with the same header and parts, and that
// it can be sent on as signed only by a Signer with its key.
func FuzzDecodeLazy(f *testing.F) {
	key := []byte("k")
	s, _ := NewSigner("", key, Limits{MaxFrames: 16, MaxBytes: 4096})
	s.lazyMin = 1
	frames, _ := s.Encode(sample())
	f.Add(bytes.Join(frames, []byte{0}))
	frames[1][0] ^= 1 // a bad signature
	f.Add(bytes.Join(frames, []byte{0}))
	f.Add([]byte("<IDS|MSG>\x00\x00{}\x00{}\x00{}\x00{}"))
	other, _ := NewSigner("", []byte("other"), Limits{})
	f.Fuzz(func(t *testing.T, data []byte) {
		parts := bytes.Split(data, []byte{0})
		m, err := s.Decode(parts)
		lazy, lerr := s.DecodeLazy(parts)
		if lerr == nil {
			lerr = lazy.Verify()
		}
		if (err == nil) != (lerr == nil) {
			t.Fatalf("Decode: %v; DecodeLazy and Verify: %v", err, lerr)
		}
		if err != nil {
			return
		}
		if lazy.Header != m.Header || !bytes.Equal(lazy.Content, m.Content) || !bytes.Equal(lazy.Metadata, m.Metadata) ||
			!bytes.Equal(lazy.ParentHeader, m.ParentHeader) || len(lazy.Buffers) != len(m.Buffers) {
			t.Fatalf("lazy %+v, eager %+v", lazy, m)
		}
		if s.Signed(lazy) == nil || s.Signed(m) == nil {
			t.Fatal("a message read with the key cannot be sent on as signed")
		}
		if other.Signed(lazy) != nil {
			t.Fatal("a message read with one key would be sent on under another")
		}
	})
}
