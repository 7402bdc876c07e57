package session

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestInterruptedSessionOffersToResume: a turn cut short by the host's
// close (the kernel shut down mid-stream) leaves its words stored, partial;
// resumed in a new host, the session offers to go on (a resume_task ask),
// and an empty prompt resumes the turn from its history; a session that
// ended normally is not offered.
func TestInterruptedSessionOffersToResume(t *testing.T) {
	srv, open := scriptedModels(t)
	st := openStore(t)
	ws := t.TempDir()
	h := New(Config{Store: st, Workspace: ws, Runner: &fakeRunner{}, Model: "openai:m", OpenModel: open})
	srv.Enqueue(scripted.Reply(scripted.Text("Half an ans"), scripted.Stall()))
	ctx := context.Background()
	if _, err := h.StartPrompt(ctx, agent.Prompt{Text: "Write the report"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(texts(h.Conversation().UI()), "Half an ans") {
		if time.Now().After(deadline) {
			t.Fatal("the turn never streamed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	info, _ := h.Current(ctx)
	h.Close() // the kernel shuts down mid-turn

	h2 := newHost(t, Config{Store: st, Workspace: ws, Model: "openai:m", OpenModel: open})
	got, err := h2.Resume(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	ui := h2.Conversation().UI()
	last := ui[len(ui)-1]
	if !got.Interrupted || last.Ask != messages.AskResumeTask || last.IsAnswered {
		t.Fatalf("resumed: interrupted %v, last message %+v", got.Interrupted, last)
	}
	for _, m := range ui {
		if m.Partial {
			t.Errorf("a message is still partial after the offer: %+v", m)
		}
	}
	srv.Enqueue(scripted.Reply(scripted.Text("The report, finished.")))
	res, err := h2.Submit(ctx, "", Follow{Approve: agent.ApproveAll.Approver()})
	if err != nil || !strings.Contains(res.Text, "The report, finished.") {
		t.Fatalf("resuming: %q %v", res.Text, err)
	}
	reqs := srv.Requests()
	msgs := reqs[len(reqs)-1].Messages()
	if lastMsg := msgs[len(msgs)-1]; lastMsg["role"] == "user" && !strings.Contains(lastMsg["content"].(string), "Write the report") {
		t.Errorf("the resumed request did not go on from the cut turn: %v", lastMsg)
	}

	// Resumed again, it ended normally: no offer.
	h3 := newHost(t, Config{Store: st, Workspace: ws, Model: "openai:m", OpenModel: open})
	if got, err := h3.Resume(ctx, info.ID); err != nil || got.Interrupted {
		t.Errorf("a finished session offered to resume: %+v %v", got, err)
	}
}

// TestRequestMetadata: each model request's api_req_finished message
// stores the model, the tokens, the cost, the latency to the first token
// and the duration.
func TestRequestMetadata(t *testing.T) {
	srv, open := scriptedModels(t)
	h := newHost(t, Config{Store: openStore(t), Model: "openai:gpt-x", OpenModel: open})
	srv.Enqueue(scripted.Reply(scripted.Text("Hi."), usage(120, 30)))
	if _, err := h.Submit(context.Background(), "hello", Follow{}); err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	for _, m := range h.Conversation().UI() {
		if m.Say == messages.SayAPIReqFinished {
			if err := json.Unmarshal([]byte(m.Text), &meta); err != nil {
				t.Fatal(err)
			}
		}
	}
	if meta["model"] != "gpt-x" || meta["tokensIn"] != float64(120) || meta["tokensOut"] != float64(30) ||
		meta["cost"].(float64) <= 0 || meta["latencyMs"] == nil || meta["durationMs"] == nil {
		t.Errorf("api_req_finished %v", meta)
	}
}
