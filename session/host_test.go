package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// fakeRunner is a backing.Runner that answers every Execute with a fixed
// result and records the code; the real one is tested in package backing.
type fakeRunner struct {
	mu   sync.Mutex
	code []string
}

func (f *fakeRunner) Execute(_ context.Context, e backing.Exec) (backing.Result, error) {
	f.mu.Lock()
	f.code = append(f.code, e.Code)
	f.mu.Unlock()
	if e.Output != nil {
		e.Output(backing.Output{Type: wire.MsgExecuteResult,
			Content: json.RawMessage(`{"data":{"text/plain":"42"},"metadata":{},"execution_count":1}`)})
	}
	return backing.Result{Text: "42\n", Status: "ok"}, nil
}

func (f *fakeRunner) ran() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.code...)
}

func (f *fakeRunner) Start()                          {}
func (f *fakeRunner) Running() bool                   { return true }
func (f *fakeRunner) Ready(context.Context) error     { return nil }
func (f *fakeRunner) Interrupt(context.Context) error { return nil }
func (f *fakeRunner) Restart(context.Context) error   { return nil }
func (f *fakeRunner) Describe() string                { return "fake" }
func (f *fakeRunner) Close() error                    { return nil }
func (f *fakeRunner) Debugger() bool                  { return false }

func (f *fakeRunner) LanguageInfo(context.Context) json.RawMessage {
	return json.RawMessage(`{"name":"python"}`)
}
func (f *fakeRunner) Do(context.Context, client.Request, client.Handlers) (*wire.Message, error) {
	return nil, net.ErrClosed
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// scriptedModels opens every model string as the scripted server's model
// of that name (the part after "openai:").
func scriptedModels(t *testing.T) (*scripted.Server, ModelOpener) {
	t.Helper()
	srv := scripted.New(t)
	return srv, func(spec string) (provider.Provider, error) {
		_, name, _ := strings.Cut(spec, ":")
		// A model whose name starts with "vision" takes images.
		info := provider.ModelInfo{ID: name, InputPrice: 2, OutputPrice: 8, ContextWindow: 100000,
			Vision: strings.HasPrefix(name, "vision")}
		return openai.New(openai.Config{APIKey: "k", BaseURL: srv.OpenAIURL(), Model: name, Info: &info})
	}
}

// liveKernel is a real ipykernel (the python3 kernelspec's), closed when
// the test ends; the test is skipped with -short or without one.
func liveKernel(t *testing.T) *backing.Local {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a kernel")
	}
	if _, err := client.FindSpec("python3"); err != nil {
		t.Skipf("no python3 kernelspec: %v", err)
	}
	r := backing.NewLocal(backing.LocalOptions{Kernel: "python3"})
	t.Cleanup(func() { r.Close() })
	return r
}

// warmUp is a first prompt, answered: the prompts after it are the
// user's feedback, whose stamps promptTS finds.
func warmUp(t *testing.T, h *Host, srv *scripted.Server) {
	t.Helper()
	srv.Enqueue(scripted.Reply(scripted.Text("Ready.")))
	if _, err := h.Submit(context.Background(), "warm up", Follow{}); err != nil {
		t.Fatal(err)
	}
}

func newHost(t *testing.T, cfg Config) *Host {
	t.Helper()
	if cfg.Workspace == "" {
		cfg.Workspace = t.TempDir()
	}
	if cfg.Runner == nil {
		cfg.Runner = &fakeRunner{}
	}
	h := New(cfg)
	t.Cleanup(func() { h.Close() })
	return h
}

func usage(in, out int) scripted.Step {
	return scripted.UsageStep(scripted.Usage{Input: in, Output: out})
}

func TestSubmit(t *testing.T) {
	tests := []struct {
		name      string
		turns     []scripted.Turn
		approve   agent.Approver
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
			approve: agent.ApproveAll.Approver(), text: "It is 42.", completed: true, ran: 1, requests: 2,
		},
		{
			name: "denied code, answer in text",
			turns: []scripted.Turn{
				scripted.Reply(scripted.ToolCall("c1", "execute_code", `{"code":"6*7"}`), usage(100, 10)),
				scripted.Reply(scripted.Text("I was not allowed to run it; ", "6 × 7 is 42."), usage(120, 8)),
			},
			approve: agent.ApproveNone.Approver(), text: "I was not allowed to run it; 6 × 7 is 42.", denied: true, requests: 2,
		},
		{
			name: "read-only denies code",
			turns: []scripted.Turn{
				scripted.Reply(scripted.ToolCall("c1", "execute_code", `{"code":"6*7"}`), usage(100, 10)),
				scripted.Reply(scripted.Text("Denied."), usage(120, 8)),
			},
			approve: agent.ApproveReadOnly.Approver(), text: "Denied.", denied: true, requests: 2,
		},
		{
			name: "followup without a person",
			turns: []scripted.Turn{
				scripted.Reply(scripted.ToolCall("c1", "ask_followup_question", `{"question":"Which number?"}`), usage(100, 10)),
				scripted.Reply(scripted.Text("I assumed 6 × 7: 42."), usage(120, 8)),
			},
			approve: agent.ApproveNone.Approver(), text: "I assumed 6 × 7: 42.", requests: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, open := scriptedModels(t)
			srv.Enqueue(tt.turns...)
			st := openStore(t)
			fr := &fakeRunner{}
			h := newHost(t, Config{Store: st, OpenModel: open, Model: "openai:m", Runner: fr})
			var asked []AnsweredAsk
			var outputs int
			res, err := h.Submit(context.Background(), "What is 6 times 7?", Follow{
				Approve: tt.approve, OnAsk: func(a AnsweredAsk) { asked = append(asked, a) },
				Output: func(backing.Output) { outputs++ },
			})
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}
			if res.Text != tt.text || res.Completed != tt.completed || res.Usage.Requests != tt.requests {
				t.Errorf("text %q completed %v requests %d; want %q %v %d", res.Text, res.Completed, res.Usage.Requests, tt.text, tt.completed, tt.requests)
			}
			if got := len(fr.ran()); got != tt.ran || outputs != tt.ran {
				t.Errorf("ran %d cells with %d outputs to the turn, want %d", got, outputs, tt.ran)
			}
			if len(asked) != 1 || len(res.Asks) != 1 || asked[0].Denied() != tt.denied {
				t.Fatalf("asks %+v, want one with denied=%v", asked, tt.denied)
			}
			if res.Usage.InputTokens != 220 || res.Usage.OutputTokens != 18 || res.Usage.Cost <= 0 {
				t.Errorf("usage %+v", res.Usage)
			}
			info, _ := h.Current(context.Background())
			if res.SessionID != info.ID || res.Duration <= 0 {
				t.Errorf("result %+v", res)
			}
			if tt.name == "followup without a person" {
				last, _ := srv.Last()
				if !strings.Contains(string(last.Raw), "non-interactive") {
					t.Errorf("the followup's answer did not reach the model: %s", last.Raw)
				}
			}
			// Everything is in the store.
			hist, err := st.Load(context.Background(), info.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(hist.UI) == 0 || hist.UI[0].Text != "What is 6 times 7?" || len(hist.API) < 3 {
				t.Errorf("stored %d UI, %d API messages", len(hist.UI), len(hist.API))
			}
		})
	}
}

func TestSubmitNoProvider(t *testing.T) {
	h := newHost(t, Config{Store: openStore(t)})
	if _, err := h.Submit(context.Background(), "hello", Follow{}); !errors.Is(err, agent.ErrNoProvider) {
		t.Fatalf("Submit = %v, want ErrNoProvider", err)
	}
}

func TestUnansweredAskIsPending(t *testing.T) {
	srv, open := scriptedModels(t)
	srv.Enqueue(scripted.Reply(scripted.ToolCall("c1", "execute_code", `{"code":"1"}`)))
	h := newHost(t, Config{Store: openStore(t), OpenModel: open, Model: "openai:m"})
	never := func(context.Context, messages.UIMessage) (agent.Response, bool) { return agent.Response{}, false }
	res, err := h.Submit(context.Background(), "run 1", Follow{Approve: never})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pending == nil || res.Pending.Ask != messages.AskCommand {
		t.Fatalf("pending %+v, want the command ask", res.Pending)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestResume continues a stored session: the model gets the earlier
// messages, the session keeps its id, and the session's model wins over
// the host's default (a kernelspec's model).
func TestResume(t *testing.T) {
	srv, open := scriptedModels(t)
	srv.Enqueue(scripted.Reply(scripted.Text("First.")), scripted.Reply(scripted.Text("Second.")))
	st := openStore(t)
	ws := t.TempDir()
	h1 := newHost(t, Config{Store: st, OpenModel: open, Model: "openai:default", Workspace: ws})
	if _, err := h1.Current(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h1.Models().Set(context.Background(), "openai:chosen"); err != nil {
		t.Fatal(err)
	}
	if _, err := h1.Submit(context.Background(), "one", Follow{}); err != nil {
		t.Fatal(err)
	}
	first, _ := h1.Current(context.Background())
	h1.Close()

	// A new kernel from the same kernelspec: its default is not the
	// session's model.
	h2 := newHost(t, Config{Store: st, OpenModel: open, Model: "openai:default", Workspace: ws})
	info, err := h2.Resume(context.Background(), first.ID[:8])
	if err != nil {
		t.Fatal(err)
	}
	if info.ID != first.ID || !info.Resumed || info.Model != "openai:chosen" || h2.Models().Model() != "openai:chosen" {
		t.Fatalf("resumed %+v, want %s with model openai:chosen", info, first.ID)
	}
	res, err := h2.Submit(context.Background(), "two", Follow{})
	if err != nil || res.Text != "Second." {
		t.Fatalf("Submit: %+v, %v", res, err)
	}
	last, _ := srv.Last()
	var body struct {
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(last.Raw, &body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "chosen" {
		t.Errorf("the resumed session asked model %q, want its own (chosen)", body.Model)
	}
	if len(body.Messages) < 3 {
		t.Errorf("the resumed request sent %d messages, want the earlier ones too", len(body.Messages))
	}
	// Continue finds the latest session.
	h3 := newHost(t, Config{Store: st, OpenModel: open, Workspace: ws})
	if info, err := h3.Continue(context.Background()); err != nil || info.ID != first.ID {
		t.Fatalf("Continue = %+v, %v", info, err)
	}
}

// TestResumeArchived: an archived session is refused, on every surface
// (they all resume through the host).
func TestResumeArchived(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	s, err := st.CreateSession(ctx, store.NewSession{ID: "archived-session"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Archive(ctx, s.ID, "done"); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, Config{Store: st})
	if _, err := h.Resume(ctx, "archived"); err == nil || !strings.Contains(err.Error(), "archived") ||
		!strings.Contains(err.Error(), "sessions restore") {
		t.Fatalf("Resume of an archived session = %v, want a refusal saying how to restore it", err)
	}
	if _, err := h.Resume(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Resume of a missing session = %v, want ErrNotFound", err)
	}
}

// TestSubscribeFollowsSessions: a subscriber (the web panel) hears the
// current session's events across switches, and may call the host back.
func TestSubscribeFollowsSessions(t *testing.T) {
	srv, open := scriptedModels(t)
	srv.Enqueue(scripted.Reply(scripted.Text("one")), scripted.Reply(scripted.Text("two")))
	h := newHost(t, Config{Store: openStore(t), OpenModel: open, Model: "openai:m"})
	var mu sync.Mutex
	var seen []string
	remove := h.Subscribe(func(e agent.Event) {
		n := len(h.Conversation().UI()) // reading back from a listener must not deadlock
		mu.Lock()
		defer mu.Unlock()
		if e.Kind == EventSessionChanged || e.Kind == EventSettingsChanged || e.Kind == agent.EventTaskCompleted {
			seen = append(seen, string(e.Kind))
		}
		if e.Kind == agent.EventMessageCreated && e.Message.Say == messages.SayText && n > 0 {
			seen = append(seen, "text:"+e.Message.Text)
		}
	})
	defer remove()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := h.Submit(ctx, "first", Follow{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.NewSession(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Modes().SetPermission(ctx, agent.PermissionPlan); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Submit(ctx, "second", Follow{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := strings.Join(seen, ",")
	mu.Unlock()
	want := "sessionChanged,text:first,text:one,sessionChanged,settingsChanged,text:second,text:two"
	if got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
}

// TestRecordCell: a %%code cell is stored and given to the model with the
// next prompt.
func TestRecordCell(t *testing.T) {
	srv, open := scriptedModels(t)
	srv.Enqueue(scripted.Reply(scripted.Text("I see.")))
	h := newHost(t, Config{Store: openStore(t), OpenModel: open, Model: "openai:m"})
	ctx := context.Background()
	h.CodeLog().RecordCell(ctx, "x = 41 + 1\nprint(x)", backing.Result{Stdout: "42\n", Status: "ok"})
	if _, err := h.Submit(ctx, "What did I compute?", Follow{}); err != nil {
		t.Fatal(err)
	}
	last, _ := srv.Last()
	if !strings.Contains(string(last.Raw), "x = 41 + 1") || !strings.Contains(string(last.Raw), "42") {
		t.Fatalf("the cell did not reach the model: %s", last.Raw)
	}
	var recorded bool
	for _, m := range h.Conversation().UI() {
		recorded = recorded || m.Say == messages.SayCellExecuted
	}
	if !recorded {
		t.Fatal("no cell_executed message in the history")
	}
}

// TestRef resolves #N and ts, and refuses what is not there.
func TestRef(t *testing.T) {
	srv, open := scriptedModels(t)
	srv.Enqueue(scripted.Reply(scripted.Text("ok")))
	h := newHost(t, Config{Store: openStore(t), OpenModel: open, Model: "openai:m"})
	if _, err := h.Submit(context.Background(), "hello", Follow{}); err != nil {
		t.Fatal(err)
	}
	ui := h.Conversation().UI()
	if ts, err := h.Conversation().Ref("#0"); err != nil || ts != ui[0].TS {
		t.Fatalf("Ref(#0) = %d, %v", ts, err)
	}
	for _, bad := range []string{"#99", "#-1", "12345", "x"} {
		if _, err := h.Conversation().Ref(bad); err == nil {
			t.Errorf("Ref(%q) succeeded", bad)
		}
	}
	before := len(h.Conversation().UI())
	if _, err := h.World().Rewind(context.Background(), ui[len(ui)-1].TS, RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(h.Conversation().UI()) != before-1 {
		t.Fatalf("rewind left %d of %d messages", len(h.Conversation().UI()), before)
	}
}

// goneRunner is a backing kernel whose kernelspec was removed: it cannot
// restart.
type goneRunner struct{ fakeRunner }

func (g *goneRunner) Restart(context.Context) error {
	return errors.New(`backing kernel: no such kernelspec "python-old"`)
}

// TestRewindWhenTheKernelCannotRestart: the conversation is still rewound,
// and the report says why the kernel was not restored.
func TestRewindWhenTheKernelCannotRestart(t *testing.T) {
	srv, open := scriptedModels(t)
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("c1", "execute_code", `{"code":"x = 1"}`)),
		scripted.Reply(scripted.Text("done")),
		scripted.Reply(scripted.ToolCall("c2", "execute_code", `{"code":"x = 2"}`)),
		scripted.Reply(scripted.Text("done again")),
	)
	h := newHost(t, Config{Store: openStore(t), OpenModel: open, Model: "openai:m", Runner: &goneRunner{}})
	ctx := context.Background()
	for _, q := range []string{"one", "two"} {
		if _, err := h.Submit(ctx, q, Follow{Approve: agent.ApproveAll.Approver()}); err != nil {
			t.Fatal(err)
		}
	}
	var target int64
	for _, m := range h.Conversation().UI() {
		if m.Text == "two" {
			target = m.TS
		}
	}
	rw, err := h.World().Rewind(ctx, target, RewindOptions{})
	if err != nil {
		t.Fatalf("Rewind: %v", err)
	}
	for _, m := range h.Conversation().UI() {
		if m.Text == "two" {
			t.Fatal("the conversation was not rewound")
		}
	}
	if !strings.Contains(rw.KernelNote, "no such kernelspec") || !strings.Contains(rw.Summary(), "could not restart") {
		t.Fatalf("report %+v", rw)
	}
}

// TestUserCodeContext: code mode's own cells, run before the first
// session and after it, are given to the model with the next prompt (not
// stored as messages), once.
func TestUserCodeContext(t *testing.T) {
	srv, open := scriptedModels(t)
	srv.Enqueue(scripted.Reply(scripted.Text("I see.")), scripted.Reply(scripted.Text("Again.")),
		scripted.Reply(scripted.Text("Nothing new.")))
	h := newHost(t, Config{Store: openStore(t), OpenModel: open, Model: "openai:m", Kind: "code"})
	ctx := context.Background()
	h.CodeLog().UserCode(ctx, "x = 41 + 1\nprint(x)", backing.Result{Stdout: "42\n", Status: "ok"})
	if _, err := h.Submit(ctx, "What did I compute?", Follow{}); err != nil {
		t.Fatal(err)
	}
	last, _ := srv.Last()
	if !strings.Contains(string(last.Raw), "x = 41 + 1") || !strings.Contains(string(last.Raw), `42\n`) {
		t.Fatalf("the cell run before the session did not reach the model: %s", last.Raw)
	}
	h.CodeLog().UserCode(ctx, "1/0", backing.Result{Error: &backing.Error{Name: "ZeroDivisionError", Value: "division by zero"}, Status: "error"})
	if _, err := h.Submit(ctx, "And now?", Follow{}); err != nil {
		t.Fatal(err)
	}
	last, _ = srv.Last()
	msgs := last.Messages()
	lastUser, _ := json.Marshal(msgs[len(msgs)-1])
	if !strings.Contains(string(lastUser), "1/0") || !strings.Contains(string(lastUser), "ZeroDivisionError: division by zero") {
		t.Fatalf("the cell run in the session did not reach the model: %s", lastUser)
	}
	if _, err := h.Submit(ctx, "Anything else?", Follow{}); err != nil {
		t.Fatal(err)
	}
	last, _ = srv.Last()
	msgs = last.Messages()
	lastUser, _ = json.Marshal(msgs[len(msgs)-1])
	if strings.Contains(string(lastUser), "1/0") {
		t.Fatalf("a cell was given twice: %s", lastUser)
	}
	for _, m := range h.Conversation().UI() {
		if m.Say == messages.SayCellExecuted {
			t.Fatalf("a code-mode cell was stored as a message: %+v", m)
		}
	}
}

// TestUserCodeImages: the plots of the user's own cells go to a model that
// takes images with the next prompt (the newest two); another model gets
// the text that names them.
func TestUserCodeImages(t *testing.T) {
	const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	plot := backing.Result{Text: "<Figure>", Status: "ok",
		Images: []backing.Image{{MIME: "image/png", Width: 1, Height: 1, Bytes: 70, Data: pixel}}}
	for _, model := range []string{"openai:vision-m", "openai:m"} {
		t.Run(model, func(t *testing.T) {
			srv, open := scriptedModels(t)
			srv.Enqueue(scripted.Reply(scripted.Text("A dot.")))
			h := newHost(t, Config{Store: openStore(t), OpenModel: open, Model: model, Kind: "code"})
			ctx := context.Background()
			for i := 0; i < 3; i++ {
				h.CodeLog().UserCode(ctx, fmt.Sprintf("plot(%d)", i), plot)
			}
			if _, err := h.Submit(ctx, "Why is my plot one dot?", Follow{}); err != nil {
				t.Fatal(err)
			}
			last, _ := srv.Last()
			msgs := last.Messages()
			user, _ := json.Marshal(msgs[len(msgs)-1])
			images := strings.Count(string(user), `"type":"image_url"`)
			if !strings.Contains(string(user), "plot(2)") || !strings.Contains(string(user), "[image/png 1x1") {
				t.Fatalf("the cells did not reach the model: %s", user)
			}
			if want := map[string]int{"openai:vision-m": 2, "openai:m": 0}[model]; images != want {
				t.Fatalf("%d images sent to %s, want %d: %s", images, model, want, user)
			}
		})
	}
}

// TestTrackerIgnoresTheStore: a data directory inside the workspace (a
// workspace that is the home directory) is not tracked: the database that
// changes at every step is never a checkpointed file, so a rewind cannot
// put an older one back under the running store.
func TestTrackerIgnoresTheStore(t *testing.T) {
	ws := t.TempDir()
	for _, data := range []string{filepath.Join(ws, ".local", "share", "agentkernel"), ws} {
		st, err := store.Open(context.Background(), store.Options{Dir: data})
		if err != nil {
			t.Fatal(err)
		}
		h := New(Config{Store: st, Workspace: ws})
		tr, err := h.world.tracker(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := tr.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateSession(context.Background(), store.NewSession{Model: "m"}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		changes, _, err := tr.Sync(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range changes {
			if c.Path != "notes.txt" {
				t.Errorf("data directory %s: the scan tracked %s", data, c.Path)
			}
		}
		h.Close()
		st.Close()
	}
}

// The outputs of a turn's code go to the sink it was submitted with, also
// when the code runs after Submit returned: the turn paused on an ask that
// another surface answered later. A turn submitted without a sink sends
// none there.
func TestOutputTravelsWithTheTurn(t *testing.T) {
	srv, open := scriptedModels(t)
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("c1", "execute_code", `{"code":"6*7"}`), usage(10, 1)),
		scripted.Reply(scripted.Text("It is 42."), usage(10, 1)),
		scripted.Reply(scripted.ToolCall("c2", "execute_code", `{"code":"7*6"}`), usage(10, 1)),
		scripted.Reply(scripted.Text("Still 42."), usage(10, 1)),
	)
	fr := &fakeRunner{}
	h := newHost(t, Config{Store: openStore(t), OpenModel: open, Model: "openai:m", Runner: fr})
	ctx := context.Background()
	outputs := make(chan backing.Output, 4)
	res, err := h.Submit(ctx, "What is 6 times 7?", Follow{Output: func(o backing.Output) { outputs <- o }})
	if err != nil || res.Pending == nil {
		t.Fatalf("Submit: %v, pending %v; want the turn paused on its ask", err, res.Pending)
	}
	if err := h.Respond(ctx, res.Pending.TS, agent.Response{Kind: agent.ResponseYes, By: "panel"}); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-outputs:
		if o.Type != wire.MsgExecuteResult {
			t.Errorf("output %+v", o)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the code the answered ask ran sent no output to the turn's sink")
	}
	for deadline := time.Now().Add(20 * time.Second); h.Busy(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first turn did not end")
		}
	}
	// Another turn, submitted without a sink, ran code: nothing arrives.
	res, err = h.Submit(ctx, "And 7 times 6?", Follow{Approve: agent.ApproveAll.Approver()})
	if err != nil || len(fr.ran()) != 2 {
		t.Fatalf("Submit: %v, ran %q", err, fr.ran())
	}
	select {
	case o := <-outputs:
		t.Errorf("a turn without a sink sent %+v to the first turn's", o)
	default:
	}
}
