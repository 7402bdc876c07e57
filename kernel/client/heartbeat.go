package client

import (
	"fmt"
	"time"

	"github.com/go-zeromq/zmq4"
)

// maxMisses is how many heartbeat intervals in a row may pass without a
// pong before the kernel is declared dead.
const maxMisses = 3

// heartbeat owns the link's heartbeat: every interval it asks the pinger
// for a ping; an unanswered or failed ping is a miss. Its pinger goroutine
// owns the REQ socket (zmq4's Recv cannot time out, so the two are split).
func (c *Client) heartbeat(l *link) {
	defer l.wg.Done()
	pings := make(chan struct{})
	pongs := make(chan error, 1)
	l.wg.Add(1)
	go c.pinger(l, pings, pongs)

	t := time.NewTicker(c.opts.HeartbeatInterval)
	defer t.Stop()
	outstanding, failed, misses := false, false, 0
	var lastErr error
	for {
		select {
		case <-l.ctx.Done():
			return
		case err := <-pongs:
			outstanding = false
			if err == nil {
				failed, misses = false, 0
				continue
			}
			failed, lastErr = true, err
			c.log.Debug("heartbeat failed", "error", err)
		case <-t.C:
			if outstanding {
				misses++
				lastErr = fmt.Errorf("no pong within %v", c.opts.HeartbeatInterval)
			} else if failed {
				misses++
			}
			if misses >= maxMisses {
				c.log.Warn("heartbeat lost", "misses", misses, "error", lastErr)
				c.onDead(fmt.Errorf("%w: no heartbeat for %d intervals of %v: %v", ErrDead, misses, c.opts.HeartbeatInterval, lastErr))
				return
			}
			if outstanding {
				continue
			}
			failed = false
			select {
			case pings <- struct{}{}:
				outstanding = true
			case <-l.ctx.Done():
				return
			}
		}
	}
}

// pinger sends one ping per request from heartbeat and reports the result.
func (c *Client) pinger(l *link, pings <-chan struct{}, pongs chan<- error) {
	defer l.wg.Done()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-pings:
		}
		err := l.hb.Send(zmq4.NewMsg([]byte("ping")))
		if err == nil {
			_, err = l.hb.Recv()
		}
		select {
		case pongs <- err:
		case <-l.ctx.Done():
			return
		}
	}
}
