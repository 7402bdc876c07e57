package wire

import (
	"encoding/binary"
	"math/bits"
)

// plainEnd returns the index of the first byte of b at or after i that
// ends a run of plain string bytes (a quote, a backslash or a control
// character below 0x20), or len(b) if there is none. It tests sixteen
// bytes at a time (the last few one by one): a forwarded output's text is
// megabytes of plain bytes, which a byte-at-a-time loop crosses at a
// fraction of memory speed.
func plainEnd(b []byte, i int) int {
	for ; i+16 <= len(b); i += 16 {
		lo, hi := special(binary.LittleEndian.Uint64(b[i:])), special(binary.LittleEndian.Uint64(b[i+8:]))
		if lo|hi != 0 {
			if lo != 0 {
				return i + bits.TrailingZeros64(lo)/8
			}
			return i + 8 + bits.TrailingZeros64(hi)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

// Every byte of a word set to 0x01, to 0x80.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special returns a mask of x's eight bytes (in memory order, x loaded
// little-endian) with the high bit set in the lowest byte that is a quote,
// a backslash or below 0x20, and 0 when none is. Bytes above the lowest
// flagged one may be flagged wrongly (a borrow runs on), which is why only
// the lowest counts. The tests are the classic "has a zero byte" and "has
// a byte less than n" word tricks.
func special(x uint64) uint64 {
	q := x ^ (ones * '"')
	s := x ^ (ones * '\\')
	return ((q-ones)&^q | (s-ones)&^s | (x-ones*0x20)&^x) & highs
}
