package webview

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/messages"
)

// Every ask kind says how it is answered, as its class decides: a text
// answers exactly the interactive ones (use_mcp_server among them), and
// only a blocking ask takes any answer.
func TestAskAnswers(t *testing.T) {
	for _, a := range messages.Asks {
		t.Run(string(a), func(t *testing.T) {
			ans := askAnswers[a]
			if ans == nil {
				t.Fatal("no answer")
			}
			if ans.Class != messages.ClassOf(a).String() {
				t.Fatalf("class %q, want %q", ans.Class, messages.ClassOf(a))
			}
			if got := slices.Contains(ans.Responses, ResponseMessage); got != a.IsInteractive() {
				t.Fatalf("a text answers it: %v; interactive: %v", got, a.IsInteractive())
			}
			if !a.Blocks() && len(ans.Responses) > 0 {
				t.Fatalf("non-blocking ask takes %v", ans.Responses)
			}
			if ans.Responses == nil {
				t.Fatal(`responses marshal as null, want []`)
			}
		})
	}
	for _, a := range []messages.Ask{messages.AskCommand, messages.AskTool, messages.AskUseMCPServer} {
		if r := askAnswers[a].Responses; !slices.Equal(r, []ResponseKind{ResponseYes, ResponseAllowAll, ResponseNo, ResponseMessage}) {
			t.Errorf("%s (an approval) takes %v", a, r)
		}
	}
	if r := askAnswers[messages.AskFollowup].Responses; !slices.Equal(r, []ResponseKind{ResponseMessage}) {
		t.Errorf("followup takes %v", r)
	}
}

// The frames carry each ask's answer and the pending ask as the server
// decides them: in the state (its messages and its pendingAsk) and in the
// message frames, whose "pending" follows the ask until it is answered.
func TestFramesCarryAskAnswers(t *testing.T) {
	f := newFake()
	ask := messages.UIMessage{TS: f.nextTS(), Type: messages.TypeAsk, Ask: messages.AskUseMCPServer,
		Text: `{"serverName":"everything","toolName":"echo","arguments":"{}"}`}
	f.create(ask)
	s := startServer(t, f.parts(), Options{})
	c := dial(t, s)
	raw := c.rawUntil("state")
	var st struct {
		State struct {
			Messages   []map[string]json.RawMessage `json:"messages"`
			PendingAsk map[string]json.RawMessage   `json:"pendingAsk"`
		} `json:"state"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	const want = `{"class":"interactive","responses":["yesButtonClicked","allowAll","noButtonClicked","messageResponse"]}`
	if len(st.State.Messages) != 1 || string(st.State.Messages[0]["answer"]) != want {
		t.Fatalf("state messages %s", raw)
	}
	if string(st.State.PendingAsk["answer"]) != want {
		t.Fatalf("state pendingAsk %s", raw)
	}
	if strings.Count(string(raw), `"messages"`) != 1 {
		t.Fatalf("messages twice in %s", raw)
	}

	// A new ask: pending, with its answer.
	q := messages.UIMessage{TS: f.nextTS(), Type: messages.TypeAsk, Ask: messages.AskFollowup, Text: `{"question":"Which?"}`}
	f.create(q)
	frame := c.rawUntil("messageCreated")
	if !strings.Contains(string(frame), `"pending":true`) ||
		!strings.Contains(string(frame), `"answer":{"class":"interactive","responses":["messageResponse"]}`) {
		t.Fatalf("messageCreated %s", frame)
	}
	if c.st.PendingAsk == nil || c.st.PendingAsk.TS != q.TS {
		t.Fatalf("pending ask %+v", c.st.PendingAsk)
	}
	// Answered: the frame of its new version says it is not pending.
	q.IsAnswered = true
	f.update(q)
	frame = c.rawUntil("messageUpdated")
	if strings.Contains(string(frame), `"pending"`) || !strings.Contains(string(frame), `"answer"`) {
		t.Fatalf("messageUpdated %s", frame)
	}
	if c.st.PendingAsk != nil {
		t.Fatalf("pending ask %+v after its answer", c.st.PendingAsk)
	}
	// A say carries no answer.
	f.create(messages.UIMessage{TS: f.nextTS(), Type: messages.TypeSay, Say: messages.SayText, Text: "hi"})
	if frame = c.rawUntil("messageCreated"); strings.Contains(string(frame), `"answer"`) || strings.Contains(string(frame), `"pending"`) {
		t.Fatalf("say %s", frame)
	}
}

// rawUntil reads frames until one of type typ arrives, and returns it as
// it was sent.
func (c *testClient) rawUntil(typ string) []byte {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		data, got, _, err := c.nextRaw(ctx)
		if err != nil {
			c.t.Fatalf("waiting for %s: %v", typ, err)
		}
		if got == typ {
			return data
		}
	}
}
