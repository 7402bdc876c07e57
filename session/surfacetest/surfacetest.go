// Package surfacetest is the conformance suite of a surface adapter: the
// code that maps a protocol (Jupyter's, the web panel's, Claude Code's
// stream-json) onto a session.Host. As log/slog's slogtest does for
// handlers, it checks what every adapter must do, whatever its protocol: a
// surface's own test gives Run a Surface that speaks that protocol, and
// Run drives it against a real host whose model is scripted and whose
// backing kernel is a recorder.
//
// The behaviours, in order, on one session:
//   - submit: a prompt is answered, and both are in the history;
//   - ask answered: the agent's ask reaches the surface, its answer reaches
//     the agent, and the approved code runs;
//   - cancel: a turn stopped through the surface ends, what it was asked is
//     kept, and the session takes the next prompt;
//   - rewind: the history goes back to before a message;
//   - reconnect: a new connection shows the user's prompts the host has.
//
// A surface whose protocol has no rewind or no reconnection returns
// ErrUnsupported, and that behaviour is skipped.
package surfacetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// ErrUnsupported is what a Surface returns for an operation its protocol
// does not offer.
var ErrUnsupported = errors.New("surfacetest: the surface does not offer this")

// Turn is what a surface showed of one turn.
type Turn struct {
	// Text is the agent's words as the surface showed them, joined.
	Text string
	// Asked are the asks the surface presented, each as it described it
	// (for code, the code).
	Asked []string
}

// Surface is the surface under test, driven through its own protocol.
type Surface interface {
	// Prompt sends text as the user's prompt and follows the turn to its
	// end, answering every ask with "allow" the way the surface's user
	// would.
	Prompt(ctx context.Context, text string) (Turn, error)
	// Start sends text as the user's prompt and returns without waiting.
	Start(ctx context.Context, text string) error
	// Cancel stops the running turn the way the surface's user would, and
	// returns once the surface shows that the turn ended.
	Cancel(ctx context.Context) error
	// Rewind takes the conversation back to before the message stamped ts
	// (files and kernel untouched), or returns ErrUnsupported.
	Rewind(ctx context.Context, ts int64) error
	// Reconnect drops the surface's connection, makes a new one and
	// returns the user's prompts it shows then, in order, or
	// ErrUnsupported.
	Reconnect(ctx context.Context) ([]string, error)
	// Close ends the surface.
	Close() error
}

// Host is the scripted host a surface is tested against: a real session
// host over a SQLite store in a temporary directory, its model the
// scripted server (OpenAI's streaming format), its backing kernel Runner.
type Host struct {
	*session.Host
	Script *scripted.Server
	Runner *Runner
}

// NewHost returns a scripted host; the test's cleanup closes it.
func NewHost(t testing.TB) *Host {
	t.Helper()
	srv := scripted.New(t)
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{}
	h := session.New(session.Config{Store: st, Runner: r, Workspace: t.TempDir(), Kind: "test", Model: "openai:scripted",
		OpenModel: func(spec string) (provider.Provider, error) {
			_, name, _ := strings.Cut(spec, ":")
			info := provider.ModelInfo{ID: name, InputPrice: 1, OutputPrice: 2, ContextWindow: 100000}
			return openai.New(openai.Config{APIKey: "k", BaseURL: srv.OpenAIURL(), Model: name, Info: &info})
		}})
	t.Cleanup(func() {
		h.Close()
		st.Close()
	})
	return &Host{Host: h, Script: srv, Runner: r}
}

// Runner is the scripted host's backing kernel: it records the code it is
// given, and every run prints 42 (an execute_result to the turn's sink).
type Runner struct {
	mu   sync.Mutex
	code []string
}

// Ran returns the code run so far.
func (r *Runner) Ran() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.code)
}

// Execute implements backing.Runner.
func (r *Runner) Execute(_ context.Context, e backing.Exec) (backing.Result, error) {
	r.mu.Lock()
	r.code = append(r.code, e.Code)
	r.mu.Unlock()
	if e.Output != nil {
		e.Output(backing.Output{Type: wire.MsgExecuteResult,
			Content: json.RawMessage(`{"data":{"text/plain":"42"},"metadata":{},"execution_count":1}`)})
	}
	return backing.Result{Text: "42\n", Status: "ok"}, nil
}

func (*Runner) Start()                          {}
func (*Runner) Running() bool                   { return true }
func (*Runner) Ready(context.Context) error     { return nil }
func (*Runner) Interrupt(context.Context) error { return nil }
func (*Runner) Restart(context.Context) error   { return nil }
func (*Runner) Describe() string                { return "surfacetest" }
func (*Runner) Close() error                    { return nil }
func (*Runner) Debugger() bool                  { return false }
func (*Runner) LanguageInfo(context.Context) json.RawMessage {
	return json.RawMessage(`{"name":"python","version":"3","mimetype":"text/x-python","file_extension":".py"}`)
}
func (*Runner) Do(context.Context, client.Request, client.Handlers) (*wire.Message, error) {
	return nil, net.ErrClosed
}

// Run runs the suite on the Surface newSurface makes over a new scripted
// host.
func Run(t *testing.T, newSurface func(t *testing.T, h *Host) Surface) {
	h := NewHost(t)
	s := newSurface(t, h)
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := &conformance{h: h, s: s, ctx: ctx}
	for _, step := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"submit", c.submit},
		{"ask answered", c.askAnswered},
		{"cancel", c.cancel},
		{"rewind", c.rewind},
		{"reconnect", c.reconnect},
	} {
		if !t.Run(step.name, step.f) {
			return // the next steps build on this one
		}
	}
}

type conformance struct {
	h   *Host
	s   Surface
	ctx context.Context
}

func usage() scripted.Step { return scripted.UsageStep(scripted.Usage{Input: 10, Output: 2}) }

func (c *conformance) submit(t *testing.T) {
	c.h.Script.Enqueue(scripted.Reply(scripted.Text("Hello ", "from the model."), usage()))
	turn, err := c.s.Prompt(c.ctx, "Say hello")
	if err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	if !strings.Contains(turn.Text, "Hello from the model.") {
		t.Errorf("the surface showed %q, want the model's answer", turn.Text)
	}
	if len(turn.Asked) != 0 {
		t.Errorf("asks %q in a turn that asked nothing", turn.Asked)
	}
	ui := c.h.Conversation().UI()
	if find(ui, "Say hello") < 0 || find(ui, "Hello from the model.") < 0 {
		t.Errorf("the history lacks the prompt or its answer: %s", texts(ui))
	}
}

func (c *conformance) askAnswered(t *testing.T) {
	c.h.Script.Enqueue(
		scripted.Reply(scripted.ToolCall("call_1", "execute_code", `{"code":"6*7"}`), usage()),
		scripted.Reply(scripted.Text("It is 42."), usage()),
	)
	turn, err := c.s.Prompt(c.ctx, "What is 6 times 7?")
	if err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	if len(turn.Asked) != 1 || !strings.Contains(turn.Asked[0], "6*7") {
		t.Errorf("the surface presented asks %q, want the one for 6*7", turn.Asked)
	}
	if ran := c.h.Runner.Ran(); !slices.Equal(ran, []string{"6*7"}) {
		t.Errorf("ran %q, want the approved 6*7", ran)
	}
	if !strings.Contains(turn.Text, "It is 42.") {
		t.Errorf("the surface showed %q, want the answer after the code", turn.Text)
	}
	last, _ := c.h.Script.Last()
	if !strings.Contains(string(last.Raw), "42") {
		t.Errorf("the code's result did not reach the model: %s", last.Raw)
	}
}

func (c *conformance) cancel(t *testing.T) {
	n := len(c.h.Script.Requests())
	c.h.Script.Enqueue(scripted.Reply(scripted.Text("Thinking it over"), scripted.Stall()))
	if err := c.s.Start(c.ctx, "Take your time"); err != nil {
		t.Fatalf("Start: %v", err)
	}
	waitFor(t, "the model to be asked", func() bool { return len(c.h.Script.Requests()) > n })
	if err := c.s.Cancel(c.ctx); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	waitFor(t, "the turn to end", func() bool { return !c.h.Busy() })
	if find(c.h.Conversation().UI(), "Take your time") < 0 {
		t.Errorf("the cancelled turn's prompt is not in the history: %s", texts(c.h.Conversation().UI()))
	}
	c.h.Script.Enqueue(scripted.Reply(scripted.Text("Back again."), usage()))
	turn, err := c.s.Prompt(c.ctx, "Still there?")
	if err != nil {
		t.Fatalf("Prompt after the cancel: %v", err)
	}
	if !strings.Contains(turn.Text, "Back again.") {
		t.Errorf("after the cancel the surface showed %q", turn.Text)
	}
}

func (c *conformance) rewind(t *testing.T) {
	ui := c.h.Conversation().UI()
	i := find(ui, "What is 6 times 7?")
	if i < 0 {
		t.Fatalf("no prompt to rewind to in %s", texts(ui))
	}
	ts := ui[i].TS
	err := c.s.Rewind(c.ctx, ts)
	if errors.Is(err, ErrUnsupported) {
		t.Skip("the surface offers no rewind")
	}
	if err != nil {
		t.Fatalf("Rewind: %v", err)
	}
	ui = c.h.Conversation().UI()
	if len(ui) == 0 || ui[len(ui)-1].TS >= ts || find(ui, "Hello from the model.") < 0 {
		t.Errorf("after rewinding to before %d the history is %s", ts, texts(ui))
	}
	for _, m := range c.h.Conversation().API() {
		if b, _ := json.Marshal(m); strings.Contains(string(b), "6 times 7") {
			t.Errorf("the model's history still holds the rewound prompt: %s", b)
		}
	}
}

func (c *conformance) reconnect(t *testing.T) {
	got, err := c.s.Reconnect(c.ctx)
	if errors.Is(err, ErrUnsupported) {
		t.Skip("the surface has no connection to renew")
	}
	if err != nil {
		t.Fatalf("Reconnect: %v", err)
	}
	want := Prompts(c.h.Conversation().UI())
	if !slices.Equal(got, want) || !slices.Equal(want, []string{"Say hello"}) {
		t.Errorf("after reconnecting the surface shows the prompts %q; the host has %q", got, want)
	}
}

// Prompts returns the user's prompts in a UI history: the first text
// message (a session's first prompt) and every user_feedback.
func Prompts(ui []messages.UIMessage) []string {
	var out []string
	first := true
	for _, m := range ui {
		if m.Type != messages.TypeSay {
			continue
		}
		if m.Say == messages.SayUserFeedback || (m.Say == messages.SayText && first) {
			out = append(out, m.Text)
		}
		if m.Say == messages.SayText {
			first = false
		}
	}
	return out
}

// find returns the index of the first message whose text contains s, or -1.
func find(ui []messages.UIMessage, s string) int {
	return slices.IndexFunc(ui, func(m messages.UIMessage) bool { return strings.Contains(m.Text, s) })
}

func texts(ui []messages.UIMessage) string {
	var b strings.Builder
	for _, m := range ui {
		fmt.Fprintf(&b, "\n  %d %s%s: %q", m.TS, m.Say, m.Ask, m.Text)
	}
	return b.String()
}

// waitFor polls cond until it holds; 30 s is a hung surface, not a slow
// one.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
