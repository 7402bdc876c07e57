package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
)

// slowRunner is a kernel whose cell prints "step 1", then runs until it
// is released or interrupted (its ctx ends: KeyboardInterrupt, as
// ipykernel reports an interrupt).
type slowRunner struct {
	release chan struct{}
	mu      sync.Mutex
	ran     []string
}

func newSlowRunner() *slowRunner { return &slowRunner{release: make(chan struct{})} }

func (s *slowRunner) Run(ctx context.Context, code string, out func(agent.CodeOutput)) (agent.CodeResult, error) {
	s.mu.Lock()
	s.ran = append(s.ran, code)
	s.mu.Unlock()
	if !strings.Contains(code, "slow") {
		return agent.CodeResult{Stdout: "quick\n"}, nil
	}
	if out != nil {
		b, _ := json.Marshal(map[string]string{"name": "stdout", "text": "step 1\n"})
		out(agent.CodeOutput{Type: "stream", Content: b})
	}
	select {
	case <-s.release:
		return agent.CodeResult{Stdout: "step 1\nstep 2\n", Result: "'done'"}, nil
	case <-ctx.Done():
		return agent.CodeResult{Stdout: "step 1\n", Error: &agent.CodeError{EName: "KeyboardInterrupt", EValue: ""}}, nil
	}
}

func runsEnv(t *testing.T, r *slowRunner, turns ...turn) *env {
	return newEnv(t, setup{mode: agent.PermissionBypass, turns: turns, cfg: func(c *agent.Config) {
		tb, err := agent.NewToolbox(agent.ToolboxOptions{Workspace: c.Toolbox.Workspace(), Runner: r})
		if err != nil {
			t.Fatal(err)
		}
		c.Toolbox = tb
		if c.Policy, err = agent.NewPolicy(tb, agent.PolicyOptions{Mode: agent.PermissionBypass}); err != nil {
			t.Fatal(err)
		}
	}})
}

func callTurn(id, name string, in any) turn {
	return turn{events: []provider.Event{call(id, name, in), done(provider.StopToolUse)}}
}

// resultText is the text of the tool result of request i's last message.
func resultText(t *testing.T, e *env, i int) string {
	t.Helper()
	reqs := e.model.reqs()
	if i >= len(reqs) {
		t.Fatalf("only %d requests", len(reqs))
	}
	last := reqs[i].Messages[len(reqs[i].Messages)-1]
	for _, b := range last.Content {
		if b.Type == messages.BlockToolResult {
			return b.Content[0].Text
		}
	}
	return ""
}

func offers(e *env, i int, name string) bool {
	for _, tl := range e.model.reqs()[i].Tools {
		if tl.Name == name {
			return true
		}
	}
	return false
}

// TestLongRunInterrupted: code past its timeout gives the model what it
// printed so far and "still running"; the model is then offered
// interrupt_code (and wait_code), which stops it; another run meanwhile is
// refused, and the kernel runs code again after.
func TestLongRunInterrupted(t *testing.T) {
	r := newSlowRunner()
	e := runsEnv(t, r,
		callTurn("c1", "execute_code", map[string]any{"code": "slow()", "timeout": 1}),
		callTurn("c2", "execute_code", map[string]any{"code": "other()"}),
		callTurn("c3", "interrupt_code", map[string]any{}),
		callTurn("c4", "execute_code", map[string]any{"code": "print('after')"}),
		say("Stopped it."),
	)
	if _, err := e.run("train"); err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, e, 1); !strings.Contains(got, "Still running after 1s (run r1). Output so far:\nstep 1\n") {
		t.Errorf("at the timeout: %q", got)
	}
	if offers(e, 0, agent.ToolInterruptCode) || !offers(e, 1, agent.ToolInterruptCode) || !offers(e, 1, agent.ToolWaitCode) {
		t.Error("interrupt_code and wait_code are not offered exactly while the code runs")
	}
	if got := resultText(t, e, 2); !strings.Contains(got, "still running the agent's code (run r1)") {
		t.Errorf("a second run while one goes on: %q", got)
	}
	if got := resultText(t, e, 3); !strings.Contains(got, "Interrupted run r1.") || !strings.Contains(got, "KeyboardInterrupt") {
		t.Errorf("interrupt_code: %q", got)
	}
	if got := resultText(t, e, 4); !strings.Contains(got, "quick") {
		t.Errorf("the kernel after the interrupt: %q", got)
	}
}

// TestLongRunOutlivesItsCall: the model waits with wait_code (which gives
// only what is new), then ends its turn while the code still runs: the
// turn ends when the code does, the user sees how it ended, and the model
// is told at the next message.
func TestLongRunOutlivesItsCall(t *testing.T) {
	r := newSlowRunner()
	e := runsEnv(t, r,
		callTurn("c1", "execute_code", map[string]any{"code": "slow()", "timeout": 1}),
		callTurn("c2", "wait_code", map[string]any{"run": "r1", "timeout": 1}),
		say("It trains on."),
		say("It finished."),
	)
	if err := start(e.task, "train"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(e.model.reqs()) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := resultText(t, e, 2); !strings.Contains(got, "Still running after 1s (run r1). No output yet.") {
		t.Errorf("wait_code with nothing new: %q", got)
	}
	time.Sleep(200 * time.Millisecond)
	if st := e.task.State(); st != agent.StateWorking {
		t.Errorf("the turn ended with its code still running: %s", st)
	}
	close(r.release)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := e.task.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	ui := kinds(e.task.UI())
	if !strings.HasSuffix(ui, "text,command_output") {
		t.Errorf("the user is not shown how the code ended: %s", ui)
	}
	if _, err := e.run("and?"); err != nil {
		t.Fatal(err)
	}
	reqs := e.model.reqs()
	last := reqs[len(reqs)-1].Messages
	if got := last[len(last)-1].Content[0].Text; !strings.Contains(got, "The code the agent left running (run r1) ended after your last message") ||
		!strings.Contains(got, "'done'") {
		t.Errorf("the model is not told how the code ended: %q", got)
	}
}
