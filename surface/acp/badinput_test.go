package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// wire is a raw JSON-RPC peer of an agent served on pipes: what a broken
// client sends, line by line.
type wire struct {
	in    io.WriteCloser
	lines chan map[string]any
	stop  func()
}

func serveRaw(t *testing.T, h *surfacetest.Host) *wire {
	t.Helper()
	toAgent, agentIn := io.Pipe()
	agentOut, fromAgent := io.Pipe()
	a := NewWithOpener(func(string) (*session.Host, func() error, error) { return h.Host, func() error { return nil }, nil }, "test", nil)
	served := make(chan error, 1)
	go func() { served <- a.Serve(context.Background(), toAgent, fromAgent) }()
	w := &wire{in: agentIn, lines: make(chan map[string]any, 100)}
	go func() {
		sc := bufio.NewScanner(agentOut)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				w.lines <- m
			}
		}
		close(w.lines)
	}()
	w.stop = func() {
		agentIn.Close()
		agentOut.Close()
		<-served
	}
	t.Cleanup(w.stop)
	return w
}

func (w *wire) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(w.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// reply waits for the answer to request id (notifications are skipped).
func (w *wire) reply(t *testing.T, id any) map[string]any {
	t.Helper()
	want := fmt.Sprint(id)
	timeout := time.After(time.Minute)
	for {
		select {
		case m, ok := <-w.lines:
			if !ok {
				t.Fatalf("the agent closed its end before answering %v", id)
			}
			if m["id"] != nil && fmt.Sprint(m["id"]) == want {
				return m
			}
		case <-timeout:
			t.Fatalf("no answer to %v", id)
		}
	}
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// TestBadInput: broken JSON, an unknown method, a prompt for a session
// that is not open, and a second prompt while one runs each get a clear
// answer, and the agent goes on serving: the history holds both prompts.
func TestBadInput(t *testing.T) {
	h := surfacetest.NewHost(t)
	w := serveRaw(t, h)

	w.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1`) // cut off
	w.send(t, `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	if m := w.reply(t, 2); m["result"] == nil {
		t.Fatalf("initialize after a broken line: %v", m)
	}
	w.send(t, `{"jsonrpc":"2.0","id":3,"method":"session/teleport","params":{}}`)
	if m := w.reply(t, 3); errCode(m) != -32601 {
		t.Errorf("an unknown method: %v, want -32601 method not found", m)
	}
	w.send(t, `{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}`)
	if m := w.reply(t, 4); errCode(m) != -32602 || !strings.Contains(fmt.Sprint(m["error"]), "no open session") {
		t.Errorf("a prompt for no session: %v, want invalid params naming it", m)
	}
	w.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, h.Workspace()))
	m := w.reply(t, 5)
	res, _ := m["result"].(map[string]any)
	sid, _ := res["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new: %v", m)
	}

	// session/set_config_option: the mode is the one option.
	w.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":10,"method":"session/set_config_option","params":{"sessionId":%q,"configId":"mode","value":"plan"}}`, sid))
	if m := w.reply(t, 10); !strings.Contains(fmt.Sprint(m["result"]), "currentValue:plan") || h.Modes().Permission() != "plan" {
		t.Errorf("set_config_option mode plan: %v (mode %s)", m, h.Modes().Permission())
	}
	w.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":12,"method":"session/set_config_option","params":{"sessionId":%q,"configId":"agentMode","value":"architect"}}`, sid))
	if m := w.reply(t, 12); !strings.Contains(fmt.Sprint(m["result"]), "currentValue:architect") || h.Modes().Agent().Name != "architect" {
		t.Errorf("set_config_option agentMode architect: %v (mode %s)", m, h.Modes().Agent().Name)
	}
	w.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":11,"method":"session/set_config_option","params":{"sessionId":%q,"configId":"colour","value":"red"}}`, sid))
	if m := w.reply(t, 11); errCode(m) != -32602 {
		t.Errorf("an unknown option: %v, want invalid params", m)
	}

	// A prompt while one runs: the running turn ends cancelled, the new
	// one answers.
	h.Script.Enqueue(scripted.Reply(scripted.Text("Thinking"), scripted.Stall()),
		scripted.Reply(scripted.Text("The second answer.")))
	w.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"first"}]}}`, sid))
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(texts(h.Conversation().UI()), "Thinking") {
		if time.Now().After(deadline) {
			t.Fatal("the first turn never streamed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"second"}]}}`, sid))
	if m := w.reply(t, 6); !strings.Contains(fmt.Sprint(m["result"]), "stopReason:cancelled") {
		t.Errorf("the superseded prompt answered %v, want cancelled", m)
	}
	if m := w.reply(t, 7); !strings.Contains(fmt.Sprint(m["result"]), "stopReason:end_turn") {
		t.Errorf("the second prompt answered %v", m)
	}
	all := texts(h.Conversation().UI())
	if !strings.Contains(all, "first") || !strings.Contains(all, "The second answer.") {
		t.Errorf("the history: %s", all)
	}
}

func texts(ui []messages.UIMessage) string {
	var b strings.Builder
	for _, m := range ui {
		b.WriteString(m.Text + "\n")
	}
	return b.String()
}
