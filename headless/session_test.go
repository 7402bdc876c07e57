package headless

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/agent/provider/scripted"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/store"
)

// fakeRunner answers every execute_code with a fixed result and records the code.
type fakeRunner struct {
	mu   sync.Mutex
	code []string
}

func (f *fakeRunner) Run(_ context.Context, code string) (agent.CodeResult, error) {
	f.mu.Lock()
	f.code = append(f.code, code)
	f.mu.Unlock()
	return agent.CodeResult{Result: "42\n"}, nil
}

func (f *fakeRunner) ran() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.code...)
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func scriptedModel(t *testing.T) (*scripted.Server, provider.Provider) {
	t.Helper()
	srv := scripted.New(t)
	info := provider.ModelInfo{ID: "m", InputPrice: 2, OutputPrice: 8, ContextWindow: 100000}
	p, err := openai.New(openai.Config{APIKey: "k", BaseURL: srv.OpenAIURL(), Model: "m", Info: &info})
	if err != nil {
		t.Fatal(err)
	}
	return srv, p
}

func open(t *testing.T, o Options) *Session {
	t.Helper()
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func usage(in, out int) scripted.Step {
	return scripted.UsageStep(scripted.Usage{Input: in, Output: out})
}

func TestAsk(t *testing.T) {
	tests := []struct {
		name      string
		turns     []scripted.Turn
		approve   Approver
		text      string
		completed bool
		ran       int
		denied    bool
		requests  int
	}{
		{
			name: "allowed code then completion",
			turns: []scripted.Turn{
				scripted.Reply(scripted.Text("Checking."), scripted.ToolCall("c1", "execute_code", `{"code":"6*7"}`), usage(100, 10)),
				scripted.Reply(scripted.ToolCall("c2", "attempt_completion", `{"result":"It is 42."}`), usage(120, 8)),
			},
			approve: PolicyApprover(ApproveAll), text: "It is 42.", completed: true, ran: 1, requests: 2,
		},
		{
			name: "denied code, answer in text",
			turns: []scripted.Turn{
				scripted.Reply(scripted.ToolCall("c1", "execute_code", `{"code":"6*7"}`), usage(100, 10)),
				scripted.Reply(scripted.Text("I was not allowed to run it; ", "6 × 7 is 42."), usage(120, 8)),
			},
			approve: PolicyApprover(ApproveNone), text: "I was not allowed to run it; 6 × 7 is 42.", denied: true, requests: 2,
		},
		{
			name: "read-only denies code",
			turns: []scripted.Turn{
				scripted.Reply(scripted.ToolCall("c1", "execute_code", `{"code":"6*7"}`), usage(100, 10)),
				scripted.Reply(scripted.Text("Denied."), usage(120, 8)),
			},
			approve: PolicyApprover(ApproveReadOnly), text: "Denied.", denied: true, requests: 2,
		},
		{
			name: "followup without a person",
			turns: []scripted.Turn{
				scripted.Reply(scripted.ToolCall("c1", "ask_followup_question", `{"question":"Which number?"}`), usage(100, 10)),
				scripted.Reply(scripted.Text("I assumed 6 × 7: 42."), usage(120, 8)),
			},
			approve: nil, text: "I assumed 6 × 7: 42.", requests: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, prov := scriptedModel(t)
			srv.Enqueue(tt.turns...)
			st := openStore(t)
			fr := &fakeRunner{}
			s := open(t, Options{Store: st, Provider: prov, Model: "openai:m", Runner: fr, Workspace: t.TempDir()})
			var asked []AnsweredAsk
			res, err := s.Ask(context.Background(), "What is 6 times 7?", tt.approve, func(a AnsweredAsk) { asked = append(asked, a) })
			if err != nil {
				t.Fatalf("Ask: %v", err)
			}
			if res.Text != tt.text || res.Completed != tt.completed || res.Requests != tt.requests {
				t.Errorf("text %q completed %v requests %d; want %q %v %d", res.Text, res.Completed, res.Requests, tt.text, tt.completed, tt.requests)
			}
			if got := len(fr.ran()); got != tt.ran {
				t.Errorf("ran %d cells, want %d", got, tt.ran)
			}
			if len(asked) != 1 || len(res.Asks) != 1 || asked[0].Denied() != tt.denied {
				t.Fatalf("asks %+v, want one with denied=%v", asked, tt.denied)
			}
			if res.Usage.InputTokens != 220 || res.Usage.OutputTokens != 18 || res.Usage.Cost <= 0 {
				t.Errorf("usage %+v", res.Usage)
			}
			if res.SessionID != s.ID() || res.Duration <= 0 {
				t.Errorf("result %+v", res)
			}
			if tt.approve == nil {
				last, _ := srv.Last()
				if !strings.Contains(string(last.Raw), "non-interactive") {
					t.Errorf("the followup's answer did not reach the model: %s", last.Raw)
				}
			}
			// Everything is in the store.
			h, err := st.Load(context.Background(), s.ID())
			if err != nil {
				t.Fatal(err)
			}
			if len(h.UI) == 0 || h.UI[0].Text != "What is 6 times 7?" || len(h.API) < 3 {
				t.Errorf("stored %d UI (first %+v), %d API messages", len(h.UI), h.UI[0], len(h.API))
			}
		})
	}
}

func TestAskNoProvider(t *testing.T) {
	s := open(t, Options{Store: openStore(t), Runner: &fakeRunner{}, Workspace: t.TempDir()})
	res, err := s.Ask(context.Background(), "hello", nil, nil)
	if !errors.Is(err, agent.ErrNoProvider) || !errors.Is(res.Err, agent.ErrNoProvider) {
		t.Fatalf("Ask = %v, want ErrNoProvider", err)
	}
}

func TestAskUnansweredAskIsPending(t *testing.T) {
	srv, prov := scriptedModel(t)
	srv.Enqueue(scripted.Reply(scripted.ToolCall("c1", "execute_code", `{"code":"1"}`)))
	s := open(t, Options{Store: openStore(t), Provider: prov, Runner: &fakeRunner{}, Workspace: t.TempDir()})
	never := func(context.Context, messages.UIMessage) (agent.Response, bool) { return agent.Response{}, false }
	res, err := s.Ask(context.Background(), "run 1", never, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pending == nil || res.Pending.Ask != messages.AskCommand {
		t.Fatalf("pending %+v, want the command ask", res.Pending)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestResume continues a stored session: the model gets the earlier
// messages, and the session keeps its id.
func TestResume(t *testing.T) {
	srv, prov := scriptedModel(t)
	srv.Enqueue(scripted.Reply(scripted.Text("First.")), scripted.Reply(scripted.Text("Second.")))
	st := openStore(t)
	ws := t.TempDir()
	s1 := open(t, Options{Store: st, Provider: prov, Model: "openai:m", Runner: &fakeRunner{}, Workspace: ws})
	if _, err := s1.Ask(context.Background(), "one", nil, nil); err != nil {
		t.Fatal(err)
	}
	s1.Close()
	latest, err := Latest(context.Background(), st)
	if err != nil || latest.ID != s1.ID() {
		t.Fatalf("Latest = %v, %v", latest.ID, err)
	}
	s2 := open(t, Options{Store: st, Provider: prov, Resume: s1.ID()[:8], Runner: &fakeRunner{}, Workspace: ws})
	if s2.ID() != s1.ID() || !s2.Resumed() || s2.Model() != "openai:m" {
		t.Fatalf("resumed %s (%v, model %q), want %s", s2.ID(), s2.Resumed(), s2.Model(), s1.ID())
	}
	res, err := s2.Ask(context.Background(), "two", nil, nil)
	if err != nil || res.Text != "Second." {
		t.Fatalf("Ask: %+v, %v", res, err)
	}
	last, _ := srv.Last()
	if n := len(last.Messages()); n < 3 {
		t.Errorf("the resumed request sent %d messages, want the earlier ones too", n)
	}
}

func TestFindSession(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	if _, err := Latest(ctx, st); !errors.Is(err, ErrNoSession) {
		t.Errorf("Latest on an empty store = %v", err)
	}
	for _, id := range []string{"abc-1", "abc-2", "xyz"} {
		if _, err := st.CreateSession(ctx, store.NewSession{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Archive(ctx, "xyz", ""); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ref, want, err string
	}{
		{"abc-1", "abc-1", ""},
		{"abc-2", "abc-2", ""},
		{"x", "xyz", ""}, // archived sessions are found too
		{"abc", "", "ambiguous"},
		{"nope", "", `no such session "nope"`},
		{" ", "", "empty session id"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			s, err := FindSession(ctx, st, tt.ref)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || s.ID != tt.want {
				t.Fatalf("FindSession = %q, %v; want %q", s.ID, err, tt.want)
			}
		})
	}
	if _, err := Open(ctx, Options{Store: st, Resume: "xyz", Runner: &fakeRunner{}, Workspace: t.TempDir()}); err == nil ||
		!strings.Contains(err.Error(), "archived") {
		t.Errorf("Open of an archived session = %v", err)
	}
}

func TestPolicyApprover(t *testing.T) {
	tests := []struct {
		policy Approve
		ask    messages.Ask
		want   agent.ResponseKind
	}{
		{ApproveAll, messages.AskCommand, agent.ResponseYes},
		{ApproveAll, messages.AskTool, agent.ResponseYes},
		{ApproveNone, messages.AskCommand, agent.ResponseNo},
		{ApproveReadOnly, messages.AskTool, agent.ResponseNo},
		{ApproveAll, messages.AskFollowup, agent.ResponseMessage},
		{ApproveNone, messages.AskFollowup, agent.ResponseMessage},
		{ApproveAll, messages.AskMistakeLimitReached, agent.ResponseNo},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy)+"/"+string(tt.ask), func(t *testing.T) {
			r, ok := PolicyApprover(tt.policy)(context.Background(), messages.UIMessage{Type: messages.TypeAsk, Ask: tt.ask})
			if !ok || r.Kind != tt.want || r.By != "policy:"+string(tt.policy) {
				t.Errorf("got %+v %v, want %s", r, ok, tt.want)
			}
		})
	}
}

func TestParseApprove(t *testing.T) {
	for in, want := range map[string]Approve{"": ApproveNone, "none": ApproveNone, "read-only": ApproveReadOnly, "all": ApproveAll} {
		if got, err := ParseApprove(in); err != nil || got != want {
			t.Errorf("ParseApprove(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseApprove("yes"); err == nil {
		t.Error("ParseApprove(yes) succeeded")
	}
}
