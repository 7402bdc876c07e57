package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/acpagent"
	"github.com/agentkernel/agentkernel/agent/provider/models"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/internal/keys"
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
	// NoHost opens no session host and no runner: the command opens a
	// workspace per session (OpenWorkspace), as sessions and acp do.
	NoHost bool
	// Cells, when set, is the notebook the agent works in
	// (session.Config.Cells): NotebookFile for ask --notebook, whose
	// kernelspec says whether its cells are in prompt mode
	// (session.Config.PromptCells).
	Cells session.Cells
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

	surface Surface
	mu      sync.Mutex
	closed  bool
	tools   func(context.Context) ([]acpagent.ToolServer, error)
}

// Open opens the event log, the store (now, or at first use), the backing
// runner and the session host that cfg and s describe. Nothing is started:
// the runner starts its kernel at first use or at Runner.Start. On error
// what was opened is closed again.
func Open(ctx context.Context, cfg Config, s Surface) (_ *App, err error) {
	if s.Logger == nil {
		s.Logger = hclog.NewNullLogger()
	}
	if s.Workspace == "" && !s.NoHost {
		if s.Workspace, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("the current directory: %w", err)
		}
	}
	a := &App{Config: cfg, surface: s}
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
	if !s.NoHost {
		if a.Runner, err = a.runner(s.Workspace); err != nil {
			return nil, err
		}
		a.Host = a.host(s.Workspace, s.Kind, a.Runner)
	}
	return a, nil
}

// runner opens the surface's backing runner in dir (nil without one).
func (a *App) runner(dir string) (backing.Runner, error) {
	if a.surface.Backing == nil {
		return nil, nil
	}
	o := *a.surface.Backing
	o.Dir, o.Reaper, o.Logger = dir, Reaper(), a.surface.Logger
	return backing.Open(o)
}

// host makes a session host of workspace over the app's store. An
// external agent (a model acp:…) runs in workspace with the tools
// SetAgentTools gives.
func (a *App) host(workspace, kind string, r backing.Runner) *session.Host {
	hc := a.Config.host()
	prices, record := a.Config.File.prices(), a.Config.Record
	hc.Keys, hc.Models = keys.Default(), a.Config.modelChoices()
	hc.OpenModel = func(spec string) (provider.Provider, error) {
		return openModel(spec, hc.Keys, models.Options{Prices: prices, Record: record, ACP: acpagent.Options{
			Dir: workspace, Logger: a.surface.Logger, Tools: a.agentTools}})
	}
	hc.Store, hc.Runner, hc.Workspace, hc.Kind, hc.Logger, hc.EventLog = a.Store, r, workspace, kind, a.surface.Logger, a.Log
	if cells := a.surface.Cells; cells != nil {
		hc.Cells = func() session.Cells { return cells }
		hc.PromptCells = promptFile(cells)
	}
	hc.OpenNotebook = NotebookFile
	if b := a.surface.Backing; b != nil {
		hc.Kernel = b.Kernel
	}
	if a.surface.Source != "" {
		hc.Source = a.surface.Source
	}
	return session.New(hc)
}

// SetAgentTools sets what gives an external agent (a model acp:…) its MCP
// servers at each session it opens: the kernel command gives it the live
// kernel's own (package mcpserve).
func (a *App) SetAgentTools(f func(context.Context) ([]acpagent.ToolServer, error)) {
	a.mu.Lock()
	a.tools = f
	a.mu.Unlock()
}

// agentTools gives an external agent the tools SetAgentTools set.
func (a *App) agentTools(ctx context.Context) ([]acpagent.ToolServer, error) {
	a.mu.Lock()
	f := a.tools
	a.mu.Unlock()
	if f == nil {
		return nil, nil
	}
	return f(ctx)
}

// Workspace is a session host of its own and the runner of its backing
// kernel (nil without Surface.Backing).
type Workspace struct {
	Host   *session.Host
	Runner backing.Runner
}

// Close closes the host, then the runner.
func (w *Workspace) Close() error {
	err := ignoreClosed(w.Host.Close())
	if w.Runner != nil {
		err = errors.Join(err, ignoreClosed(w.Runner.Close()))
	}
	return err
}

// OpenWorkspace opens a host for the directory dir, and the runner of
// Surface.Backing there, for a command that serves several workspaces (an
// ACP agent, one per session) or a stored session's own (sessions rewind).
// The host shares the app's store and event log. The caller closes it.
func (a *App) OpenWorkspace(dir, kind string) (*Workspace, error) {
	r, err := a.runner(dir)
	if err != nil {
		return nil, err
	}
	return &Workspace{Host: a.host(dir, kind, r), Runner: r}, nil
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
