package webview

import (
	"context"
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

// run executes one command for c and answers it: an ack (when the frame
// had an id), a reply frame, or an error frame.
func (p *Panel) run(ctx context.Context, c *conn, in Inbound) {
	p.log.Debug("web panel command", "client", c.id, "type", in.Type)
	a := &p.agent
	var err error
	switch in.Type {
	case TypeNewTask:
		err = a.Driver.NewTask(ctx, in.Text, in.Images)
	case TypeAskResponse:
		err = a.Driver.Respond(ctx, in.TS, Response{Kind: ResponseKind(in.Response), Text: in.Text, Images: in.Images})
	case TypeCancelTask:
		err = a.Driver.Cancel(ctx)
	case TypeDeleteMessage, TypeForkSession, TypeEditMessage:
		choice := RewindChoice{}
		if in.Rewind != nil {
			choice = *in.Rewind
		}
		var rep RewindReport
		switch in.Type {
		case TypeDeleteMessage:
			rep, err = a.Rewinder.Rewind(ctx, in.TS, choice)
		case TypeForkSession:
			rep, err = a.Rewinder.Fork(ctx, in.TS, choice)
		default:
			rep, err = a.Rewinder.Edit(ctx, in.TS, in.Text, choice)
		}
		if err == nil {
			p.hub.sendTo(c, mustJSON(rewindReportFrame{V: ProtocolVersion, Type: "rewindReport", ID: in.ID, Report: rep}))
			return
		}
	case TypeSetPermissionMode:
		err = a.Modes.SetPermissionMode(ctx, in.PermissionMode)
	case TypeSetAgentMode:
		err = a.Modes.SetAgentMode(ctx, in.AgentMode)
	case TypeSetModel:
		err = a.Modes.SetModel(ctx, in.Model)
	case TypeLoadSession:
		err = a.Sessions.LoadSession(ctx, in.SessionID)
	case TypeGetState:
		p.hub.stateFor(c)
	case TypeLoadOlder:
		p.hub.olderFor(c, in.ID, in.TS, orInt(in.Limit, 200))
		return
	case TypeGetSettings, TypeSetKey, TypeSetBaseURL, TypeSetEffort:
		if err = p.runSettings(ctx, c, in); err == nil {
			return // the modelSettings frame answers it
		}
	case TypeCompleteMention:
		if err = p.runCompleteMention(c, in); err == nil {
			return // the mentionCompletions frame answers it
		}
	case TypeListSessions:
		var list []SessionInfo
		if list, err = a.Sessions.ListSessions(ctx, in.Search, orInt(in.Limit, 50)); err == nil {
			if list == nil {
				list = []SessionInfo{}
			}
			p.hub.sendTo(c, mustJSON(sessionsFrame{V: ProtocolVersion, Type: "sessions", ID: in.ID, Search: in.Search, Sessions: list}))
			return
		}
	case TypeSearchMessages:
		var hits []SearchHit
		if hits, err = a.Sessions.SearchMessages(ctx, in.Query, orInt(in.Limit, 20)); err == nil {
			if hits == nil {
				hits = []SearchHit{}
			}
			p.hub.sendTo(c, mustJSON(searchFrame{V: ProtocolVersion, Type: "searchResults", ID: in.ID, Query: in.Query, Hits: hits}))
			return
		}
	}
	if err != nil {
		p.hub.sendTo(c, errorJSON(frameErr(CodeFailed, in.ID, "%s: %v", in.Type, err)))
		return
	}
	if in.ID != "" {
		p.hub.sendTo(c, mustJSON(ackFrame{V: ProtocolVersion, Type: "ack", ID: in.ID}))
	}
}

func orInt(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

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
