package bridge

import (
	"context"
	"errors"
	"fmt"
	"html"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/rewind"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/webview"
)

// The web panel (%agent webview): a webview.Server started on first use,
// mirroring the bridge's current agent session. panelAgent adapts the
// session to webview.Agent and follows session switches (%agent new,
// resume, a session loaded from the panel).
// Its state is the Bridge's panel field, under pmu.

type panel struct {
	srv   *webview.Server
	agent *panelAgent
}

// panelFor returns the bridge's panel, starting it on first use.
func (b *Bridge) panelFor(ctx context.Context) (*panel, error) {
	if p := b.currentPanel(); p != nil {
		return p, nil
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, errors.New("bridge: closed")
	}
	if _, err := b.agentFor(ctx); err != nil {
		return nil, err
	}
	opts, err := webview.OptionsFromEnv(webview.Options{Logger: b.log, RuntimeDir: client.RuntimeDir(),
		Info: map[string]string{"kernel_pid": strconv.Itoa(os.Getpid()), "workspace": b.workspaceDir()}}, nil)
	if err != nil {
		return nil, err
	}
	pa := newPanelAgent(b)
	srv, err := webview.Start(pa, opts)
	if err != nil {
		pa.close()
		return nil, err
	}
	p := &panel{srv: srv, agent: pa}
	b.pmu.Lock()
	if prev := b.panel; prev != nil {
		// Another cell started one at the same time: keep that one.
		b.pmu.Unlock()
		srv.Close()
		pa.close()
		return prev, nil
	}
	b.panel = p
	b.pmu.Unlock()
	b.log.Info("web panel", "url", srv.URL())
	return p, nil
}

func (b *Bridge) currentPanel() *panel {
	b.pmu.Lock()
	defer b.pmu.Unlock()
	return b.panel
}

// closePanel stops the bridge's panel, if any. Bridge.Close calls it.
func (b *Bridge) closePanel() {
	b.pmu.Lock()
	p := b.panel
	b.panel = nil
	b.pmu.Unlock()
	if p == nil {
		return
	}
	if err := p.srv.Close(); err != nil {
		b.log.Debug("close web panel", "error", err)
	}
	p.agent.close()
}

// panelSessionChanged tells the panel that the session changed. It never
// blocks and takes only pmu, so newSessionLocked may call it (the panel
// also notices a switch on its own within a second).
func (b *Bridge) panelSessionChanged() {
	if p := b.currentPanel(); p != nil {
		p.agent.poke()
	}
}

// panelSettingsChanged tells an open panel the mode or model changed (by
// an %agent magic in the notebook).
func (b *Bridge) panelSettingsChanged(s *session) {
	if p := b.currentPanel(); p != nil {
		p.agent.settings(s)
	}
}

// webviewMagic answers %agent webview [stop] as text.
func (b *Bridge) webviewMagic(ctx context.Context, args []string) (string, error) {
	if len(args) == 1 && args[0] == "stop" {
		b.closePanel()
		return "Web panel stopped.", nil
	}
	if len(args) != 0 {
		return "", fmt.Errorf("usage: %%agent webview [stop]")
	}
	p, err := b.panelFor(ctx)
	if err != nil {
		return "", err
	}
	return "Web panel: " + p.srv.URL(), nil
}

// magicWebview answers %agent webview in a cell: the URL as a link and
// the panel in an IFrame.
func (b *Bridge) magicWebview(ctx context.Context, r *kernel.Request, args []string, count int) {
	if len(args) != 0 {
		out, err := b.webviewMagic(ctx, args)
		if err != nil {
			b.replyError(r, count, "AgentMagicError", err.Error())
			return
		}
		_ = r.Publish("stream", map[string]any{"name": "stdout", "text": out + "\n"})
		b.replyOK(r, count, "")
		return
	}
	p, err := b.panelFor(ctx)
	if err != nil {
		b.replyError(r, count, "AgentMagicError", err.Error())
		return
	}
	u := html.EscapeString(p.srv.URL())
	htm := `<div><a href="` + u + `" target="_blank" rel="noopener">Open the agent panel in a new tab</a></div>` +
		`<iframe src="` + u + `" title="agentkernel panel" style="width:100%;height:640px;border:1px solid #ccc;border-radius:4px"></iframe>`
	if err := r.Publish("display_data", map[string]any{
		"data":     map[string]any{"text/html": htm, "text/plain": "Web panel: " + p.srv.URL()},
		"metadata": map[string]any{},
	}); err != nil {
		b.log.Debug("publish web panel display", "error", err)
	}
	b.replyOK(r, count, "")
}

// panelAgent implements webview.Agent over the bridge's current session.
type panelAgent struct {
	b      *Bridge
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{}

	mu     sync.Mutex
	sess   *session
	unsub  func()
	subs   map[int]func(webview.Event)
	nextID int
}

func newPanelAgent(b *Bridge) *panelAgent {
	ctx, cancel := context.WithCancel(context.Background())
	p := &panelAgent{b: b, ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1), subs: map[int]func(webview.Event){}}
	p.follow()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.watch()
	}()
	return p
}

func (p *panelAgent) close() {
	p.cancel()
	p.wg.Wait()
	p.mu.Lock()
	if p.unsub != nil {
		p.unsub()
		p.unsub = nil
	}
	p.sess = nil
	p.mu.Unlock()
}

func (p *panelAgent) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// watch re-follows the bridge's session when it changes.
func (p *panelAgent) watch() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		case <-p.kick:
		}
		p.follow()
	}
}

// follow subscribes to the bridge's current session's task if it changed,
// and tells the subscribers (a reset: full state).
func (p *panelAgent) follow() {
	p.b.amu.Lock()
	cur := p.b.sess
	p.b.amu.Unlock()
	p.mu.Lock()
	if cur == p.sess {
		p.mu.Unlock()
		return
	}
	if p.unsub != nil {
		p.unsub()
		p.unsub = nil
	}
	p.sess = cur
	if cur != nil {
		p.unsub = cur.task.Listen(p.onTaskEvent)
	}
	p.mu.Unlock()
	p.emit(webview.Event{Kind: webview.EventReset})
}

func (p *panelAgent) emit(ev webview.Event) {
	p.mu.Lock()
	fns := make([]func(webview.Event), 0, len(p.subs))
	for _, f := range p.subs {
		fns = append(fns, f)
	}
	p.mu.Unlock()
	for _, f := range fns {
		f(ev)
	}
}

// onTaskEvent runs on the task's goroutine, sometimes with the task's lock
// held (a rewind): it only translates and forwards.
func (p *panelAgent) onTaskEvent(e agent.Event) {
	switch e.Kind {
	case agent.EventMessageCreated:
		p.emit(webview.Event{Kind: webview.EventMessageCreated, Message: e.Message})
	case agent.EventMessageUpdated:
		p.emit(webview.Event{Kind: webview.EventMessageUpdated, Message: e.Message})
	case agent.EventRewound:
		p.emit(webview.Event{Kind: webview.EventRewound})
	case agent.EventTaskStarted, agent.EventTaskActive:
		p.emit(webview.Event{Kind: webview.EventStatus, Status: "busy"})
	case agent.EventTaskInteractive, agent.EventTaskResumable:
		p.emit(webview.Event{Kind: webview.EventStatus, Status: "waiting"})
	case agent.EventTaskIdle, agent.EventTaskAborted:
		p.emit(webview.Event{Kind: webview.EventStatus, Status: "idle"})
	case agent.EventTokenUsage:
		p.emit(webview.Event{Kind: webview.EventTotals, Totals: totals(e.Usage)})
	}
}

func totals(u agent.Totals) webview.Totals {
	return webview.Totals{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, Cost: u.Cost, Requests: u.Requests}
}

// session returns the session the panel follows, creating one if the
// bridge has none yet.
func (p *panelAgent) session(ctx context.Context) (*session, error) {
	p.mu.Lock()
	s := p.sess
	p.mu.Unlock()
	if s != nil {
		return s, nil
	}
	s, err := p.b.agentFor(ctx)
	if err != nil {
		return nil, err
	}
	p.follow()
	return s, nil
}

// Subscribe implements webview.Agent.
func (p *panelAgent) Subscribe(f func(webview.Event)) func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := p.nextID
	p.nextID++
	p.subs[id] = f
	return func() {
		p.mu.Lock()
		delete(p.subs, id)
		p.mu.Unlock()
	}
}

// Snapshot implements webview.Agent.
func (p *panelAgent) Snapshot(ctx context.Context) (webview.State, error) {
	s, err := p.session(ctx)
	if err != nil {
		return webview.State{}, err
	}
	t := s.task
	st := webview.State{
		SessionID: t.SessionID(),
		Messages:  t.UI(),
		Mode:      string(s.policy.Mode()),
		Model:     p.model(s),
		Totals:    totals(t.Totals()),
	}
	for _, m := range agent.Modes {
		st.Modes = append(st.Modes, string(m))
	}
	switch t.State() {
	case agent.StateWorking:
		st.KernelStatus = "busy"
	case agent.StateWaiting:
		st.KernelStatus = "waiting"
	default:
		st.KernelStatus = "idle"
	}
	if ask, ok := t.PendingAsk(); ok {
		st.PendingAsk = &ask
	}
	if info, err := s.store.GetSession(ctx, t.SessionID()); err == nil {
		st.Title = info.Title
	}
	return st, nil
}

func (p *panelAgent) model(s *session) string {
	p.b.amu.Lock()
	defer p.b.amu.Unlock()
	return s.model
}

func (p *panelAgent) settings(s *session) {
	p.emit(webview.Event{Kind: webview.EventSettings, Mode: string(s.policy.Mode()), Model: p.model(s)})
}

// NewTask implements webview.Agent.
func (p *panelAgent) NewTask(ctx context.Context, text string) error {
	s, err := p.session(ctx)
	if err != nil {
		return err
	}
	return s.task.Submit(text)
}

// Respond implements webview.Agent.
func (p *panelAgent) Respond(ctx context.Context, ts int64, r webview.Response) error {
	s, err := p.session(ctx)
	if err != nil {
		return err
	}
	kind := map[webview.ResponseKind]agent.ResponseKind{
		webview.ResponseYes: agent.ResponseYes, webview.ResponseNo: agent.ResponseNo,
		webview.ResponseAllowAll: agent.ResponseAllowAll, webview.ResponseMessage: agent.ResponseMessage,
	}[r.Kind]
	if kind == "" {
		return fmt.Errorf("unknown response %q", r.Kind)
	}
	return s.task.Respond(ts, agent.Response{Kind: kind, Text: r.Text, By: "webview"})
}

// Cancel implements webview.Agent.
func (p *panelAgent) Cancel(ctx context.Context) error {
	s, err := p.session(ctx)
	if err != nil {
		return err
	}
	s.task.Cancel()
	return nil
}

// Rewind implements webview.Agent.
func (p *panelAgent) Rewind(ctx context.Context, ts int64) error {
	s, err := p.session(ctx)
	if err != nil {
		return err
	}
	_, err = s.task.Rewind(ctx, ts, rewind.Options{})
	return err
}

// Edit implements webview.Agent.
func (p *panelAgent) Edit(ctx context.Context, ts int64, text string) error {
	s, err := p.session(ctx)
	if err != nil {
		return err
	}
	return s.task.EditAndResubmit(ctx, ts, text)
}

// SetMode implements webview.Agent, as %agent mode does.
func (p *panelAgent) SetMode(ctx context.Context, mode string) error {
	s, err := p.session(ctx)
	if err != nil {
		return err
	}
	if _, err := p.b.runMagic(ctx, "mode", []string{mode}); err != nil {
		return err
	}
	p.settings(s)
	return nil
}

// SetModel implements webview.Agent, as %agent model does.
func (p *panelAgent) SetModel(ctx context.Context, model string) error {
	s, err := p.session(ctx)
	if err != nil {
		return err
	}
	if _, err := p.b.runMagic(ctx, "model", []string{model}); err != nil {
		return err
	}
	p.settings(s)
	return nil
}

func (p *panelAgent) store() (*store.Store, error) {
	p.b.amu.Lock()
	defer p.b.amu.Unlock()
	return p.b.openStoreLocked()
}

// ListSessions implements webview.Agent.
func (p *panelAgent) ListSessions(ctx context.Context, search string, limit int) ([]webview.SessionInfo, error) {
	st, err := p.store()
	if err != nil {
		return nil, err
	}
	list, err := st.ListSessions(ctx, store.ListOptions{Search: search, Limit: limit})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	cur := ""
	if p.sess != nil {
		cur = p.sess.task.SessionID()
	}
	p.mu.Unlock()
	out := make([]webview.SessionInfo, 0, len(list))
	for _, s := range list {
		out = append(out, webview.SessionInfo{ID: s.ID, Title: s.Title, UpdatedAt: s.UpdatedAt.UnixMilli(),
			MessageCount: s.MessageCount, Model: s.Model, Preview: s.LastMessage, Cost: s.Usage.Cost, Current: s.ID == cur})
	}
	return out, nil
}

// SearchMessages implements webview.Agent.
func (p *panelAgent) SearchMessages(ctx context.Context, query string, limit int) ([]webview.SearchHit, error) {
	st, err := p.store()
	if err != nil {
		return nil, err
	}
	hits, err := st.Search(ctx, query, store.SearchOptions{Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]webview.SearchHit, 0, len(hits))
	for _, h := range hits {
		out = append(out, webview.SearchHit{SessionID: h.SessionID, TS: h.TS, Kind: h.Type + ":" + h.Kind, Snippet: h.Snippet})
	}
	return out, nil
}

// LoadSession implements webview.Agent, as %agent resume does.
func (p *panelAgent) LoadSession(ctx context.Context, id string) error {
	if _, err := p.b.runMagic(ctx, "resume", []string{id}); err != nil {
		return err
	}
	p.follow()
	return nil
}

// askContext returns a context that ends when the ask stamped ts is
// answered (by the web panel, another frontend, a policy) or rewound away,
// so the notebook's input_request for it can stop waiting: an ask answered
// anywhere closes everywhere. Call stop when done.
func askContext(parent context.Context, t *agent.Task, ts int64) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	remove := t.Listen(func(e agent.Event) {
		switch {
		case e.Kind == agent.EventMessageUpdated && e.Message != nil && e.Message.TS == ts && e.Message.IsAnswered:
			cancel()
		case e.Kind == agent.EventRewound, e.Kind == agent.EventTaskAborted:
			cancel()
		}
	})
	if ask, ok := t.PendingAsk(); !ok || ask.TS != ts {
		cancel() // answered before we listened
	}
	return ctx, func() { remove(); cancel() }
}

var _ webview.Agent = (*panelAgent)(nil)
