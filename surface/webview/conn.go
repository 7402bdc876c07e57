package webview

import (
	"fmt"
	"net"
	"sync"
)

// errClosed is what a second Close returns.
var errClosed = net.ErrClosed

// conn is one client of the panel, whatever its transport. Its send
// buffer is filled by the hub (offer never blocks) and drained by its
// writer goroutine (Panel.writeLoop), which closes written when it ends.
type conn struct {
	id   string
	send chan []byte

	once    sync.Once
	done    chan struct{} // closed by drop
	reason  string        // set before done is closed
	written chan struct{} // closed when the writer has ended
}

// offer queues frame unless the buffer is full or the conn is dropped.
func (c *conn) offer(frame []byte) bool {
	select {
	case <-c.done:
		return true // already going; nothing to drop
	default:
	}
	select {
	case c.send <- frame:
		return true
	default:
		return false
	}
}

// drop ends the conn with reason: the writer closes the transport with it
// once its current write ends (a stalled peer's write ends at
// WriteTimeout). Nobody waits for it meanwhile: offer queues nothing
// more for a dropped conn. drop never blocks.
func (c *conn) drop(reason string) {
	c.once.Do(func() {
		c.reason = reason
		close(c.done)
	})
}

const reasonShutdown = "server shutting down"

func newConnID(n uint64) string { return fmt.Sprintf("c%d", n) }

// Batching bounds: frames and bytes of one batched message.
const (
	maxBatchFrames = 64
	maxBatchBytes  = 256 << 10
)

// batchFrames returns first alone when nothing else is queued, else a JSON
// array of first and the frames queued behind it (within the bounds),
// built in buf.
func batchFrames(first []byte, queue <-chan []byte, buf *[]byte) []byte {
	var more bool
	b := append((*buf)[:0], '[')
	b = append(b, first...)
drain:
	for n := 1; n < maxBatchFrames && len(b) < maxBatchBytes; n++ {
		select {
		case f := <-queue:
			b = append(append(b, ','), f...)
			more = true
		default:
			break drain
		}
	}
	if !more {
		return first
	}
	b = append(b, ']')
	*buf = b
	return b
}
