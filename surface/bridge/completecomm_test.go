package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// completeReply is one reply on the completion comm.
type completeReply struct {
	ID    string `json:"id"`
	OK    bool   `json:"ok"`
	Text  string `json:"text"`
	Error string `json:"error"`
	Code  string `json:"code"`
}

// completeComm is a frontend's completion comm: the requests it sends,
// the replies and "on"s the kernel sends it.
type completeComm struct {
	t       *testing.T
	ctx     context.Context
	c       *client.Client
	id      string
	replies chan completeReply
	ons     chan bool
}

// openComplete dials the kernel at conn and opens a completion comm; the
// test's cleanup closes the client.
func openComplete(t *testing.T, ctx context.Context, conn *wire.ConnectionInfo) *completeComm {
	t.Helper()
	cc := &completeComm{t: t, ctx: ctx, id: uuid.NewString(), replies: make(chan completeReply, 8), ons: make(chan bool, 8)}
	c, err := client.Dial(ctx, conn, client.Options{Logger: logger(), OnIOPub: func(m *wire.Message) {
		var cm struct {
			CommID string `json:"comm_id"`
			Data   struct {
				Reply *completeReply `json:"reply"`
				On    bool           `json:"on"`
			} `json:"data"`
		}
		if m.Header.MsgType != wire.MsgCommMsg || json.Unmarshal(m.Content, &cm) != nil || cm.CommID != cc.id {
			return
		}
		if cm.Data.Reply != nil {
			cc.replies <- *cm.Data.Reply
		}
		if cm.Data.On {
			cc.ons <- true
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cc.c = c
	if err := c.Send(ctx, client.Request{MsgType: wire.MsgCommOpen, Content: map[string]any{
		"comm_id": cc.id, "target_name": CompleteTarget, "data": map[string]any{}}}); err != nil {
		t.Fatal(err)
	}
	return cc
}

// send sends data on the comm.
func (cc *completeComm) send(data map[string]any) {
	cc.t.Helper()
	if err := cc.c.Send(cc.ctx, client.Request{MsgType: wire.MsgCommMsg, Content: map[string]any{"comm_id": cc.id, "data": data}}); err != nil {
		cc.t.Fatal(err)
	}
}

// next is the next reply.
func (cc *completeComm) next() completeReply {
	cc.t.Helper()
	select {
	case r := <-cc.replies:
		return r
	case <-cc.ctx.Done():
		cc.t.Fatal("no completion reply")
	}
	return completeReply{}
}

// TestCompleteComm: the inline completer's comm. A %%code cell of a
// prompt-mode notebook is completed by the model, told the %%code cells
// around it and not the prompts; a prompt is not completed (an empty
// answer, no model request); a new request cancels the one still open
// (only the new one is answered, and the model's stream of the old one is
// dropped).
func TestCompleteComm(t *testing.T) {
	h := surfacetest.NewHost(t)
	conn, stop := serveBridge(t, h, PromptCells)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cc := openComplete(t, ctx, conn)
	send, next := cc.send, cc.next

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
	// While the model holds the completion, the kernel answers the
	// notebook at once: a cell runs, the kernel is not frozen.
	if rep, err := cc.c.Execute(ctx, "%%code\nprint(6 * 7)", client.ExecuteOptions{}, client.Handlers{}); err != nil {
		t.Fatalf("a cell during a stalled completion: %v", err)
	} else if st := replyStatus(rep); st != "ok" {
		t.Fatalf("a cell during a stalled completion: %s", st)
	}
	send(map[string]any{"request": map[string]any{"id": "r4", "prefix": "%%code\ny = "}})
	if r := next(); r.ID != "r4" || r.Text != "2" { // the model repeated the line: only what follows the cursor
		t.Errorf("after typing on: %+v", r)
	}
	select {
	case r := <-cc.replies:
		t.Errorf("the cancelled request was answered: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestCompleteCommCodeMode: in code mode every cell is code but a %%agent
// one, a prompt: it is not completed (no model request), nor is a magic's
// line being typed, and a %%agent cell around the cursor's is not told to
// the model.
func TestCompleteCommCodeMode(t *testing.T) {
	h := surfacetest.NewHost(t)
	conn, stop := serveBridge(t, h, CodeCells)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cc := openComplete(t, ctx, conn)

	cc.send(map[string]any{"request": map[string]any{"id": "p1", "prefix": "%%agent\nPlot the pri"}})
	if r := cc.next(); r.ID != "p1" || !r.OK || r.Text != "" {
		t.Errorf("a %%%%agent cell was completed: %+v", r)
	}
	cc.send(map[string]any{"request": map[string]any{"id": "p2", "prefix": "%%age"}}) // not yet known to be a prompt
	if r := cc.next(); r.ID != "p2" || !r.OK || r.Text != "" {
		t.Errorf("a magic's line being typed was completed: %+v", r)
	}
	// A markdown (or raw) cell is prose, whatever its text looks like
	// (issue 41, item 14).
	for _, typ := range []string{"markdown", "raw"} {
		cc.send(map[string]any{"request": map[string]any{"id": "m-" + typ, "cellType": typ, "prefix": "The total is sum(pri"}})
		if r := cc.next(); r.ID != "m-"+typ || !r.OK || r.Text != "" {
			t.Errorf("a %s cell was completed: %+v", typ, r)
		}
	}
	if n := len(h.Script.Requests()); n != 0 {
		t.Errorf("a prompt or a markdown cell cost a model request (%d requests)", n)
	}

	h.Script.Enqueue(scripted.Reply(scripted.Text("mean(prices)")))
	cc.send(map[string]any{"request": map[string]any{"id": "c1", "cellType": "code", "prefix": "avg = ",
		"before": []string{"prices = [1, 2]", "%%agent\nSummarise the prices"}}})
	if r := cc.next(); r.ID != "c1" || !r.OK || r.Text != "mean(prices)" {
		t.Fatalf("reply %+v", r)
	}
	sent := string(h.Script.Requests()[0].Raw)
	if !strings.Contains(sent, "prices = [1, 2]") || strings.Contains(sent, "Summarise the prices") {
		t.Errorf("the model was told:\n%s", sent)
	}
}

// TestCompleteCommOff: with no model the completer is told completions
// are off ("code": "off"), so it stops asking; when a model is set (or a
// key saved: the settings change) the comm is told "on", once, and the
// next request is answered.
func TestCompleteCommOff(t *testing.T) {
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv := scripted.New(t)
	r := &surfacetest.Runner{}
	h := &surfacetest.Host{Host: session.New(session.Config{Store: st, Runner: r, Workspace: t.TempDir(), Kind: "test",
		OpenModel: func(spec string) (provider.Provider, error) {
			_, name, _ := strings.Cut(spec, ":")
			return openai.New(openai.Config{APIKey: "k", BaseURL: srv.OpenAIURL(), Model: name})
		}}), Runner: r}
	defer st.Close()
	defer h.Close()
	conn, stop := serveBridge(t, h, CodeCells)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cc := openComplete(t, ctx, conn)
	request := func(rid string) { cc.send(map[string]any{"request": map[string]any{"id": rid, "prefix": "x = "}}) }
	request("r1")
	if r := cc.next(); r.OK || r.Code != "off" || r.Error == "" {
		t.Errorf("reply %+v", r)
	}
	if err := h.Models().Set(ctx, "openai:m"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cc.ons:
	case <-ctx.Done():
		t.Fatal("the comm told off was not told on")
	}
	srv.Enqueue(scripted.Reply(scripted.Text("42")))
	request("r2")
	if r := cc.next(); !r.OK || r.Text != "42" {
		t.Errorf("after on: %+v", r)
	}
	if err := h.Modes().SetPermission(ctx, agent.PermissionPlan); err != nil { // a comm not told off is not told on
		t.Fatal(err)
	}
	select {
	case <-cc.ons:
		t.Error("on again, though the comm was not off")
	case <-time.After(200 * time.Millisecond):
	}
}

// TestCompleteCommHugeCell: a completion request for a cell of a megabyte
// (and cells around it as large) is answered, and what the model is sent
// stays bounded: the part of the cell around the cursor and of the cells
// near it.
func TestCompleteCommHugeCell(t *testing.T) {
	h := surfacetest.NewHost(t)
	conn, stop := serveBridge(t, h, PromptCells)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	huge := strings.Repeat("values.append(12345)\n", 1<<20/21)
	cells := []string{"%%code\n" + huge, "%%code\n" + huge}
	h.Script.Enqueue(scripted.Reply(scripted.Text("total = sum(values)")))
	cc := openComplete(t, ctx, conn)
	cc.send(map[string]any{"request": map[string]any{"id": "big", "prefix": "%%code\n" + huge + "tot", "suffix": huge,
		"before": cells, "after": cells}})
	if r := cc.next(); !r.OK || r.Text != "al = sum(values)" {
		t.Errorf("reply %+v", r)
	}
	reqs := h.Script.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if n := len(reqs[0].Raw); n > 32<<10 {
		t.Errorf("the model was sent %d bytes for a cell of a megabyte", n)
	}
}

// replyStatus is an execute_reply's status.
func replyStatus(m *wire.Message) string {
	var c struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(m.Content, &c)
	return c.Status
}
