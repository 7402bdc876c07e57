package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/internal/nbcomm"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/surface/webview/paneltest"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestCommConformance: the panel's protocol through a Jupyter comm (what
// the JupyterLab sidebar speaks, through the notebook's own kernel
// connection) passes the surface suite, in a code-mode kernel: the panel
// drives the agent while the notebook's cells run code.
func TestCommConformance(t *testing.T) {
	surfacetest.Run(t, func(t *testing.T, h *surfacetest.Host) surfacetest.Surface {
		conn, stop := serveBridge(t, h, CodeCells)
		s, err := paneltest.Surface(context.Background(), func(ctx context.Context) (paneltest.Conn, error) {
			return dialComm(ctx, conn)
		}, stop)
		if err != nil {
			stop()
			t.Fatal(err)
		}
		return s
	})
}

// commConn is a frontend's comm to the panel target on its own kernel
// connection.
type commConn struct {
	c      *client.Client
	id     string
	frames chan []byte
}

func dialComm(ctx context.Context, conn *wire.ConnectionInfo) (*commConn, error) {
	cc := newCommConn()
	c, err := client.Dial(ctx, conn, client.Options{Logger: logger(), OnIOPub: cc.iopub})
	if err != nil {
		return nil, err
	}
	if err := cc.open(ctx, c); err != nil {
		c.Close()
		return nil, err
	}
	return cc, nil
}

func newCommConn() *commConn {
	return &commConn{id: uuid.NewString(), frames: make(chan []byte, 4096)}
}

// open opens the comm on c, whose OnIOPub is cc.iopub: as JupyterLab
// sends comm messages, without waiting for a status (the kernel
// publishes none for its panel comms).
func (cc *commConn) open(ctx context.Context, c *client.Client) error {
	cc.c = c
	return c.Send(ctx, client.Request{MsgType: wire.MsgCommOpen, Content: map[string]any{
		"comm_id": cc.id, "target_name": PanelTarget, "data": map[string]any{}}})
}

// iopub takes the comm's messages, wherever their parent is.
func (cc *commConn) iopub(m *wire.Message) {
	if m.Header.MsgType != wire.MsgCommMsg {
		return
	}
	var c struct {
		CommID string `json:"comm_id"`
		Data   struct {
			Frame json.RawMessage `json:"frame"`
		} `json:"data"`
	}
	if json.Unmarshal(m.Content, &c) == nil && c.CommID == cc.id {
		cc.frames <- c.Data.Frame
	}
}

func (cc *commConn) Send(ctx context.Context, frame []byte) error {
	return cc.c.Send(ctx, client.Request{MsgType: wire.MsgCommMsg, Content: map[string]any{
		"comm_id": cc.id, "data": map[string]json.RawMessage{"frame": frame}}})
}

func (cc *commConn) Recv(ctx context.Context) ([]byte, error) {
	select {
	case f := <-cc.frames:
		return f, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("no panel frame: %w", ctx.Err())
	}
}

func (cc *commConn) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := cc.c.Send(ctx, client.Request{MsgType: wire.MsgCommClose, Content: map[string]any{"comm_id": cc.id, "data": map[string]any{}}})
	return errors.Join(err, cc.c.Close())
}

// TestCommAnswersTheRunningCell: with the sidebar open, the running
// cell's ask is answered there: the cell says so instead of asking on
// stdin (a stdin prompt would outlive the answer, and JupyterLab then
// refuses to run cells), the comm's messages are not queued behind the
// cell, and no status of theirs tells the notebook its kernel is idle.
func TestCommAnswersTheRunningCell(t *testing.T) {
	h := surfacetest.NewHost(t)
	conn, stop := serveBridge(t, h, PromptCells)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	h.Script.Enqueue(
		scripted.Reply(scripted.ToolCall("c1", "execute_code", `{"code":"6*7"}`)),
		scripted.Reply(scripted.Text("It is 42.")),
	)
	// The sidebar's comm is on the notebook's own connection, as in
	// JupyterLab (a second client could not even get ready: its
	// kernel_info would wait behind the running cell).
	side := newCommConn()
	nb, err := client.Dial(ctx, conn, client.Options{Logger: logger(), OnIOPub: side.iopub})
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	if err := side.open(ctx, nb); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var states []string
	var out strings.Builder
	done := make(chan error, 1)
	go func() {
		_, err := nb.Execute(ctx, "What is 6 times 7?", client.ExecuteOptions{AllowStdin: true}, client.Handlers{
			IOPub: func(m *wire.Message) {
				var c struct {
					State string `json:"execution_state"`
					Text  string `json:"text"`
				}
				_ = json.Unmarshal(m.Content, &c)
				mu.Lock()
				defer mu.Unlock()
				switch m.Header.MsgType {
				case wire.MsgStatus:
					states = append(states, c.State)
				case wire.MsgStream:
					out.WriteString(c.Text)
				}
			},
			Input: func(p string, _ bool) (string, error) {
				t.Errorf("the cell asked on stdin with the sidebar open: %q", p)
				return "n", nil
			},
		})
		done <- err
	}()
	// The sidebar sees the ask and answers it.
	var ts int64
	for ts == 0 {
		msg, err := side.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var frames []struct {
			Type    string `json:"type"`
			Message *struct {
				TS      int64  `json:"ts"`
				Type    string `json:"type"`
				Ask     string `json:"ask"`
				Partial bool   `json:"partial"`
			} `json:"message"`
		}
		if len(msg) > 0 && msg[0] != '[' {
			msg = append(append([]byte("["), msg...), ']')
		}
		_ = json.Unmarshal(msg, &frames)
		for _, f := range frames {
			if m := f.Message; m != nil && m.Type == "ask" && m.Ask == "command" && !m.Partial {
				ts = m.TS
			}
		}
	}
	// The user answers once the cell has told them where: a sidebar that
	// answered before the cell's approver came to the ask would leave
	// nothing to say.
	for {
		mu.Lock()
		told := strings.Contains(out.String(), "Answer it in the Agent sidebar.")
		mu.Unlock()
		if told {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the cell never said where to answer its ask")
		}
		time.Sleep(5 * time.Millisecond)
	}
	frame, _ := json.Marshal(map[string]any{"type": "askResponse", "ts": ts, "response": "yesButtonClicked"})
	if err := side.Send(ctx, frame); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the cell: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the cell did not go on after the sidebar's answer")
	}
	if ran := h.Runner.Ran(); len(ran) != 1 || ran[0] != "6*7" {
		t.Errorf("ran %q", ran)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(out.String(), "Answer it in the Agent sidebar.") || !strings.Contains(out.String(), "6*7") {
		t.Errorf("the cell's note of the ask: %q", out.String())
	}
	if len(states) != 2 || states[0] != "busy" || states[1] != "idle" {
		t.Errorf("the cell's statuses %q: the sidebar's messages must not add any", states)
	}
}

// TestCommInfoWhileACellRuns: a comm_info_request for the panel's target is
// answered at once, also while a cell runs (it skips the shell queue, and
// adds no status), and lists the panel comms open; a comm_info_request for
// every target, which the backing kernel answers, has ours added.
func TestCommInfoWhileACellRuns(t *testing.T) {
	h := surfacetest.NewHost(t)
	conn, stop := serveBridge(t, h, PromptCells)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h.Script.Enqueue(scripted.Reply(scripted.Stall()))
	side := newCommConn()
	nb, err := client.Dial(ctx, conn, client.Options{Logger: logger(), OnIOPub: side.iopub})
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	if err := side.open(ctx, nb); err != nil {
		t.Fatal(err)
	}
	cell := make(chan error, 1)
	go func() {
		_, err := nb.Execute(ctx, "Think forever", client.ExecuteOptions{}, client.Handlers{})
		cell <- err
	}()
	for h.Script.Pending() > 0 { // the model is asked: the cell runs
		time.Sleep(10 * time.Millisecond)
	}
	rep, err := nb.Do(ctx, client.Request{MsgType: wire.MsgCommInfoRequest, Content: map[string]any{"target_name": PanelTarget}}, client.Handlers{})
	if err != nil {
		t.Fatalf("comm_info while the cell runs: %v", err)
	}
	var info struct {
		Comms map[string]struct {
			Target string `json:"target_name"`
		} `json:"comms"`
	}
	if err := json.Unmarshal(rep.Content, &info); err != nil || len(info.Comms) != 1 || info.Comms[side.id].Target != PanelTarget {
		t.Fatalf("comm_info_reply %s (%v)", rep.Content, err)
	}
	select {
	case err := <-cell:
		t.Fatalf("the cell ended early: %v", err)
	default:
	}
	// A backing kernel's reply for every target gets ours beside its own.
	b := &Bridge{}
	b.comms = newCommRouter(map[string]commTarget{PanelTarget: &panelComms{b: b}}, func(string, ...any) {})
	b.comms.ids["p1"] = PanelTarget
	merged := b.comms.withOurs(json.RawMessage(`{"status":"ok","comms":{"w1":{"target_name":"jupyter.widget"}}}`))
	if !strings.Contains(string(merged), `"w1"`) || !strings.Contains(string(merged), `"p1":{"target_name":"agentkernel.panel"}`) {
		t.Errorf("merged comm_info_reply %s", merged)
	}
}

// blockedTarget is a comm target whose comm_open holds the router's worker
// until release is closed or the router stops.
type blockedTarget struct{ release chan struct{} }

func (t blockedTarget) open(ctx context.Context, _ commMsg) {
	select {
	case <-t.release:
	case <-ctx.Done():
	}
}
func (t blockedTarget) message(context.Context, commMsg) {}
func (t blockedTarget) closed(string)                    {}
func (t blockedTarget) shutdown()                        {}

// TestNotebookCommOpenIsSeenAtOnce: a notebook comm opened while the comm
// worker is busy (another target's message) is the agent's notebook as
// soon as the comm_open is read, before the request behind it (agentkernel
// run opens the comm and sends the first cell at once: the first model
// request was sometimes offered no notebook tools), and its close is seen
// at once too.
func TestNotebookCommOpenIsSeenAtOnce(t *testing.T) {
	b := &Bridge{log: logger()}
	b.notebooks = &notebookComms{b: b}
	busy := blockedTarget{release: make(chan struct{})}
	defer close(busy.release)
	b.comms = newCommRouter(map[string]commTarget{"busy": busy, NotebookTarget: b.notebooks}, func(string, ...any) {})
	defer b.comms.close()
	msg := func(typ string, content map[string]any) *kernel.Request {
		raw, err := json.Marshal(content)
		if err != nil {
			t.Fatal(err)
		}
		return &kernel.Request{Msg: &wire.Message{Header: wire.Header{MsgType: typ, Session: "s1"}, Content: raw}}
	}
	if !b.Intercept(msg(wire.MsgCommOpen, map[string]any{"comm_id": "c0", "target_name": "busy"})) {
		t.Fatal("the busy target's comm_open was not taken")
	}
	if !b.Intercept(msg(wire.MsgCommOpen, map[string]any{"comm_id": "n1", "target_name": NotebookTarget,
		"data": map[string]any{"protocol": nbcomm.Protocol, "path": "work.ipynb"}})) {
		t.Fatal("the notebook comm_open was not taken")
	}
	if c := b.notebooks.Current(); c == nil || c.Path() != "work.ipynb" {
		t.Fatalf("right after its comm_open the agent's notebook is %v", c)
	}
	b.Intercept(msg(wire.MsgCommClose, map[string]any{"comm_id": "n1"}))
	if c := b.notebooks.Current(); c != nil {
		t.Fatalf("right after its comm_close the agent's notebook is still %s", c.Path())
	}
}
