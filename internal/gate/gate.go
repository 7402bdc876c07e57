// Package gate holds back a reader until it is opened: the ACP SDK starts
// reading its connection as it is made, before its logger can be set
// (SetLogger races with the reading goroutine), so the connection is given
// a gated reader and the gate is opened once the logger is set.
package gate

import (
	"io"
	"sync"
)

// Reader is an io.Reader whose reads wait until Open.
type Reader struct {
	r    io.Reader
	open chan struct{}
	once sync.Once
}

// New returns r held back until Open.
func New(r io.Reader) *Reader { return &Reader{r: r, open: make(chan struct{})} }

// Open lets reads through.
func (g *Reader) Open() { g.once.Do(func() { close(g.open) }) }

// Read implements io.Reader.
func (g *Reader) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}
