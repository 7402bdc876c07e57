package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/hooks"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/rewind"
)

// Store persists a session. Every completed message is written through it
// before the task takes its next step. agent/agentstore adapts *store.Store.
type Store interface {
	AppendUI(ctx context.Context, sessionID string, msgs ...messages.UIMessage) error
	// UpdateUI stores a new version of a UI message; partial versions may
	// be debounced, a final one is durable when it returns.
	UpdateUI(ctx context.Context, sessionID string, msg messages.UIMessage) error
	AppendAPI(ctx context.Context, sessionID string, msgs ...messages.APIMessage) error
	// ApplyRewind stores a rewind of the histories old* in one transaction.
	ApplyRewind(ctx context.Context, sessionID string, oldUI []messages.UIMessage, oldAPI []messages.APIMessage, res rewind.Result) error
	// RewriteAPI replaces the API history (a condense or truncation) and
	// appends announce to the UI history, in one transaction.
	RewriteAPI(ctx context.Context, sessionID string, oldUI []messages.UIMessage, oldAPI []messages.APIMessage,
		newAPI []messages.APIMessage, announce messages.UIMessage) error
	// AddUsage adds one request's tokens and cost to the session's totals.
	AddUsage(ctx context.Context, sessionID string, u provider.Usage, cost float64) error
}

// Config configures a Task. Store, SessionID and Toolbox are required.
type Config struct {
	SessionID string
	Store     Store
	Toolbox   *Toolbox
	// Provider is the model. Nil: every submitted message is answered with
	// an error saying how to configure one.
	Provider provider.Provider
	// Policy decides tool calls; nil means default mode with no rules.
	Policy *Policy
	// System replaces the system prompt's base; default BasePrompt of the
	// tools each request offers, in the policy's mode.
	System string
	// Rules, when set, gives a turn's instructions, which follow the
	// base in the system prompt (an agent mode's, the user's rules of
	// package rules), fixed for the turn, and the files they came from,
	// which each request's api_req_started message records.
	Rules func(ctx context.Context) (instructions string, files []string)

	Logger hclog.Logger
	// Clock stamps messages; default a new one seeded from the history.
	Clock *messages.Clock
	// History to resume (loaded from the store); empty for a new session.
	UI  []messages.UIMessage
	API []messages.APIMessage
	// MaxRetries of a failed model request before asking the user; default 3.
	MaxRetries int
	// RetryBase is the first backoff delay, doubled per retry; default 1s.
	RetryBase time.Duration
	// RetryBudget bounds a request with its retries: no retry starts
	// later than this after the first attempt began (a proxy in front of
	// the model may retry on its own, and its retries would multiply
	// ours); default 15s.
	RetryBudget time.Duration
	// MistakeLimit is how many consecutive tool failures make the task ask
	// mistake_limit_reached; default 3.
	MistakeLimit int
	// ContextThreshold is the share of the model's context window above
	// which the history is condensed (or truncated); default 0.8.
	ContextThreshold float64
	// DisableCondense skips condensing and truncates directly.
	DisableCondense bool
	// MaxSteps bounds model requests in one turn; default 50.
	MaxSteps int
	// Context returns text to prepend to the next user message (the
	// session host gives its <notebook_context> block: the cells the user
	// ran since the last prompt, the live namespace, what the prompt's
	// @-mentions name, …), and images those
	// cells displayed, which a model that takes images is shown after it;
	// may be nil.
	Context func(ctx context.Context, prompt string) (string, []Image)
	// World, when set, is told of the steps that may change the world
	// beside the conversation (files, the backing kernel), so that a
	// rewind can turn them back.
	World World
	// Hooks runs the user's hooks around prompts, tool calls and stops
	// (see hookrun.go); nil runs none.
	Hooks *hooks.Runner
}

// World is told of the steps of a turn that may change the workspace or
// the backing kernel. Anchors are stamps of the session's clock: a step
// anchored before a message's ts happened before that message. Errors are
// the World's to report; a step is never stopped by them.
type World interface {
	// BeforeTool is called before an allowed tool call that is not
	// read-only runs; after is called once it has run.
	BeforeTool(ctx context.Context, anchor int64, call provider.ToolCall) (after func())
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.MaxRetries <= 0 {
		c.MaxRetries = 3
	}
	if c.RetryBase <= 0 {
		c.RetryBase = time.Second
	}
	if c.RetryBudget <= 0 {
		c.RetryBudget = 15 * time.Second
	}
	if c.MistakeLimit <= 0 {
		c.MistakeLimit = 3
	}
	if c.ContextThreshold <= 0 || c.ContextThreshold > 1 {
		c.ContextThreshold = 0.8
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = 50
	}
	return c
}

// State is what a Task is doing.
type State string

// The task states.
const (
	StateIdle    State = "idle"    // no turn is running
	StateWorking State = "working" // streaming or running a tool
	StateWaiting State = "waiting" // a running turn is paused on an ask
)

// Errors of the Task API.
var (
	ErrBusy       = errors.New("agent: a turn is running")
	ErrNoAsk      = errors.New("agent: no such pending ask")
	ErrClosed     = errors.New("agent: task closed")
	ErrNoProvider = errors.New("agent: no model configured")
)

// Task is one agent session: its histories, its running turn, its pending
// ask. All methods are safe for concurrent use. A turn runs on a goroutine
// the Task owns; Close stops it and waits.
type Task struct {
	cfg   Config
	log   hclog.Logger
	clock *messages.Clock
	perm  *Policy
	lis   Listeners

	mu        sync.Mutex
	ui        []messages.UIMessage
	api       []messages.APIMessage
	state     State
	cancel    context.CancelFunc // of the running turn
	turnDone  chan struct{}      // closed when the running turn ends
	running   *Turn              // the running turn (its done is turnDone)
	pending   *TurnAsk
	totals    Totals
	tools     map[string]ToolCount
	closed    bool
	rewinding bool // a Rewind is storing its result: no turn may start
	lastErr   error
	changed   chan struct{} // closed and replaced when state, turn or pending ask change
	wg        sync.WaitGroup
	// sessionStarted: the SessionStart hooks have run.
	sessionStarted bool

	// Only the turns' goroutine (one at a time) touches these:
	// effort is the requests' reasoning effort (SetEffort), under mu.
	effort provider.Effort
	// filter limits the tools (SetToolFilter), under mu.
	filter *ToolFilter
	// turnInstr and turnRules are the running turn's instructions and
	// the rule files they came from (Config.Rules), under mu.
	turnInstr string
	turnRules []string
	// carry: what the model is told with the next message (how code it
	// left running ended), under mu.
	carry []string
	// stopHookActive: a Stop hook made the running turn go on;
	// startContext: what SessionStart hooks said, for the next prompt.
	stopHookActive bool
	startContext   string
}

// New returns a Task over cfg's history.
func New(cfg Config) (*Task, error) {
	cfg = cfg.withDefaults()
	if cfg.Store == nil || cfg.SessionID == "" || cfg.Toolbox == nil {
		return nil, errors.New("agent: config needs Store, SessionID and Toolbox")
	}
	clock := cfg.Clock
	if clock == nil {
		clock = messages.NewClock(nil)
	}
	clock.ObserveHistory(cfg.UI, cfg.API)
	perm := cfg.Policy
	if perm == nil {
		var err error
		if perm, err = NewPolicy(cfg.Toolbox, PolicyOptions{}); err != nil {
			return nil, err
		}
	}
	t := &Task{
		cfg:     cfg,
		log:     cfg.Logger.Named("agent").With("session", messages.ShortID(cfg.SessionID)),
		clock:   clock,
		perm:    perm,
		ui:      append([]messages.UIMessage(nil), cfg.UI...),
		api:     append([]messages.APIMessage(nil), cfg.API...),
		state:   StateIdle,
		changed: make(chan struct{}),
	}
	// A resumed session may end on an unanswered ask: it stays pending so
	// the next Start answers it.
	if n := len(t.ui); n > 0 && t.ui[n-1].Type == messages.TypeAsk && !t.ui[n-1].IsAnswered {
		t.pending = newAsk(t.ui[n-1], true)
	}
	return t, nil
}

// notifyLocked wakes everyone waiting for a change of the task's state, its
// turn or its pending ask (Wait). The caller holds t.mu.
func (t *Task) notifyLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// Listen registers f for every event; the returned func removes it.
func (t *Task) Listen(f func(Event)) (remove func()) { return t.lis.Add(f) }

// SessionID returns the task's session.
func (t *Task) SessionID() string { return t.cfg.SessionID }

// State returns what the task is doing.
func (t *Task) State() State {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

// UI returns a copy of the UI history.
func (t *Task) UI() []messages.UIMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]messages.UIMessage(nil), t.ui...)
}

// API returns a copy of the API history.
func (t *Task) API() []messages.APIMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]messages.APIMessage(nil), t.api...)
}

// Totals returns the tokens and cost of this task's requests.
func (t *Task) Totals() Totals {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.totals
}

// Policy returns the task's permission policy (mode, rules, allow-all set).
func (t *Task) Policy() *Policy { return t.perm }

// Cancel stops the running turn: the model stream is aborted, a running
// tool is interrupted, the partial message is finished, pending asks are
// denied, and the API history is left valid. It returns when the turn has
// ended. Without a running turn it does nothing.
func (t *Task) Cancel() {
	t.mu.Lock()
	cancel, done := t.cancel, t.turnDone
	t.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// cutShort reports whether the running turn is being stopped by Close or
// by a newer Start (not by Cancel): its streaming message stays partial.
func (t *Task) cutShort() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed || t.running != nil && t.running.superseded.Load()
}

// isClosed reports whether Close was called.
func (t *Task) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// Close cancels the running turn and waits for it; a message that was
// streaming stays marked partial. A second call returns net.ErrClosed.
func (t *Task) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return net.ErrClosed
	}
	t.closed = true
	t.mu.Unlock()
	t.Cancel()
	t.wg.Wait()
	t.cfg.Toolbox.runs.close()
	return nil
}

// Rewind cuts both histories back to the message stamped ts (see package
// rewind) and stores the result in one transaction. It cancels a running
// turn first; a turn that a Start begins meanwhile makes it fail with
// ErrBusy. With IncludeTargetMessage the target is kept. No lock is held
// while the store writes, and listeners hear of it (EventRewound) after.
func (t *Task) Rewind(ctx context.Context, ts int64, opts rewind.Options) (rewind.Result, error) {
	t.Cancel()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return rewind.Result{}, ErrClosed
	}
	if t.turnDone != nil || t.rewinding {
		t.mu.Unlock()
		return rewind.Result{}, ErrBusy
	}
	t.rewinding = true
	ui, api := t.ui, t.api
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.rewinding = false
		t.mu.Unlock()
	}()
	res, err := rewind.RewindToTimestamp(ui, api, ts, opts)
	if err != nil || !res.Changed {
		return res, err
	}
	if err := t.cfg.Store.ApplyRewind(ctx, t.cfg.SessionID, ui, api, res); err != nil {
		return res, fmt.Errorf("agent: store rewind: %w", err)
	}
	t.mu.Lock()
	t.ui, t.api = res.UI, res.API
	if t.pending != nil && !containsTS(t.ui, t.pending.msg.TS) {
		t.pending.end()
		t.pending = nil
		t.notifyLocked()
	}
	t.mu.Unlock()
	t.lis.Emit(Event{Kind: EventRewound})
	return res, nil
}

func containsTS(ui []messages.UIMessage, ts int64) bool {
	for i := range ui {
		if ui[i].TS == ts {
			return true
		}
	}
	return false
}

// Record adds a say message made outside a turn (the bridge records a
// %%code cell as cell_executed) and stores it. It fails with ErrBusy while
// a turn or a rewind runs.
func (t *Task) Record(ctx context.Context, kind messages.Say, text string) (messages.UIMessage, error) {
	t.mu.Lock()
	busy := t.turnDone != nil || t.rewinding
	t.mu.Unlock()
	if busy {
		return messages.UIMessage{}, ErrBusy
	}
	return t.say(ctx, kind, text, nil)
}

// Stamp returns a fresh stamp of the session's clock: ordered with the
// ts of its messages (later than every one so far, earlier than the next).
func (t *Task) Stamp() int64 { return t.clock.Next() }

// SetProvider switches the model for the next request (nil: none).
func (t *Task) SetProvider(p provider.Provider) {
	t.mu.Lock()
	t.cfg.Provider = p
	t.mu.Unlock()
}

// ResumeText is the text of the resume_task ask of an interrupted turn.
const ResumeText = "The last turn was interrupted before it ended. Send an empty prompt (or \"resume\") to go on where it stopped, or a new prompt."

// Interrupted reports whether the history ends in a turn that was cut
// short — a message still streaming when the process stopped, or a prompt
// (or tool results) the model never answered — with no ask pending.
func (t *Task) Interrupted() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending != nil || t.turnDone != nil || len(t.ui) == 0 {
		return false
	}
	// A turn cut short keeps what it streamed marked partial (the
	// answer, and the bookkeeping after it).
	for i := len(t.ui) - 1; i >= 0 && t.ui[i].Say != messages.SayUserFeedback; i-- {
		if t.ui[i].Partial {
			return true
		}
	}
	eff := messages.Effective(t.api)
	return len(eff) > 0 && eff[len(eff)-1].Role == messages.RoleUser
}

// OfferResume asks, when the history ends in an interrupted turn, whether
// to go on with it: a resume_task ask, idle; an empty prompt (or
// "resume") resumes the turn, and any other prompt goes on from there. It
// reports whether it asked.
func (t *Task) OfferResume(ctx context.Context) (bool, error) {
	if !t.Interrupted() {
		return false, nil
	}
	t.mu.Lock()
	// A message left streaming is what the turn got to: no longer partial.
	var cut []messages.UIMessage
	for i := range t.ui {
		if t.ui[i].Partial {
			cut = append(cut, t.ui[i])
		}
	}
	t.mu.Unlock()
	for _, m := range cut {
		m.Partial = false
		if err := t.update(ctx, m); err != nil {
			return false, err
		}
	}
	if _, err := t.askIdle(ctx, messages.AskResumeTask, ResumeText); err != nil {
		return false, err
	}
	return true, nil
}

// SetEffort sets how hard the model thinks from the next request on
// ("" is the provider's default).
func (t *Task) SetEffort(e provider.Effort) {
	t.mu.Lock()
	t.effort = e
	t.mu.Unlock()
}

// ToolFilter limits the tools a task offers the model and lets it call: an
// agent mode's tool list. Name names the mode in a refusal.
type ToolFilter struct {
	Name  string
	Allow func(tool string, class ToolClass) bool
}

// SetToolFilter sets the tool filter from the next request on (nil:
// every tool).
func (t *Task) SetToolFilter(f *ToolFilter) {
	t.mu.Lock()
	t.filter = f
	t.mu.Unlock()
}

// allowed reports whether the task's filter lets tool be used, and the
// filter's name.
func (t *Task) allowed(tool *Tool) (bool, string) {
	t.mu.Lock()
	f := t.filter
	t.mu.Unlock()
	if f == nil || f.Allow == nil {
		return true, ""
	}
	return f.Allow(tool.Name(), tool.Class()), f.Name
}

// Effort returns the reasoning effort of the next request.
func (t *Task) Effort() provider.Effort {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.effort
}

// Provider returns the current model, or nil.
func (t *Task) Provider() provider.Provider {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cfg.Provider
}

// countTool records a tool call and whether it failed.
func (t *Task) countTool(name string, failed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tools == nil {
		t.tools = map[string]ToolCount{}
	}
	c := t.tools[name]
	c.Attempts++
	if failed {
		c.Failures++
	}
	t.tools[name] = c
}

// ToolUsage returns calls and failures per tool in this task.
func (t *Task) ToolUsage() map[string]ToolCount {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]ToolCount, len(t.tools))
	for k, v := range t.tools {
		out[k] = v
	}
	return out
}
