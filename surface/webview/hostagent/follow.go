package hostagent

import (
	"context"
	"sync"

	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/surface/webview"
)

// follower reports the title a prompt gave the session from a goroutine
// of its own, with the subscription's ctx: a turn's goroutine, which
// reports the prompt, never waits on the store. Asks coalesce: each report
// reads the settings as they are then. A report is dropped when a newer
// event that supersedes it (a session switch, a change of the settings)
// was published while it was read.
type follower struct {
	h    *session.Host
	f    func(webview.Event)
	want chan struct{} // cap 1: a report is due
	done chan struct{} // closed when run ends

	mu  sync.Mutex // orders a report against the events that supersede it
	gen uint64     // bumped by each of them
}

// follow starts the follower of h's title for f, until ctx ends.
func follow(ctx context.Context, h *session.Host, f func(webview.Event)) *follower {
	fl := &follower{h: h, f: f, want: make(chan struct{}, 1), done: make(chan struct{})}
	go fl.run(ctx)
	return fl
}

// ask makes a report due: a prompt may have named the session.
func (fl *follower) ask() {
	select {
	case fl.want <- struct{}{}:
	default:
	}
}

// supersede publishes ev, which holds newer settings than any report
// read before it (a session switch's reset, a change's settings).
func (fl *follower) supersede(ev webview.Event) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	fl.gen++
	fl.f(ev)
}

func (fl *follower) run(ctx context.Context) {
	defer close(fl.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-fl.want:
			fl.report(ctx)
		}
	}
}

// report reads the title and reports the settings once the session has
// one, unless an event superseded them meanwhile.
func (fl *follower) report(ctx context.Context) {
	fl.mu.Lock()
	gen := fl.gen
	fl.mu.Unlock()
	title, err := fl.h.Conversation().Title(ctx)
	if err != nil || title == "" {
		return
	}
	ev := settingsEvent(fl.h, title)
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.gen == gen && ctx.Err() == nil {
		fl.f(ev)
	}
}

// settingsEvent is the header's settings, with title ("" leaves the
// panel's as it is).
func settingsEvent(h *session.Host, title string) webview.Event {
	return webview.Event{Kind: webview.EventSettings, PermissionMode: string(h.Modes().Permission()), Model: h.Models().Model(),
		Title: title, AgentMode: h.Modes().Agent().Name}
}
