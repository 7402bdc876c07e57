package hostagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/webview"
	"github.com/agentkernel/agentkernel/webview/hostagent"
)

// TestConformance: the web panel, its protocol served over the host by
// webview's own server and spoken by a WebSocket client as the page does,
// passes the surface suite.
func TestConformance(t *testing.T) {
	surfacetest.Run(t, func(t *testing.T, h *surfacetest.Host) surfacetest.Surface {
		srv, err := webview.Start(hostagent.New(h.Host), webview.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p := &panel{url: "ws" + strings.TrimPrefix(strings.Replace(srv.URL(), "/?", "/ws?", 1), "http"), srv: srv}
		if _, err := p.dial(context.Background()); err != nil {
			srv.Close()
			t.Fatal(err)
		}
		return p
	})
}

// panel is a client of the panel's socket: it keeps the messages it was
// shown by stamp, as the page does.
type panel struct {
	url   string
	srv   *webview.Server
	ws    *websocket.Conn
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

// dial connects and reads the state frame.
func (p *panel) dial(ctx context.Context) (webview.State, error) {
	ws, _, err := websocket.Dial(ctx, p.url, nil)
	if err != nil {
		return webview.State{}, err
	}
	ws.SetReadLimit(64 << 20)
	p.ws, p.queue = ws, nil
	f, err := p.read(ctx)
	if err != nil {
		return webview.State{}, err
	}
	if f.Type != "state" || f.State == nil {
		return webview.State{}, fmt.Errorf("first frame %q, want state", f.Type)
	}
	return *f.State, nil
}

// read reads one frame (a socket message is a frame or a batch of them)
// and mirrors the messages it carries.
func (p *panel) read(ctx context.Context) (frame, error) {
	for len(p.queue) == 0 {
		_, b, err := p.ws.Read(ctx)
		if err != nil {
			return frame{}, err
		}
		if len(b) > 0 && b[0] == '[' {
			err = json.Unmarshal(b, &p.queue)
		} else {
			var f frame
			err = json.Unmarshal(b, &f)
			p.queue = append(p.queue, f)
		}
		if err != nil {
			return frame{}, fmt.Errorf("frame %s: %w", b, err)
		}
	}
	f := p.queue[0]
	p.queue = p.queue[1:]
	switch f.Type {
	case "state":
		p.msgs = map[int64]*messages.UIMessage{}
		for i := range f.State.Messages {
			p.msgs[f.State.Messages[i].TS] = &f.State.Messages[i]
		}
	case "messageCreated", "messageUpdated":
		if f.Message != nil {
			p.msgs[f.Message.TS] = f.Message
		} else if m := p.msgs[f.TS]; m != nil {
			m.Text += f.Append
		}
	case "messagesRewound":
		p.msgs = map[int64]*messages.UIMessage{}
		for i := range f.Messages {
			p.msgs[f.Messages[i].TS] = &f.Messages[i]
		}
	case "error":
		return f, fmt.Errorf("error frame %s: %s", f.Code, f.Text)
	}
	return f, nil
}

// send sends a client frame with a fresh id and returns the id.
func (p *panel) send(ctx context.Context, v map[string]any) (string, error) {
	p.ids++
	v["id"] = fmt.Sprintf("c%d", p.ids)
	b, _ := json.Marshal(v)
	return v["id"].(string), p.ws.Write(ctx, websocket.MessageText, b)
}

func (p *panel) Start(ctx context.Context, text string) error {
	_, err := p.send(ctx, map[string]any{"type": webview.TypeNewTask, "text": text})
	return err
}

// Prompt sends a newTask, approves each ask with the Approve button's
// frame, and waits for the status to go busy and back to idle.
func (p *panel) Prompt(ctx context.Context, text string) (surfacetest.Turn, error) {
	var turn surfacetest.Turn
	before := map[int64]bool{}
	for ts := range p.msgs {
		before[ts] = true
	}
	if err := p.Start(ctx, text); err != nil {
		return turn, err
	}
	busy := false
	answered := map[int64]bool{}
	for {
		f, err := p.read(ctx)
		if err != nil {
			return turn, err
		}
		if m := f.Message; m != nil && m.Type == messages.TypeAsk && m.Ask == messages.AskCommand && !m.Partial && !answered[m.TS] {
			answered[m.TS] = true
			turn.Asked = append(turn.Asked, m.Text)
			if _, err := p.send(ctx, map[string]any{"type": webview.TypeAskResponse, "ts": m.TS,
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
	for _, m := range p.sorted() {
		if !before[m.TS] && m.Type == messages.TypeSay && m.Say == messages.SayText && m.Text != text {
			turn.Text += m.Text
		}
	}
	return turn, nil
}

// Cancel presses Cancel and waits for the status to go idle.
func (p *panel) Cancel(ctx context.Context) error {
	if _, err := p.send(ctx, map[string]any{"type": webview.TypeCancelTask}); err != nil {
		return err
	}
	for {
		f, err := p.read(ctx)
		if err != nil {
			return err
		}
		if f.Type == "kernelStatus" && f.Status == "idle" {
			return nil
		}
	}
}

// Rewind is the Rewind button with "conversation only", and waits for
// its report.
func (p *panel) Rewind(ctx context.Context, ts int64) error {
	if _, err := p.send(ctx, map[string]any{"type": webview.TypeDeleteMessage, "ts": ts,
		"rewind": map[string]any{"conversationOnly": true}}); err != nil {
		return err
	}
	for {
		f, err := p.read(ctx)
		if err != nil {
			return err
		}
		if f.Type == "rewindReport" {
			return nil
		}
	}
}

// Reconnect closes the socket, opens another and returns the prompts its
// state frame shows.
func (p *panel) Reconnect(ctx context.Context) ([]string, error) {
	p.ws.Close(websocket.StatusNormalClosure, "")
	st, err := p.dial(ctx)
	if err != nil {
		return nil, err
	}
	return surfacetest.Prompts(st.Messages), nil
}

func (p *panel) sorted() []*messages.UIMessage {
	out := make([]*messages.UIMessage, 0, len(p.msgs))
	for _, m := range p.msgs {
		out = append(out, m)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].TS < out[j-1].TS; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func (p *panel) Close() error {
	p.ws.CloseNow()
	return p.srv.Close()
}
