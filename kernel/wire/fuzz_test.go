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
