package wire

import (
	"math/rand/v2"
	"testing"
)

// naivePlainEnd is plainEnd a byte at a time.
func naivePlainEnd(b []byte, i int) int {
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

// TestPlainEnd puts every byte value at every position of runs of plain
// bytes (those next to the special ones among them: a borrow or a carry
// must not flag a neighbour) and compares plainEnd with a byte-at-a-time
// scan, from every start.
func TestPlainEnd(t *testing.T) {
	for _, fill := range []byte{'x', 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xff} {
		for n := range 40 {
			for pos := range n {
				for c := range 256 {
					b := make([]byte, n)
					for k := range b {
						b[k] = fill
					}
					b[pos] = byte(c)
					for start := range n + 1 {
						if got, want := plainEnd(b, start), naivePlainEnd(b, start); got != want {
							t.Fatalf("plainEnd(%q, %d) = %d, want %d", b, start, got, want)
						}
					}
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{'"', '\\', 0, 0x1f, 0x20, 'a', 0x7f, 0x80, 0xc3, 0xff}
	for range 20000 {
		b := make([]byte, r.IntN(70))
		for k := range b {
			if r.IntN(8) == 0 {
				b[k] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[k] = byte(0x20 + r.IntN(0xe0))
			}
		}
		start := r.IntN(len(b) + 1)
		if got, want := plainEnd(b, start), naivePlainEnd(b, start); got != want {
			t.Fatalf("plainEnd(%q, %d) = %d, want %d", b, start, got, want)
		}
	}
}
