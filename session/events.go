package session

import (
	"sync"

	"github.com/agentkernel/agentkernel/agent"
)

// Host events besides the agent's own (agent.Event kinds), which a host
// passes on from whichever session is current.
const (
	// EventSessionChanged: another session became current (new, resume).
	EventSessionChanged agent.EventKind = "sessionChanged"
	// EventSettingsChanged: the model or the permission mode changed.
	EventSettingsChanged agent.EventKind = "settingsChanged"
)

// Subscribe registers f for the events of the current session, whichever
// it is, and the host's own (EventSessionChanged, EventSettingsChanged).
// f is called synchronously on the goroutine that caused the event, with
// no lock of the host or the task held: it must be quick, and may call
// back into the host's getters. The returned func removes it.
func (h *Host) Subscribe(f func(agent.Event)) (remove func()) { return h.lis.add(f) }

// listeners is a set of event callbacks, called in registration order.
type listeners struct {
	mu  sync.Mutex
	ids []int
	fns map[int]func(agent.Event)
	n   int
}

func (l *listeners) add(f func(agent.Event)) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fns == nil {
		l.fns = map[int]func(agent.Event){}
	}
	id := l.n
	l.n++
	l.fns[id] = f
	l.ids = append(l.ids, id)
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.fns, id)
		for i, x := range l.ids {
			if x == id {
				l.ids = append(l.ids[:i:i], l.ids[i+1:]...)
				break
			}
		}
	}
}

func (l *listeners) emit(e agent.Event) {
	l.mu.Lock()
	fns := make([]func(agent.Event), 0, len(l.ids))
	for _, id := range l.ids {
		fns = append(fns, l.fns[id])
	}
	l.mu.Unlock()
	for _, f := range fns {
		f(e)
	}
}
