package session

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestNewerPromptSupersedes: a prompt sent (from the panel, Start) while a
// notebook's turn streams stops that turn: its follower ends with
// ErrSuperseded and sees none of the newer turn, what it streamed stays
// marked partial, and the newer turn runs to its end.
func TestNewerPromptSupersedes(t *testing.T) {
	srv, open := scriptedModels(t)
	srv.Enqueue(scripted.Reply(scripted.Text("Thinking slowly"), scripted.Stall()),
		scripted.Reply(scripted.Text("The newer answer."), usage(5, 3)))
	h := newHost(t, Config{Store: openStore(t), OpenModel: open, Model: "openai:m"})
	ctx := context.Background()

	var mu sync.Mutex
	var seen []string
	streaming := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		_, err := h.Submit(ctx, "Take your time.", Follow{Events: func(e agent.Event) {
			if e.Message == nil || e.Message.Say != messages.SayText {
				return
			}
			mu.Lock()
			seen = append(seen, e.Message.Text)
			mu.Unlock()
			if e.Message.Partial && strings.Contains(e.Message.Text, "Thinking slowly") {
				once.Do(func() { close(streaming) })
			}
		}})
		done <- err
	}()
	select {
	case <-streaming:
	case <-time.After(30 * time.Second):
		t.Fatal("the first turn never streamed")
	}
	newerTurn, err := h.StartPrompt(ctx, agent.Prompt{Text: "Never mind, do this instead."})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrSuperseded) {
			t.Fatalf("the superseded Submit returned %v, want ErrSuperseded", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the superseded Submit did not return")
	}
	if _, asks, err := newerTurn.Next(ctx); asks || err != nil {
		t.Fatalf("the newer turn ended with an ask (%v) or %v", asks, err)
	}
	mu.Lock()
	for _, s := range seen {
		if strings.Contains(s, "newer") || strings.Contains(s, "Never mind") {
			t.Errorf("the superseded follower saw the newer turn: %q", s)
		}
	}
	mu.Unlock()
	var partial, newer bool
	for _, m := range h.Conversation().UI() {
		if m.Say == messages.SayText && m.Text == "Thinking slowly" {
			partial = m.Partial
		}
		newer = newer || m.Text == "The newer answer."
	}
	if !partial || !newer {
		t.Fatalf("partial kept and marked: %v; newer answer: %v\n%+v", partial, newer, h.Conversation().UI())
	}
}
