// Package paneltest is a client of the web panel's protocol for tests, over
// any transport (the panel's WebSocket, a Jupyter comm): it mirrors the
// messages it is shown as the page does and drives the session as a
// person at the panel would, as a surfacetest.Surface.
package paneltest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/surface/webview"
)

// Conn is one connection to the panel: Send writes one client frame, Recv
// reads one server message (a frame, or a JSON array of frames).
type Conn interface {
	Send(ctx context.Context, frame []byte) error
	Recv(ctx context.Context) ([]byte, error)
	Close() error
}

// Surface is a person at the panel, on the connections dial makes;
// closing it closes the connection, then calls done.
func Surface(ctx context.Context, dial func(context.Context) (Conn, error), done func() error) (surfacetest.Surface, error) {
	c := &client{dial: dial, done: done}
	if _, err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

type client struct {
	dial  func(context.Context) (Conn, error)
	done  func() error
	conn  Conn
	msgs  map[int64]*messages.UIMessage
	ids   int
	queue []frame // frames of a batch not yet read
}

// frame is any frame the server sends.
type frame struct {
	Type     string               `json:"type"`
	State    *webview.State       `json:"state"`
	Message  *messages.UIMessage  `json:"message"`
	Messages []messages.UIMessage `json:"messages"`
	TS       int64                `json:"ts"`
	Append   string               `json:"append"`
	Status   string               `json:"status"`
	ID       string               `json:"id"`
	Code     string               `json:"code"`
	Text     string               `json:"text"`
}

// connect opens a connection and reads its state frame.
func (c *client) connect(ctx context.Context) (webview.State, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return webview.State{}, err
	}
	c.conn, c.queue = conn, nil
	f, err := c.read(ctx)
	if err != nil {
		return webview.State{}, err
	}
	if f.Type != "state" || f.State == nil {
		return webview.State{}, fmt.Errorf("first frame %q, want state", f.Type)
	}
	return *f.State, nil
}

// read reads one frame and mirrors the messages it carries.
func (c *client) read(ctx context.Context) (frame, error) {
	for len(c.queue) == 0 {
		b, err := c.conn.Recv(ctx)
		if err != nil {
			return frame{}, err
		}
		if len(b) > 0 && b[0] == '[' {
			err = json.Unmarshal(b, &c.queue)
		} else {
			var f frame
			err = json.Unmarshal(b, &f)
			c.queue = append(c.queue, f)
		}
		if err != nil {
			return frame{}, fmt.Errorf("frame %s: %w", b, err)
		}
	}
	f := c.queue[0]
	c.queue = c.queue[1:]
	switch f.Type {
	case "state":
		c.msgs = map[int64]*messages.UIMessage{}
		for i := range f.State.Messages {
			c.msgs[f.State.Messages[i].TS] = &f.State.Messages[i]
		}
	case "messageCreated", "messageUpdated":
		if f.Message != nil {
			c.msgs[f.Message.TS] = f.Message
		} else if m := c.msgs[f.TS]; m != nil {
			m.Text += f.Append
		}
	case "messagesRewound":
		c.msgs = map[int64]*messages.UIMessage{}
		for i := range f.Messages {
			c.msgs[f.Messages[i].TS] = &f.Messages[i]
		}
	case "error":
		return f, fmt.Errorf("error frame %s: %s", f.Code, f.Text)
	}
	return f, nil
}

// send sends a client frame with a fresh id.
func (c *client) send(ctx context.Context, v map[string]any) error {
	c.ids++
	v["id"] = fmt.Sprintf("c%d", c.ids)
	b, _ := json.Marshal(v)
	return c.conn.Send(ctx, b)
}

func (c *client) Start(ctx context.Context, text string) error {
	return c.send(ctx, map[string]any{"type": webview.TypeNewTask, "text": text})
}

// Prompt sends a newTask, approves each ask with the Approve button's
// frame, and waits for the status to go busy and back to idle.
func (c *client) Prompt(ctx context.Context, text string) (surfacetest.Turn, error) {
	var turn surfacetest.Turn
	before := map[int64]bool{}
	for ts := range c.msgs {
		before[ts] = true
	}
	if err := c.Start(ctx, text); err != nil {
		return turn, err
	}
	busy := false
	answered := map[int64]bool{}
	for {
		f, err := c.read(ctx)
		if err != nil {
			return turn, err
		}
		if m := f.Message; m != nil && m.Type == messages.TypeAsk && m.Ask == messages.AskCommand && !m.Partial && !answered[m.TS] {
			answered[m.TS] = true
			turn.Asked = append(turn.Asked, m.Text)
			if err := c.send(ctx, map[string]any{"type": webview.TypeAskResponse, "ts": m.TS,
				"response": string(webview.ResponseYes)}); err != nil {
				return turn, err
			}
		}
		if f.Type == "kernelStatus" {
			busy = busy || f.Status == "busy"
			if busy && f.Status == "idle" {
				break
			}
		}
	}
	for _, m := range c.sorted() {
		if !before[m.TS] && m.Type == messages.TypeSay && m.Say == messages.SayText && m.Text != text {
			turn.Text += m.Text
		}
	}
	return turn, nil
}

// Cancel presses Cancel and waits for the status to go idle.
func (c *client) Cancel(ctx context.Context) error {
	if err := c.send(ctx, map[string]any{"type": webview.TypeCancelTask}); err != nil {
		return err
	}
	for {
		f, err := c.read(ctx)
		if err != nil {
			return err
		}
		if f.Type == "kernelStatus" && f.Status == "idle" {
			return nil
		}
	}
}

// Rewind is the Rewind button with "conversation only"; it waits for the
// report.
func (c *client) Rewind(ctx context.Context, ts int64) error {
	if err := c.send(ctx, map[string]any{"type": webview.TypeDeleteMessage, "ts": ts,
		"rewind": map[string]any{"conversationOnly": true}}); err != nil {
		return err
	}
	for {
		f, err := c.read(ctx)
		if err != nil {
			return err
		}
		if f.Type == "rewindReport" {
			return nil
		}
	}
}

// Reconnect closes the connection, opens another and returns the prompts
// its state frame shows.
func (c *client) Reconnect(ctx context.Context) ([]string, error) {
	c.conn.Close()
	st, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	return surfacetest.Prompts(st.Messages), nil
}

func (c *client) sorted() []*messages.UIMessage {
	out := make([]*messages.UIMessage, 0, len(c.msgs))
	for _, m := range c.msgs {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *messages.UIMessage) int { return int(a.TS - b.TS) })
	return out
}

func (c *client) Close() error {
	c.conn.Close()
	if c.done != nil {
		return c.done()
	}
	return nil
}
