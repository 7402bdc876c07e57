package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
)

// Surface says what a command opens with Open.
type Surface struct {
	// Kind is recorded as a new session's mode: "prompt", "code", "ask".
	Kind string
	// Source is the surface the inputs come from in the event log (ask).
	// "": the configuration's (agentkernel run names its kernels' inputs
	// so), else the notebook.
	Source eventlog.Source
	// Workspace is the directory the agent works in; default the current
	// directory.
	Workspace string
	// Backing, when set, is the backing kernel: Open makes its runner
	// (Dir is the workspace, Reaper the gateway reaper, Logger Open's).
	// Nil: no runner, and the agent cannot run code.
	Backing *backing.Options
	// StoreNow opens the store in Open, whose error a failure is. Else the
	// host opens it at first use: a kernel must start and say what is
	// wrong in a cell, and a code-mode kernel that never talks to the
	// agent never opens it.
	StoreNow bool
	// NoHost opens no session host (sessions: HostFor makes one per stored
	// session's workspace).
	NoHost bool
	// Logger; default a null logger.
	Logger hclog.Logger
}

// App is what Open opened. Close closes it, in the reverse order.
type App struct {
	Config Config
	// Log is the event log; nil when the configuration turns it off.
	Log *eventlog.Log
	// Store is the session store: opened by Open (Surface.StoreNow), else
	// nil and the Host opens it at first use (Host.Store).
	Store *store.Store
	// Runner is the backing kernel's runner; nil without Surface.Backing.
	Runner backing.Runner
	// Host is the session host; nil with Surface.NoHost.
	Host *session.Host

	workspace string
	log       hclog.Logger
	mu        sync.Mutex
	closed    bool
}

// Open opens the event log, the store (now, or at first use), the backing
// runner and the session host that cfg and s describe. Nothing is started:
// the runner starts its kernel at first use or at Runner.Start. On error
// what was opened is closed again.
func Open(ctx context.Context, cfg Config, s Surface) (_ *App, err error) {
	if s.Logger == nil {
		s.Logger = hclog.NewNullLogger()
	}
	if s.Workspace == "" {
		if s.Workspace, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("the current directory: %w", err)
		}
	}
	a := &App{Config: cfg, workspace: s.Workspace, log: s.Logger}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	a.Log = cfg.File.eventLog(cfg.DataDir, s.Logger)
	if s.StoreNow {
		if a.Store, err = store.Open(ctx, store.Options{Dir: cfg.DataDir, URL: cfg.StoreURL, Logger: s.Logger.Named("store")}); err != nil {
			return nil, err
		}
	}
	if s.Backing != nil {
		o := *s.Backing
		o.Dir, o.Reaper, o.Logger = s.Workspace, Reaper(), s.Logger
		if a.Runner, err = backing.Open(o); err != nil {
			return nil, err
		}
	}
	if !s.NoHost {
		hc := cfg.host()
		hc.Store, hc.Runner, hc.Workspace, hc.Kind, hc.Logger, hc.EventLog = a.Store, a.Runner, s.Workspace, s.Kind, s.Logger, a.Log
		if s.Source != "" {
			hc.Source = s.Source
		}
		a.Host = session.New(hc)
	}
	return a, nil
}

// HostFor returns a session host over the app's store for a stored
// session of workspace and kind (sessions rewind and fork: the host of the
// workspace the session recorded). It has no runner. The caller closes it.
func (a *App) HostFor(workspace, kind string) *session.Host {
	hc := a.Config.host()
	hc.Store, hc.Workspace, hc.Kind, hc.Logger, hc.EventLog = a.Store, workspace, kind, a.log, a.Log
	return session.New(hc)
}

// Close closes the host (its turn stops, what streamed is stored), the
// runner (the backing kernel ends), the store and the event log. A second
// Close returns net.ErrClosed.
func (a *App) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return net.ErrClosed
	}
	a.closed = true
	a.mu.Unlock()
	var errs []error
	if a.Host != nil {
		errs = append(errs, ignoreClosed(a.Host.Close()))
	}
	if a.Runner != nil {
		errs = append(errs, ignoreClosed(a.Runner.Close()))
	}
	if a.Store != nil {
		errs = append(errs, ignoreClosed(a.Store.Close()))
	}
	a.Log.Close()
	return errors.Join(errs...)
}

// ignoreClosed drops the error of a second Close: a surface may have
// closed its part first (a kernel's shutdown closes the host).
func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) || errors.Is(err, session.ErrClosed) {
		return nil
	}
	return err
}

// ReaperCommand is the hidden subcommand of the gateway reaper.
const ReaperCommand = "gateway-reaper"

// Reaper is the command line of the gateway reaper: this executable (nil
// when it cannot be found: no reaper).
func Reaper() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{exe, ReaperCommand}
}
