package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/agent/provider/scripted"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/store"
)

// completeReply is one reply on the completion comm.
type completeReply struct {
	ID    string `json:"id"`
	OK    bool   `json:"ok"`
	Text  string `json:"text"`
	Error string `json:"error"`
	Code  string `json:"code"`
}

// TestCompleteComm: the inline completer's comm. A %%code cell of a
// prompt-mode notebook is completed by the model, told the %%code cells
// around it and not the prompts; a prompt is not completed (an empty
// answer, no model request); a new request cancels the one still open
// (only the new one is answered, and the model's stream of the old one is
// dropped).
func TestCompleteComm(t *testing.T) {
	h := surfacetest.NewHost(t)
	conn, stop := serveBridge(t, h, ModePrompt)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := uuid.NewString()
	replies := make(chan completeReply, 8)
	c, err := client.Dial(ctx, conn, client.Options{Logger: logger(), OnIOPub: func(m *wire.Message) {
		var cm struct {
			CommID string `json:"comm_id"`
			Data   struct {
				Reply *completeReply `json:"reply"`
			} `json:"data"`
		}
		if m.Header.MsgType == wire.MsgCommMsg && json.Unmarshal(m.Content, &cm) == nil && cm.CommID == id && cm.Data.Reply != nil {
			replies <- *cm.Data.Reply
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(data map[string]any) {
		t.Helper()
		if err := c.Send(ctx, client.Request{MsgType: wire.MsgCommMsg, Content: map[string]any{"comm_id": id, "data": data}}); err != nil {
			t.Fatal(err)
		}
	}
	next := func() completeReply {
		t.Helper()
		select {
		case r := <-replies:
			return r
		case <-ctx.Done():
			t.Fatal("no completion reply")
		}
		return completeReply{}
	}
	if err := c.Send(ctx, client.Request{MsgType: wire.MsgCommOpen, Content: map[string]any{
		"comm_id": id, "target_name": CompleteTarget, "data": map[string]any{}}}); err != nil {
		t.Fatal(err)
	}

	h.Script.Enqueue(scripted.Reply(scripted.Text("```python\n", "total = sum(prices)", "\n```")))
	send(map[string]any{"request": map[string]any{"id": "r1", "prefix": "%%code\nprices = [1, 2]\n", "suffix": "",
		"before": []string{"%%code\nimport statistics", "Plot the prices by week"}}})
	r := next()
	if r.ID != "r1" || !r.OK || r.Text != "total = sum(prices)" {
		t.Fatalf("reply %+v", r)
	}
	sent := string(h.Script.Requests()[0].Raw)
	if !strings.Contains(sent, "import statistics") || strings.Contains(sent, "Plot the prices") || strings.Contains(sent, "%%code") {
		t.Errorf("the model was told:\n%s", sent)
	}

	send(map[string]any{"request": map[string]any{"id": "r2", "prefix": "Summarise the pri"}})
	if r := next(); r.ID != "r2" || !r.OK || r.Text != "" {
		t.Errorf("a prompt was completed: %+v", r)
	}
	if n := len(h.Script.Requests()); n != 1 {
		t.Errorf("a prompt cost a model request (%d requests)", n)
	}

	h.Script.Enqueue(scripted.Reply(scripted.Stall()), scripted.Reply(scripted.Text("y = 2")))
	send(map[string]any{"request": map[string]any{"id": "r3", "prefix": "%%code\nx = "}})
	for len(h.Script.Requests()) < 2 { // the stalled request reached the model
		select {
		case <-ctx.Done():
			t.Fatal("r3 never reached the model")
		case <-time.After(10 * time.Millisecond):
		}
	}
	send(map[string]any{"request": map[string]any{"id": "r4", "prefix": "%%code\ny = "}})
	if r := next(); r.ID != "r4" || r.Text != "2" { // the model repeated the line: only what follows the cursor
		t.Errorf("after typing on: %+v", r)
	}
	select {
	case r := <-replies:
		t.Errorf("the cancelled request was answered: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestCompleteCommOff: with no model the completer is told completions
// are off ("code": "off"), so it stops asking.
func TestCompleteCommOff(t *testing.T) {
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	r := &surfacetest.Runner{}
	h := &surfacetest.Host{Host: session.New(session.Config{Store: st, Runner: r, Workspace: t.TempDir(), Kind: "test"}), Runner: r}
	defer st.Close()
	defer h.Close()
	conn, stop := serveBridge(t, h, ModeCode)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := uuid.NewString()
	replies := make(chan completeReply, 1)
	c, err := client.Dial(ctx, conn, client.Options{Logger: logger(), OnIOPub: func(m *wire.Message) {
		var cm struct {
			Data struct {
				Reply *completeReply `json:"reply"`
			} `json:"data"`
		}
		if m.Header.MsgType == wire.MsgCommMsg && json.Unmarshal(m.Content, &cm) == nil && cm.Data.Reply != nil {
			replies <- *cm.Data.Reply
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, m := range []client.Request{
		{MsgType: wire.MsgCommOpen, Content: map[string]any{"comm_id": id, "target_name": CompleteTarget, "data": map[string]any{}}},
		{MsgType: wire.MsgCommMsg, Content: map[string]any{"comm_id": id, "data": map[string]any{"request": map[string]any{"id": "r1", "prefix": "x = "}}}},
	} {
		if err := c.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case r := <-replies:
		if r.OK || r.Code != "off" || r.Error == "" {
			t.Errorf("reply %+v", r)
		}
	case <-ctx.Done():
		t.Fatal("no reply")
	}
}
