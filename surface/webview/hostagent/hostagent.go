// Package hostagent adapts a session host to the web panel's protocol
// (webview.Agent, its parts): the same typed operations the notebook's magics use, and
// the host's events, which follow whichever session is current. The
// standalone panel (webview's WebSocket server) serves it; another
// transport of the same protocol (a Jupyter comm) can serve it too.
package hostagent

import (
	"context"
	"fmt"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/mcp"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/surface/webview"
)

// New returns the panel's Agent over h: each of its parts the same typed
// operations the magics use, and the host's events, which follow
// whichever session is current.
func New(h *session.Host) webview.Agent {
	return webview.Agent{Mirror: mirror{h}, Driver: driver{h}, Rewinder: rewinder{h}, Modes: modes{h},
		Sessions: sessions{h}, Settings: settings{h}, Mentions: mentions{h}}
}

// The parts of the panel's Agent, each over the session host.
type (
	mirror   struct{ h *session.Host } // the state and its events
	driver   struct{ h *session.Host } // prompts, answers, cancel
	rewinder struct{ h *session.Host } // rewind, fork, edit
	modes    struct{ h *session.Host } // the permission and agent modes, the model
	sessions struct{ h *session.Host } // the stored sessions
	settings struct{ h *session.Host } // the settings view (settings.go)
	mentions struct{ h *session.Host } // the @-mentions' completions (mentions.go)
)

// panelCtx marks a panel's command as the panel's, for the event log.
func panelCtx(ctx context.Context) context.Context {
	return session.WithSource(ctx, eventlog.SourcePanel)
}

// Subscribe implements webview.Mirror. What it reads to report a change
// it reads with ctx; the title a prompt gives the session is read and
// reported by a follower (follow.go), off the turn's goroutine. remove
// waits for the follower to end.
func (p mirror) Subscribe(ctx context.Context, f func(webview.Event)) func() {
	h := p.h
	ctx, cancel := context.WithCancel(ctx)
	fl := follow(ctx, h, f)
	remove := h.Subscribe(func(e agent.Event) {
		switch e.Kind {
		case agent.EventMessageCreated:
			f(webview.Event{Kind: webview.EventMessageCreated, Message: e.Message})
			if m := e.Message; m != nil && m.Type == messages.TypeSay && !m.Partial &&
				(m.Say == messages.SayText || m.Say == messages.SayUserFeedback) {
				fl.ask() // the first prompt names the session: the header follows
			}
		case agent.EventMessageUpdated:
			f(webview.Event{Kind: webview.EventMessageUpdated, Message: e.Message})
		case agent.EventRewound:
			f(webview.Event{Kind: webview.EventRewound})
		case session.EventSessionChanged:
			fl.supersede(webview.Event{Kind: webview.EventReset})
		case session.EventSettingsChanged:
			// The mode, the model or the title (a rename) changed.
			title, _ := h.Conversation().Title(ctx)
			fl.supersede(settingsEvent(h, title))
		case session.EventMCPChanged:
			f(webview.Event{Kind: webview.EventMCP, MCP: mcpServers(h.Tools().MCPStatus(ctx, false))})
		case agent.EventTaskStarted, agent.EventTaskActive:
			f(webview.Event{Kind: webview.EventStatus, Status: "busy"})
		case agent.EventTaskInteractive, agent.EventTaskResumable:
			f(webview.Event{Kind: webview.EventStatus, Status: "waiting"})
		case agent.EventTaskIdle, agent.EventTaskAborted:
			f(webview.Event{Kind: webview.EventStatus, Status: "idle"})
		case agent.EventTokenUsage:
			t := totals(e.Usage)
			if c := e.Context; c != nil {
				t.ContextUsed, t.ContextWindow = c.Used, c.Window
			}
			f(webview.Event{Kind: webview.EventTotals, Totals: t})
		}
	})
	return func() {
		remove()
		cancel()
		<-fl.done
	}
}

// mcpServers is the MCP servers' status as the panel shows it.
func mcpServers(list []mcp.ServerStatus) []webview.MCPServer {
	out := make([]webview.MCPServer, 0, len(list))
	for _, s := range list {
		w := webview.MCPServer{Name: s.Name, Scope: s.Scope, Transport: s.Transport, Where: s.Where, State: string(s.State), Error: s.Error}
		for _, t := range s.Tools {
			w.Tools = append(w.Tools, t.Tool)
		}
		out = append(out, w)
	}
	return out
}

func totals(u agent.Totals) webview.Totals {
	return webview.Totals{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, Cost: u.Cost, Requests: u.Requests}
}

// Snapshot implements webview.Mirror.
func (p mirror) Snapshot(ctx context.Context) (webview.State, error) {
	s, err := p.h.Conversation().Snapshot(ctx)
	if err != nil {
		return webview.State{}, err
	}
	st := webview.State{SessionID: s.ID, Title: s.Title, Messages: s.Messages, PermissionMode: string(s.Mode), Model: s.Model,
		Totals: totals(s.Totals), PendingAsk: s.PendingAsk, MCPServers: mcpServers(p.h.Tools().MCPStatus(ctx, false))}
	for _, m := range agent.Modes {
		st.PermissionModes = append(st.PermissionModes, string(m))
	}
	st.AgentMode = p.h.Modes().Agent().Name
	ms, _ := p.h.Modes().AgentModes()
	for _, m := range ms {
		st.AgentModes = append(st.AgentModes, m.Name)
	}
	switch s.State {
	case agent.StateWorking:
		st.KernelStatus = "busy"
	case agent.StateWaiting:
		st.KernelStatus = "waiting"
	default:
		st.KernelStatus = "idle"
	}
	return st, nil
}

// NewTask implements webview.Driver.
func (p driver) NewTask(ctx context.Context, text string, images []string) error {
	ims, err := attachedImages(images)
	if err != nil {
		return err
	}
	_, err = p.h.StartPrompt(panelCtx(ctx), agent.Prompt{Text: text, Images: ims})
	return err
}

// attachedImages reads the panel's attached images; the first bad one is
// the error, naming it.
func attachedImages(urls []string) ([]agent.Image, error) {
	var ims []agent.Image
	for i, u := range urls {
		im, err := agent.ImageFromDataURL(u)
		if err != nil {
			return nil, fmt.Errorf("image %d: %w", i+1, err)
		}
		ims = append(ims, im)
	}
	return ims, nil
}

// Respond implements webview.Driver.
func (p driver) Respond(ctx context.Context, ts int64, r webview.Response) error {
	kind := map[webview.ResponseKind]agent.ResponseKind{
		webview.ResponseYes: agent.ResponseYes, webview.ResponseNo: agent.ResponseNo,
		webview.ResponseAllowAll: agent.ResponseAllowAll, webview.ResponseMessage: agent.ResponseMessage,
	}[r.Kind]
	if kind == "" {
		return fmt.Errorf("unknown response %q", r.Kind)
	}
	ims, err := attachedImages(r.Images)
	if err != nil {
		return err
	}
	return p.h.Respond(panelCtx(ctx), ts, agent.Response{Kind: kind, Text: r.Text, By: "webview", Images: ims})
}

// Cancel implements webview.Driver.
func (p driver) Cancel(ctx context.Context) error {
	p.h.Cancel(panelCtx(ctx))
	return nil
}

// Rewind implements webview.Rewinder: the panel's user chose what goes back
// (the dialog of "rewind to here"), so a kernel replay needs no second ask.
func (p rewinder) Rewind(ctx context.Context, ts int64, choice webview.RewindChoice) (webview.RewindReport, error) {
	rw, err := p.h.World().Rewind(panelCtx(ctx), ts, rewindOptions(choice))
	return report(rw, ""), err
}

// Fork implements webview.Rewinder.
func (p rewinder) Fork(ctx context.Context, ts int64, choice webview.RewindChoice) (webview.RewindReport, error) {
	info, rw, err := p.h.World().Fork(panelCtx(ctx), ts, rewindOptions(choice))
	return report(rw, info.ID), err
}

func rewindOptions(c webview.RewindChoice) session.RewindOptions {
	return session.RewindOptions{ConversationOnly: c.ConversationOnly, NoFiles: c.NoFiles, NoKernel: c.NoKernel, Force: c.Force}
}

func report(rw session.Rewound, forkID string) webview.RewindReport {
	r := webview.RewindReport{Summary: rw.Summary(), Kernel: rw.Kernel, KernelNote: rw.KernelNote, ForkID: forkID}
	if f := rw.Files; f != nil {
		r.Restored, r.Removed, r.Conflicts, r.Unrestorable = f.Restored, f.Removed, f.Conflicts, f.Unrestorable
		r.Protected = f.Protected
	}
	return r
}

// Edit implements webview.Rewinder: the new turn runs without a cell; its
// asks wait for the panel.
func (p rewinder) Edit(ctx context.Context, ts int64, text string, choice webview.RewindChoice) (webview.RewindReport, error) {
	rw, err := p.h.StartEdit(panelCtx(ctx), ts, text, rewindOptions(choice))
	return report(rw, ""), err
}

// SetPermissionMode implements webview.Modes.
func (p modes) SetPermissionMode(ctx context.Context, mode string) error {
	m, err := agent.ParsePermissionMode(mode)
	if err != nil {
		return err
	}
	return p.h.Modes().SetPermission(panelCtx(ctx), m)
}

// SetAgentMode implements webview.Modes.
func (p modes) SetAgentMode(ctx context.Context, mode string) error {
	_, err := p.h.Modes().SetAgent(panelCtx(ctx), mode)
	return err
}

// SetModel implements webview.Modes.
func (p modes) SetModel(ctx context.Context, model string) error {
	return p.h.Models().Set(panelCtx(ctx), model)
}

// ListSessions implements webview.Sessions.
func (p sessions) ListSessions(ctx context.Context, search string, limit int) ([]webview.SessionInfo, error) {
	list, err := p.h.Sessions(ctx, search, limit, false)
	if err != nil {
		return nil, err
	}
	cur, _ := p.h.Current(ctx)
	out := make([]webview.SessionInfo, 0, len(list))
	for _, s := range list {
		out = append(out, webview.SessionInfo{ID: s.ID, Title: s.Title, UpdatedAt: s.UpdatedAt.UnixMilli(),
			MessageCount: s.MessageCount, Model: s.Model, Preview: s.LastMessage, Cost: s.Usage.Cost, Current: s.ID == cur.ID})
	}
	return out, nil
}

// SearchMessages implements webview.Sessions.
func (p sessions) SearchMessages(ctx context.Context, query string, limit int) ([]webview.SearchHit, error) {
	hits, err := p.h.Search(ctx, query, limit, false)
	if err != nil {
		return nil, err
	}
	out := make([]webview.SearchHit, 0, len(hits))
	for _, h := range hits {
		out = append(out, webview.SearchHit{SessionID: h.SessionID, TS: h.TS, Kind: h.Type + ":" + h.Kind, Snippet: h.Snippet})
	}
	return out, nil
}

// LoadSession implements webview.Sessions, as %agent resume does.
func (p sessions) LoadSession(ctx context.Context, id string) error {
	_, err := p.h.Resume(panelCtx(ctx), id)
	return err
}

var (
	_ webview.Mirror   = mirror{}
	_ webview.Driver   = driver{}
	_ webview.Rewinder = rewinder{}
	_ webview.Modes    = modes{}
	_ webview.Sessions = sessions{}
)
