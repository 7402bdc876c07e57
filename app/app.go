// Package app is agentkernel's composition root. Load turns the flags, the
// environment and the config file into one typed Config; Open opens, once
// and in one place, what every command shares: the event log, the session
// store, the backing runner and the session host. A surface (the Jupyter
// kernel, ask's stream-json, an ACP agent, an MCP server) takes an App and
// drives its Host; it never reads the configuration or opens a store
// itself.
package app

import (
	"cmp"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/models"
	"github.com/agentkernel/agentkernel/checkpoint"
	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/mcp"
	"github.com/agentkernel/agentkernel/notebooks"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
)

// The environment variables Load reads (beside the providers' keys, which
// the provider packages read, and Jupyter Server's gateway variables).
const (
	EnvModel          = "AGENTKERNEL_MODEL"
	EnvApprove        = "AGENTKERNEL_APPROVE"
	EnvPermissionMode = "AGENTKERNEL_PERMISSION_MODE"
	EnvEffort         = "AGENTKERNEL_EFFORT"
	// EnvCompletionModel is the model of inline completions.
	EnvCompletionModel = "AGENTKERNEL_COMPLETION_MODEL"
	// EnvNotebook is the .ipynb a kernel's notebook tools work on while
	// no frontend shows one.
	EnvNotebook = "AGENTKERNEL_NOTEBOOK"
	EnvConfig   = "AGENTKERNEL_CONFIG"
	EnvRecord   = "AGENTKERNEL_RECORD"
	// EnvEventSource names the surface a kernel's inputs come from in the
	// event log; agentkernel run sets it for the kernels it starts.
	EnvEventSource = "AGENTKERNEL_EVENT_SOURCE"
)

// Flags are the command-line values Load lays over the environment and
// the config file; "" is not given.
type Flags struct {
	// Model is --model: it wins over $AGENTKERNEL_MODEL and the file.
	Model string
	// Record is --record: the cassette the model's answers are recorded
	// to (default $AGENTKERNEL_RECORD).
	Record string
	// Store is --store (see StoreFlag).
	Store string
}

// Config is the app's typed configuration: the config file, the
// environment over it, and the flags over both.
type Config struct {
	// File is the config file as read; zero when it is broken.
	File File
	// Problems are what was wrong (a broken config file, an unknown
	// approval policy or permission mode), each left at its default. A
	// kernel starts and shows them; ask and run refuse to run (Err).
	Problems []string
	// Model is the model for new sessions; "" is none.
	Model string
	// Record is the cassette the model's answers are recorded to.
	Record string
	// Approve answers asks when no one can: none, read-only or all.
	Approve agent.ApprovalPolicy
	// PermissionMode is each session's starting permission mode.
	PermissionMode agent.Mode
	// Effort is the sessions' starting reasoning effort.
	Effort provider.Effort
	// DataDir is $AGENTKERNEL_DATA_DIR ("" is the store's default).
	DataDir string
	// StoreURL is the store: --store, $AGENTKERNEL_STORE, the file's
	// "store"; "" is SQLite in the data directory.
	StoreURL string
	// Source is the surface the inputs come from in the event log, when
	// the environment says ($AGENTKERNEL_EVENT_SOURCE).
	Source eventlog.Source
	// Processor lends background work (the workspace baseline) a
	// processor: the command that owns GOMAXPROCS sets it
	// (checkpoint.Options.Processor). Nil: none is lent.
	Processor func() (release func())
}

// Load reads the configuration. It never fails: what it cannot use is
// left at its default and listed in Problems (and logged).
func Load(f Flags, log hclog.Logger) Config {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	c := Config{DataDir: os.Getenv(store.EnvDataDir), Source: eventlog.Source(os.Getenv(EnvEventSource))}
	fc, err := ReadFile()
	if err != nil {
		c.Problems = append(c.Problems, err.Error()+" (the whole file is ignored until it is fixed)")
	}
	c.File = fc
	c.Approve, err = agent.ParseApprovalPolicy(cmp.Or(os.Getenv(EnvApprove), fc.Approve))
	if err != nil {
		c.Problems = append(c.Problems, "approval policy: "+err.Error()+" (using none)")
		c.Approve = agent.ApproveNone
	}
	if m := cmp.Or(os.Getenv(EnvPermissionMode), fc.Mode); m != "" {
		if c.PermissionMode, err = agent.ParseMode(m); err != nil {
			c.Problems = append(c.Problems, "permission mode: "+err.Error()+" (using default)")
			c.PermissionMode = ""
		}
	}
	if c.Effort, err = provider.ParseEffort(cmp.Or(os.Getenv(EnvEffort), fc.Effort)); err != nil {
		c.Problems = append(c.Problems, "effort: "+err.Error()+" (using the model's default)")
	}
	for _, p := range c.Problems {
		log.Error("configuration problem", "problem", p)
	}
	c.Model = models.Resolve(f.Model, os.Getenv(EnvModel), fc.Model)
	c.Record = cmp.Or(f.Record, os.Getenv(EnvRecord))
	c.StoreURL = cmp.Or(f.Store, os.Getenv(store.EnvStore), fc.Store)
	return c
}

// Err is the error of a command that must not run on a broken
// configuration (ask, run): all of c's problems; nil when there are none.
func (c Config) Err() error {
	if len(c.Problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(c.Problems, "\n"))
}

// checkpoints are the workspace tracker's options: the file's, and the
// processor the command lends.
func (c Config) checkpoints() checkpoint.Options {
	o := c.File.Checkpoints.options()
	o.Processor = c.Processor
	return o
}

// host is the session host's configuration from c: everything but the
// store, the runner, the workspace, the kind, the logger, the event log
// and the model opener, which Open adds.
func (c Config) host() session.Config {
	return session.Config{
		DataDir:         c.DataDir,
		StoreURL:        c.StoreURL,
		Hooks:           c.File.Hooks,
		Checkpoints:     c.checkpoints(),
		Source:          c.Source,
		Model:           c.Model,
		PermissionMode:  c.PermissionMode,
		Effort:          c.Effort,
		CompletionModel: cmp.Or(os.Getenv(EnvCompletionModel), c.File.CompletionModel),
		Modes:           c.File.Modes,
		WebFetch:        c.File.WebFetch,
		Allow:           c.File.Allow,
		Deny:            c.File.Deny,
		MCPServers:      c.File.MCPServers,
		MCP:             mcp.Options{UserDir: c.UserDir()},
		Notebook: func(w io.Writer, s store.Session, h store.Histories) error {
			nb, err := SessionNotebook(s, h, nil)
			if err != nil {
				return err
			}
			return notebooks.Write(w, nb)
		},
	}
}

// UserDir is the user's configuration directory (the config file's): its
// MCP servers' relative paths are resolved there.
func (c Config) UserDir() string {
	if p := Path(); p != "" {
		return filepath.Dir(p)
	}
	return ""
}

// SessionNotebook is a stored session as a notebook (sessions export,
// %agent export).
func SessionNotebook(s store.Session, h store.Histories, ks *notebooks.KernelspecMeta) (*notebooks.Notebook, error) {
	return notebooks.FromSession(h.UI, h.API, notebooks.SessionMeta{
		ID: s.ID, Title: s.Title, Model: s.Model, Provider: s.Provider, Mode: s.Mode, Kernelspec: ks,
	})
}
