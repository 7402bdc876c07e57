package session

import (
	"context"

	"github.com/agentkernel/agentkernel/store"
)

// A host's parts (Models, Modes, World, CodeLog, Tools) are given what
// they need when the host is made: the settings they read, the store
// (opened on first use), the listeners they tell of a change, a logger,
// and, through sessions, the one thing they ask of the host. None holds
// the Host.

// sessions is what a part asks of the host: its current session, and the
// event log of the commands given to it.
type sessions interface {
	// session returns the current session, creating one on first use.
	session(ctx context.Context) (*current, error)
	// active returns the current session (nil before the first).
	active() *current
	// logCommand records a command given to session c (the event log).
	logCommand(ctx context.Context, c *current, name, arg string)
}

// storeOf opens the store on first use (Host.Store).
type storeOf func(ctx context.Context) (*store.Store, error)
