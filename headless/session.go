package headless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/agentstore"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/store"
)

// ErrNoSession is wrapped by FindSession and Latest when no session
// matches. Test with errors.Is.
var ErrNoSession = errors.New("no such session")

// Options configure Open. Store is required; the zero value of every other
// field works.
type Options struct {
	// Store holds the sessions. The caller opens and closes it.
	Store *store.Store
	// Resume is the id (or unique id prefix) of a stored session to
	// continue; "" creates a new session.
	Resume string
	// Model is the model string recorded on a new session ("" = none).
	Model string
	// Provider is the model; nil makes every prompt fail with
	// agent.ErrNoProvider. The caller closes it.
	Provider provider.Provider
	// Workspace is the directory the file tools may touch. Default: the
	// current directory.
	Workspace string
	// Runner runs execute_code. Default: a Runner over Backing, started on
	// first use and closed by Session.Close.
	Runner agent.CodeRunner
	// Backing is the default Runner's kernelspec. Default "python3".
	Backing string
	// Mode is recorded on a new session (e.g. "ask"). Default "headless".
	Mode string
	// PermissionMode, Allow and Deny configure the agent's Policy.
	PermissionMode agent.Mode
	Allow, Deny    []string
	// Logger; default a null logger.
	Logger hclog.Logger
	// OnOutput is passed to the default Runner (see RunnerOptions).
	OnOutput func(msgType string, content json.RawMessage)
}

// Session is one agent session driven without a frontend. Ask may be
// called again for further prompts in the same session; calls must not
// overlap. Listen may be called at any time. Close ends it.
type Session struct {
	st      *store.Store
	task    *agent.Task
	tb      *agent.Toolbox
	runner  *Runner // owned, when Open made it
	id      string
	model   string
	resumed bool
	closed  sync.Once
}

// Open creates or resumes a session and its Task.
func Open(ctx context.Context, o Options) (*Session, error) {
	if o.Store == nil {
		return nil, errors.New("headless: Options.Store is required")
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Mode == "" {
		o.Mode = "headless"
	}
	if o.Workspace == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("headless: workspace: %w", err)
		}
		o.Workspace = wd
	}
	s := &Session{st: o.Store, model: o.Model}
	var hist store.Histories
	if o.Resume != "" {
		sess, err := FindSession(ctx, o.Store, o.Resume)
		if err != nil {
			return nil, err
		}
		if sess.Archived() {
			return nil, fmt.Errorf("headless: session %s is archived (agentkernel sessions restore %s)", sess.ID, sess.ID)
		}
		if hist, err = o.Store.Load(ctx, sess.ID); err != nil {
			return nil, fmt.Errorf("headless: load session %s: %w", sess.ID, err)
		}
		s.id, s.resumed = sess.ID, true
		if s.model == "" {
			s.model = sess.Model
		}
	} else {
		providerName, _, _ := strings.Cut(o.Model, ":")
		sess, err := o.Store.CreateSession(ctx, store.NewSession{Model: o.Model, Provider: providerName,
			Mode: o.Mode, Workspace: o.Workspace})
		if err != nil {
			return nil, fmt.Errorf("headless: create session: %w", err)
		}
		s.id = sess.ID
	}
	ws, err := agent.NewWorkspace(o.Workspace)
	if err != nil {
		return nil, fmt.Errorf("headless: workspace: %w", err)
	}
	runner := o.Runner
	if runner == nil {
		ro := RunnerOptions{Kernel: o.Backing, Dir: o.Workspace, Logger: o.Logger}
		ro.OnOutput = o.OnOutput
		s.runner = NewRunner(ro)
		runner = s.runner
	}
	if s.tb, err = agent.NewToolbox(agent.ToolboxOptions{Workspace: ws, Runner: runner}); err != nil {
		return nil, s.fail(err)
	}
	pol, err := agent.NewPolicy(s.tb, agent.PolicyOptions{Mode: o.PermissionMode, Allow: o.Allow, Deny: o.Deny})
	if err != nil {
		return nil, s.fail(err)
	}
	s.task, err = agent.New(agent.Config{
		SessionID: s.id, Store: agentstore.New(o.Store), Toolbox: s.tb, Provider: o.Provider, Policy: pol,
		Logger: o.Logger, UI: hist.UI, API: hist.API,
	})
	if err != nil {
		return nil, s.fail(err)
	}
	return s, nil
}

func (s *Session) fail(err error) error {
	if s.runner != nil {
		_ = s.runner.Close()
	}
	return fmt.Errorf("headless: %w", err)
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Model returns the session's model string.
func (s *Session) Model() string { return s.model }

// Resumed reports whether the session was loaded from the store.
func (s *Session) Resumed() bool { return s.resumed }

// Tools returns the names of the tools the model is offered.
func (s *Session) Tools() []string {
	var names []string
	for _, t := range s.tb.Tools() {
		names = append(names, t.Name)
	}
	return names
}

// Task returns the session's task (for its histories and policy).
func (s *Session) Task() *agent.Task { return s.task }

// Listen registers f for the task's events (see agent.Task.Listen); the
// returned func removes it.
func (s *Session) Listen(f func(agent.Event)) (remove func()) { return s.task.Listen(f) }

// Result is the outcome of one Ask.
type Result struct {
	SessionID string
	// Text is the final answer: attempt_completion's result, else the
	// text of the model's last message.
	Text string
	// Completed is true when the model called attempt_completion.
	Completed bool
	// Requests is the number of model requests this Ask made.
	Requests int
	Usage    agent.Totals // tokens and cost of this Ask
	Duration time.Duration
	// Asks are the asks answered during this Ask, with their answers.
	Asks []AnsweredAsk
	// Pending is set when the turn ended on an ask nobody could answer.
	Pending *messages.UIMessage
	// Err is why the turn failed (also returned by Ask): agent.ErrNoProvider,
	// an error wrapping agent.ErrAPIFailed, context.Canceled, …
	Err error
}

// AnsweredAsk is one ask and the answer it got.
type AnsweredAsk struct {
	Ask      messages.UIMessage
	Response agent.Response
}

// Denied reports whether the answer refused the ask.
func (a AnsweredAsk) Denied() bool { return a.Response.Kind == agent.ResponseNo }

// Ask submits prompt and follows the turn to its end, answering asks with
// approve (nil: PolicyApprover(ApproveNone)). onAsk, when set, is called
// with each ask and its answer, before the answer is given. The returned
// Result is filled in also on error. Cancelling ctx cancels the turn.
func (s *Session) Ask(ctx context.Context, prompt string, approve Approver, onAsk func(AnsweredAsk)) (Result, error) {
	if approve == nil {
		approve = PolicyApprover(ApproveNone)
	}
	start := time.Now()
	before := s.task.Totals()
	var mu sync.Mutex
	var completion *string
	remove := s.task.Listen(func(e agent.Event) {
		if e.Kind == agent.EventTaskCompleted {
			t := e.Text
			mu.Lock()
			completion = &t
			mu.Unlock()
		}
	})
	defer remove()
	nAPI := len(s.task.API())
	res := Result{SessionID: s.id}
	err := s.task.Submit(prompt)
	if err == nil {
		err = s.drive(ctx, approve, onAsk, &res)
	}
	if ctx.Err() != nil {
		s.task.Cancel()
		err = ctx.Err()
	}
	after := s.task.Totals()
	res.Usage = agent.Totals{
		InputTokens: after.InputTokens - before.InputTokens, OutputTokens: after.OutputTokens - before.OutputTokens,
		CacheReadTokens:  after.CacheReadTokens - before.CacheReadTokens,
		CacheWriteTokens: after.CacheWriteTokens - before.CacheWriteTokens,
		Cost:             after.Cost - before.Cost, Requests: after.Requests - before.Requests,
	}
	res.Requests = res.Usage.Requests
	res.Duration = time.Since(start)
	mu.Lock()
	if completion != nil {
		res.Completed, res.Text = true, *completion
	}
	mu.Unlock()
	if !res.Completed {
		res.Text = lastAssistantText(s.task.API(), nAPI)
	}
	res.Err = err
	return res, err
}

// drive follows the turn, answering asks, until it ends.
func (s *Session) drive(ctx context.Context, approve Approver, onAsk func(AnsweredAsk), res *Result) error {
	var last int64 = -1 // the ask answered last
	for {
		st, err := s.task.Wait(ctx)
		if st != agent.StateWaiting {
			return err
		}
		ask, ok := s.task.PendingAsk()
		if !ok || ask.TS == last {
			// The answer is on its way to the turn, which still shows
			// the ask as pending: look again shortly.
			t := time.NewTimer(5 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			continue
		}
		last = ask.TS
		resp, answered := approve(ctx, ask)
		if !answered {
			m := ask
			res.Pending = &m
			return nil
		}
		a := AnsweredAsk{Ask: ask, Response: resp}
		res.Asks = append(res.Asks, a)
		if onAsk != nil {
			onAsk(a)
		}
		if err := s.task.Respond(ask.TS, resp); err != nil && !errors.Is(err, agent.ErrNoAsk) {
			return err
		}
	}
}

// lastAssistantText returns the text of the last assistant message after
// index from.
func lastAssistantText(api []messages.APIMessage, from int) string {
	for i := len(api) - 1; i >= from && i >= 0; i-- {
		if api[i].Role != messages.RoleAssistant {
			continue
		}
		var parts []string
		for _, b := range api[i].Content {
			if b.Type == messages.BlockText && strings.TrimSpace(b.Text) != "" {
				parts = append(parts, b.Text)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n")
		}
	}
	return ""
}

// Close ends the session: it cancels a running turn, waits for it, and
// shuts down the Runner that Open made. It is idempotent.
func (s *Session) Close() error {
	var err error
	s.closed.Do(func() {
		errs := []error{s.task.Close()}
		if s.runner != nil {
			errs = append(errs, s.runner.Close())
		}
		if ferr := s.st.Flush(context.Background()); ferr != nil {
			errs = append(errs, ferr)
		}
		err = errors.Join(errs...)
	})
	return err
}

// FindSession finds a session, live or archived, by id or unique id
// prefix. The error wraps ErrNoSession when none matches.
func FindSession(ctx context.Context, st *store.Store, ref string) (store.Session, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return store.Session{}, fmt.Errorf("headless: %w: empty session id", ErrNoSession)
	}
	if s, err := st.GetSession(ctx, ref); err == nil {
		return s, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return store.Session{}, err
	}
	list, err := st.ListSessions(ctx, store.ListOptions{Limit: -1, Archived: store.AllSessions})
	if err != nil {
		return store.Session{}, err
	}
	var found []store.Session
	for _, s := range list {
		if strings.HasPrefix(s.ID, ref) {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return store.Session{}, fmt.Errorf("%w %q", ErrNoSession, ref)
	case 1:
		return st.GetSession(ctx, found[0].ID)
	}
	return store.Session{}, fmt.Errorf("session id %q is ambiguous: it starts %d sessions; give more of it", ref, len(found))
}

// Latest returns the most recently updated live session. The error wraps
// ErrNoSession when there is none.
func Latest(ctx context.Context, st *store.Store) (store.Session, error) {
	list, err := st.ListSessions(ctx, store.ListOptions{Limit: 1})
	if err != nil {
		return store.Session{}, err
	}
	if len(list) == 0 {
		return store.Session{}, fmt.Errorf("%w: the store holds no session to continue", ErrNoSession)
	}
	return st.GetSession(ctx, list[0].ID)
}
