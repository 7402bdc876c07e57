package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
)

// nextAsk starts a turn of text on e and returns the ask it pauses on.
func nextAsk(t *testing.T, e *env, ctx context.Context, text string) (*agent.Turn, *agent.TurnAsk) {
	t.Helper()
	turn, err := e.task.Start(agent.Prompt{Text: text}, agent.TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ask, ok, err := turn.Next(ctx)
	if !ok || err != nil {
		t.Fatalf("no ask: %v", err)
	}
	return turn, ask
}

// waitDone fails the test unless ask is done, and its context (made before
// it was) cancelled, within a while.
func waitDone(t *testing.T, ask *agent.TurnAsk, actx context.Context, what string) {
	t.Helper()
	select {
	case <-ask.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the ask is not done", what)
	}
	select {
	case <-actx.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the ask's context is not cancelled", what)
	}
}

func TestAskEndsWhenAnsweredElsewhere(t *testing.T) {
	e := newEnv(t, setup{turns: []turn{
		{events: []provider.Event{call("c1", "write_file", map[string]any{"path": "a", "content": "1"}), done(provider.StopToolUse)}},
		say("written"),
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	turn, ask := nextAsk(t, e, ctx, "a file")
	actx, stop := ask.Context(ctx)
	defer stop()
	select {
	case <-ask.Done():
		t.Fatal("done before it was answered")
	default:
	}
	if actx.Err() != nil {
		t.Fatal("context ended before the ask was answered")
	}
	// Another surface (the panel) answers: the approver's wait ends.
	if err := e.task.Respond(ask.Message().TS, agent.Response{Kind: agent.ResponseYes, By: "webview"}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, ask, actx, "answered")
	if ctx.Err() != nil {
		t.Fatal("the parent context ended")
	}
	<-turn.Done()
	if err := turn.Err(); err != nil {
		t.Fatal(err)
	}
	// A context asked for after the end is done at once.
	late, stopLate := ask.Context(ctx)
	defer stopLate()
	waitDone(t, ask, late, "late")
}

func TestAskEndsWithItsTurn(t *testing.T) {
	e := newEnv(t, setup{turns: []turn{
		{events: []provider.Event{call("c1", "write_file", map[string]any{"path": "a", "content": "1"}), done(provider.StopToolUse)}},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	turn, ask := nextAsk(t, e, ctx, "a file")
	actx, stop := ask.Context(ctx)
	defer stop()
	e.task.Cancel()
	waitDone(t, ask, actx, "cancelled")
	<-turn.Done()
	if err := e.task.Respond(ask.Message().TS, agent.Response{Kind: agent.ResponseYes}); err == nil {
		t.Fatal("an ask of an ended turn took an answer")
	}
}
