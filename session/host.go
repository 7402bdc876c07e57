package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/agentstore"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/checkpoint"
	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/hooks"
	"github.com/agentkernel/agentkernel/internal/keys"
	"github.com/agentkernel/agentkernel/mcp"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/rules"
	"github.com/agentkernel/agentkernel/store"
)

// ModelOpener turns a model string ("openai:gpt-4.1", "replay:FILE") into a
// provider. cmd wires it to the provider packages; tests to their servers.
type ModelOpener func(spec string) (provider.Provider, error)

// Config configures a Host. The zero value works: a store under
// store.DataDir(), no model, no backing kernel.
type Config struct {
	// Store holds the sessions. Nil: the host opens one in DataDir on
	// first use (a code-mode kernel that never talks to the agent never
	// opens it) and closes it in Close. A store given here is the
	// caller's to close.
	Store *store.Store
	// DataDir is where the host opens its store; default store.DataDir().
	DataDir string
	// Kernel is the backing kernel's kernelspec name (rules scoped by
	// kernel match it, or its language).
	Kernel string
	// Effort is the reasoning effort of the sessions' requests ("": the
	// provider's default) until SetEffort.
	Effort provider.Effort
	// Modes are the config file's agent modes, by name (package rules).
	Modes map[string]rules.AgentMode
	// WebFetch, when it allows some sites, offers the web_fetch tool.
	WebFetch *agent.WebFetch
	// CompletionModel is the model of inline completions (Complete);
	// "": the session's model.
	CompletionModel string
	// Models are the model strings a settings view offers (ModelSettings).
	Models []string
	// Keys keeps the API keys a settings view saves (SetKey), which
	// OpenModel reads; nil: keys cannot be saved here.
	Keys *keys.File
	// Cells, when set, gives where the notebook the agent works in is
	// changed now (nil when nowhere): the notebook tools are offered
	// while it gives one.
	Cells func() Cells
	// PromptCells says the notebook of Cells is in prompt mode (a bare
	// code cell is a request to the agent, code runs under a %%code line:
	// agent.ToolboxOptions.PromptCells). A bridge says its own mode
	// (Tools.SetPromptCells).
	PromptCells bool
	// OpenNotebook opens the .ipynb at path as Cells: where a rewind puts
	// back the cells of a notebook no frontend shows any more. nil: such
	// cells are left as they are.
	OpenNotebook func(path string) (FileCells, error)
	// StoreURL, when a postgres:// URL, is the PostgreSQL store the host
	// opens instead (see store.Options.URL).
	StoreURL string
	// Model is the model of a session when neither Models.Set nor the
	// resumed session names one: the kernelspec's or environment's model,
	// else the config file's. "" is none.
	Model string
	// OpenModel opens model strings; nil: no model can be used.
	OpenModel ModelOpener
	// Runner runs the agent's execute_code and %%code cells. The caller
	// owns it. Nil: code cannot run.
	Runner backing.Runner
	// Workspace is the directory the file tools may touch. Default: the
	// current directory.
	Workspace string
	// Kind is recorded as a new session's mode: "prompt", "code", "ask".
	Kind string
	// PermissionMode, Allow and Deny configure each session's Policy.
	PermissionMode agent.PermissionMode
	Allow, Deny    []string
	// Notebook writes `%agent export FILE.ipynb`; nil: only JSONL exports.
	Notebook NotebookWriter
	// Checkpoints set the limits of the workspace tracking that rewinds
	// restore files from.
	Checkpoints checkpoint.Options
	// MCPServers is the config file's mcpServers object (user scope); the
	// workspace's .mcp.json (project scope) is read beside it, and wins.
	// The servers' tools are offered to every session of the host.
	MCPServers json.RawMessage
	// MCP sets the MCP servers' timeouts and limits; its Config, Dir and
	// Logger are the host's.
	MCP mcp.Options
	// Logger; default a null logger.
	Logger hclog.Logger
	// Hooks are the user's hooks (the config file's); the workspace's
	// .agentkernel/settings.json adds its own. They run in every session.
	Hooks hooks.Config
	// EventLog, when set, receives what goes in and out of the sessions
	// (see eventlog.go). The caller owns it.
	EventLog *eventlog.Log
	// Source is the surface inputs come from unless their context says
	// otherwise (WithSource). Default eventlog.SourceNotebook.
	Source eventlog.Source
}

// Host owns the lifecycle of the current agent session of one surface
// (a kernel, or one ask): opening, switching (new, resume), its turns, and
// the parts it composes, each with its own state and lock:
//
//   - Conversation: the current session's record (its histories, title,
//     cost, export);
//   - Models: the model, the effort, the providers opened for them, keys
//     and completions;
//   - Modes: the permission mode, the agent mode and the rules;
//   - World: the workspace's checkpoints and rewinds of the world;
//   - CodeLog: the code the backing kernel ran, and the user's cells;
//   - Tools: what clients add to the toolbox (MCP servers, file buffers,
//     the frontends' notebooks).
//
// All methods are safe for concurrent use. Close ends it.
type Host struct {
	cfg   Config
	log   hclog.Logger
	lis   agent.Listeners
	hooks *hooks.Runner

	models Models
	modes  Modes
	world  World
	code   CodeLog
	tools  Tools
	// quiet reads the backing kernel's namespace (nil: no runner): through
	// a subshell of its own while a cell runs, where the kernel has them.
	quiet *backing.Quiet
	ns    namespaceCache // the last read of the kernel's namespace (context.go)

	mu       sync.Mutex // guards what follows; never held across a turn, a store write or a call out
	st       *store.Store
	ownStore bool
	cur      *current
	closed   bool
}

// active returns the current session (nil before the first).
func (h *Host) active() *current {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// holdCurrent runs f with the current session (nil: none yet), which no
// other session replaces while f runs.
func (h *Host) holdCurrent(f func(c *current)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h.cur)
}

// current is the session the host drives.
type current struct {
	id      string
	task    *agent.Task
	policy  *agent.Policy
	resumed bool
	tools   []string
	// forkOf, forkOfOwner and forkOfAdmin: see Info.
	forkOf, forkOfOwner string
	forkOfAdmin         bool
	// elsewhere is the workspace the session was started in, when not the
	// host's: its file changes were made there, and are not restored here.
	elsewhere string
	// ws is the workspace its file tools resolve paths in, tb its tools.
	ws       *agent.Workspace
	tb       *agent.Toolbox
	unlisten func()

	// replayPending: the kernel state must be rebuilt before code runs.
	replayPending atomic.Bool

	mu    sync.Mutex
	model string     // its model (Models.Set)
	cells []cell     // %%code cells since the last prompt, for the model
	notes []string   // what the model must be told at the next prompt
	seen  seenKernel // what the model was told of the kernel (context.go)
	turn  turnLog    // for the event log
}

// modelName is the session's model.
func (c *current) modelName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.model
}

// setModel makes model the session's.
func (c *current) setModel(model string) {
	c.mu.Lock()
	c.model = model
	c.mu.Unlock()
}

// note queues text for the model, given with the next prompt.
func (c *current) note(text string) {
	c.mu.Lock()
	c.notes = append(c.notes, text)
	c.mu.Unlock()
}

// New returns a Host. It opens nothing.
func New(cfg Config) *Host {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Workspace == "" {
		if wd, err := os.Getwd(); err == nil {
			cfg.Workspace = wd
		} else {
			cfg.Workspace = "."
		}
	}
	cfg.Workspace = CanonicalWorkspace(cfg.Workspace)
	if cfg.Source == "" {
		cfg.Source = eventlog.SourceNotebook
	}
	h := &Host{cfg: cfg, log: cfg.Logger.Named("session"), st: cfg.Store,
		hooks: hooks.New(hooks.Options{Config: cfg.Hooks, Workspace: cfg.Workspace, Logger: cfg.Logger})}
	if cfg.Runner != nil {
		h.quiet = backing.NewQuiet(cfg.Runner)
	}
	// Each part is given what it needs (parts.go); none holds the host.
	h.models = Models{host: h, openStore: h.Store, lis: &h.lis, log: h.log, quiet: h.quiet, set: modelSettings{
		model: cfg.Model, completion: cfg.CompletionModel, models: cfg.Models, effort: cfg.Effort, open: cfg.OpenModel, keys: cfg.Keys}}
	h.modes = Modes{host: h, lis: &h.lis, log: h.log, set: modeSettings{workspace: cfg.Workspace, userDir: cfg.MCP.UserDir,
		permission: cfg.PermissionMode, allow: cfg.Allow, deny: cfg.Deny, modes: cfg.Modes, kernel: cfg.Kernel, runner: cfg.Runner}}
	h.tools = Tools{lis: &h.lis, prompt: cfg.PromptCells, set: toolSettings{workspace: cfg.Workspace, mcp: cfg.MCP,
		mcpServers: cfg.MCPServers, logger: cfg.Logger, cells: cfg.Cells, openNotebook: cfg.OpenNotebook}}
	h.code = CodeLog{host: h, runner: cfg.Runner, world: &h.world, openStore: h.Store, log: h.log}
	h.world = World{host: h, openStore: h.Store, code: &h.code, frontends: &h.tools, lis: &h.lis, log: h.log,
		set: worldSettings{workspace: cfg.Workspace, checkpoints: cfg.Checkpoints, runner: cfg.Runner, openNotebook: cfg.OpenNotebook}}
	return h
}

// quietRunner is the runner namespace reads go through (nil: none).
func (h *Host) quietRunner() *backing.Quiet { return h.quiet }

// variablesOf is the agent's reader of the kernel's variables, nil when
// the host has no kernel.
func (h *Host) variablesOf() agent.Variables {
	if h.quiet == nil {
		return nil
	}
	return variables{h: h}
}

// Conversation is the current session's record.
func (h *Host) Conversation() *Conversation { return &Conversation{h: h} }

// Models are the model and effort of the sessions, and the providers
// opened for them.
func (h *Host) Models() *Models { return &h.models }

// Modes are the permission and agent modes, and the rules.
func (h *Host) Modes() *Modes { return &h.modes }

// World is what a rewind turns back beside the conversation: the
// workspace's files and the backing kernel.
func (h *Host) World() *World { return &h.world }

// CodeLog is the code the backing kernel ran.
func (h *Host) CodeLog() *CodeLog { return &h.code }

// Tools are what clients and frontends add to the sessions' tools.
func (h *Host) Tools() *Tools { return &h.tools }

// ErrClosed is returned by a Host's methods after Close.
var ErrClosed = errors.New("session: host closed")

// Workspace returns the directory the agent's file tools may touch.
func (h *Host) Workspace() string { return h.cfg.Workspace }

// Store returns the store, opening it on first use (ctx bounds the open:
// a PostgreSQL store dials its server).
func (h *Host) Store(ctx context.Context) (*store.Store, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if h.st != nil {
		return h.st, nil
	}
	st, err := store.Open(ctx, store.Options{Dir: h.cfg.DataDir, URL: h.cfg.StoreURL, Logger: h.cfg.Logger.Named("store")})
	if err != nil {
		return nil, fmt.Errorf("session: open the session store: %w", err)
	}
	h.st, h.ownStore = st, true
	return st, nil
}

// Info describes the current session.
type Info struct {
	ID      string
	Model   string
	Resumed bool
	// Elsewhere is the workspace a resumed session was started in, when it
	// is not the host's: its rewinds leave files alone (see Elsewhere).
	Elsewhere string
	// Messages is the number of UI messages.
	Messages int
	// Tools are the names of the tools the model is offered.
	Tools []string
	// Interrupted is set by Resume when the session's last turn was cut
	// short: it is offered to go on (a resume_task ask).
	Interrupted bool
	// ForkOf is set by Resume when the session asked for was another
	// user's, shared with this one read-only: the id of that session, of
	// which this one is the user's own fork; ForkOfOwner is whose it is.
	ForkOf, ForkOfOwner string
	// ForkOfAdmin: the user read ForkOf as an administrator, who reads
	// every session, rather than because it was shared with them.
	ForkOfAdmin bool
}

// ForkReason says, for people, why the user could read the session
// ForkOf that they now go on in a fork of their own.
func (i Info) ForkReason() string {
	if i.ForkOfAdmin {
		return "which you read as an administrator of the store (it was not shared with you)"
	}
	return "shared with you to read"
}

func (c *current) info() Info {
	return Info{ID: c.id, Model: c.modelName(), Resumed: c.resumed, Elsewhere: c.elsewhere, Messages: len(c.task.UI()), Tools: c.tools,
		ForkOf: c.forkOf, ForkOfOwner: c.forkOfOwner, ForkOfAdmin: c.forkOfAdmin}
}

// Current returns the current session, creating a new one on first use.
func (h *Host) Current(ctx context.Context) (Info, error) {
	c, err := h.session(ctx)
	if err != nil {
		return Info{}, err
	}
	return c.info(), nil
}

// session returns the current session, creating one on first use.
func (h *Host) session(ctx context.Context) (*current, error) {
	c := h.active()
	if c != nil {
		return c, nil
	}
	return h.open(ctx, "", false, false)
}

// NewSession makes a new session the current one.
func (h *Host) NewSession(ctx context.Context) (Info, error) {
	c, err := h.open(ctx, "", true, false)
	if err != nil {
		return Info{}, err
	}
	h.logCommand(ctx, c, "new", "")
	return c.info(), nil
}

// Resume makes the stored session ref (an id or a unique id prefix) the
// current one. Archived sessions are refused: restore them first. Another
// user's session, shared with this one, is never written: Resume forks it
// into a session of the user's own and makes that one current (Info.ForkOf
// says so).
func (h *Host) Resume(ctx context.Context, ref string) (Info, error) {
	return h.resume(ctx, ref, true, true)
}

// ResumeOwn is Resume for the user's own sessions: another user's is an
// error that matches store.ErrReadOnly, and nothing is forked (for a
// caller that must keep the id it was given, as ACP's session/load).
func (h *Host) ResumeOwn(ctx context.Context, ref string) (Info, error) {
	return h.resume(ctx, ref, true, false)
}

// resume is Resume; offer says whether an interrupted turn is offered to
// go on (not for a fork, whose history ends where it was cut on purpose),
// forkOthers whether another user's session is forked or refused.
func (h *Host) resume(ctx context.Context, ref string, offer, forkOthers bool) (Info, error) {
	if strings.TrimSpace(ref) == "" {
		return Info{}, errors.New("session: resume: no session id given")
	}
	c, err := h.open(ctx, ref, true, forkOthers)
	if err != nil {
		return Info{}, err
	}
	h.logCommand(ctx, c, "resume", ref)
	info := c.info()
	// A turn that was cut short (the kernel or its server died) is offered
	// to go on: a resume_task ask that the next prompt answers.
	if !offer {
		return info, nil
	}
	if info.Interrupted, err = c.task.OfferResume(ctx); err != nil {
		h.log.Warn("offer to resume", "error", err)
	}
	return info, nil
}

// CanonicalWorkspace is the form of a workspace directory that sessions
// record and are selected by: absolute, symbolic links resolved.
func CanonicalWorkspace(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// Continue resumes the most recently updated live session of the host's
// workspace.
func (h *Host) Continue(ctx context.Context) (Info, error) {
	st, err := h.Store(ctx)
	if err != nil {
		return Info{}, err
	}
	s, err := st.LatestSession(ctx, h.cfg.Workspace)
	if err != nil {
		return Info{}, err
	}
	return h.Resume(ctx, s.ID)
}

// open creates (resume == "") or loads a session and makes it current.
// Without replace, a session that became current meanwhile is kept. A
// session to resume that is another user's is forked with forkOthers, and
// refused without.
func (h *Host) open(ctx context.Context, resume string, replace, forkOthers bool) (*current, error) {
	st, err := h.Store(ctx)
	if err != nil {
		return nil, err
	}
	c, hist, err := h.stored(ctx, st, resume, forkOthers)
	if err != nil {
		return nil, err
	}
	if err := h.equip(st, c, hist); err != nil {
		return nil, err
	}
	return h.makeCurrent(ctx, c, replace)
}

// stored finds the session to resume (forking another user's with
// forkOthers) and loads its histories, or creates a new one (resume ==
// ""): the session's record, not yet equipped.
func (h *Host) stored(ctx context.Context, st *store.Store, resume string, forkOthers bool) (*current, store.Histories, error) {
	if resume == "" {
		model := h.models.next("")
		providerName, _, _ := strings.Cut(model, ":")
		s, err := st.CreateSession(ctx, store.NewSession{Model: model, Provider: providerName,
			Mode: h.cfg.Kind, Workspace: h.cfg.Workspace})
		if err != nil {
			return nil, store.Histories{}, fmt.Errorf("session: create: %w", err)
		}
		return &current{id: s.ID, model: model}, store.Histories{}, nil
	}
	s, err := st.FindSession(ctx, resume)
	if err != nil {
		return nil, store.Histories{}, fmt.Errorf("session: %w", err)
	}
	if s.Archived() {
		return nil, store.Histories{}, fmt.Errorf("session: %s is archived; restore it first (agentkernel sessions restore %s)", s.ID, messages.ShortID(s.ID))
	}
	c := &current{resumed: true}
	if err := st.CheckWritable(s); err != nil {
		if !forkOthers {
			return nil, store.Histories{}, fmt.Errorf("session: %w", err)
		}
		fork, err := st.ForkSession(ctx, s.ID, store.WholeHistory)
		if err != nil {
			return nil, store.Histories{}, fmt.Errorf("session: fork %s's session %s: %w", s.Owner, s.ID, err)
		}
		c.forkOf, c.forkOfOwner, c.forkOfAdmin, s = s.ID, s.Whose(), st.Admin(), fork
	}
	hist, err := st.Load(ctx, s.ID)
	if err != nil {
		return nil, store.Histories{}, fmt.Errorf("session: load %s: %w", s.ID, err)
	}
	c.id, c.model = s.ID, h.models.next(s.Model)
	c.replayPending.Store(s.ReplayPending)
	if s.Workspace != "" && s.Workspace != h.cfg.Workspace {
		c.elsewhere = s.Workspace
	}
	return c, hist, nil
}

// equip gives session c its workspace, toolbox, policy and task, over the
// histories hist: each part builds its share (the tools the clients add,
// the policy and the tool filter of the modes, the model's provider).
func (h *Host) equip(st *store.Store, c *current, hist store.Histories) error {
	var err error
	if c.ws, err = agent.NewWorkspace(h.cfg.Workspace); err != nil {
		return fmt.Errorf("session: workspace: %w", err)
	}
	opts := h.tools.toolboxOptions(func(cells Cells) agent.Notebook { return notebook{cells: cells, code: &h.code, tools: &h.tools, c: c} })
	opts.Workspace, opts.Runner, opts.WebFetch = c.ws, &codeRunner{code: &h.code, c: c}, h.cfg.WebFetch
	opts.Environment, opts.Variables, opts.NotebookFile = h.environment, h.variablesOf(), h.notebookFile()
	if c.tb, err = agent.NewToolbox(opts); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	c.tools = readyTools(c.tb)
	if c.policy, err = h.modes.policy(c.tb); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	prov, err := h.models.provider(c.model)
	if err != nil {
		h.log.Warn("model not available", "model", c.model, "error", err)
	}
	if c.task, err = agent.New(agent.Config{
		SessionID: c.id, Store: agentstore.New(st), Toolbox: c.tb, Provider: prov, Policy: c.policy,
		Logger: h.cfg.Logger, UI: hist.UI, API: hist.API, Context: h.takeContext(c), World: steps{world: &h.world, c: c},
		Hooks: h.hooks, Rules: h.modes.turnRules(c),
	}); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	c.task.SetEffort(h.models.Effort())
	c.task.SetToolFilter(h.modes.filter())
	c.unlisten = c.task.Listen(func(e agent.Event) {
		h.logEvent(c, e)
		h.lis.Emit(e)
	})
	return nil
}

// readyTools are the names of the tools of tb ready now: opening a
// session waits for no MCP server (the first model request does).
func readyTools(tb *agent.Toolbox) []string {
	now, stop := context.WithCancel(context.Background())
	stop()
	var names []string
	for _, t := range tb.Tools(now) {
		names = append(names, t.Name)
	}
	return names
}

// makeCurrent makes the equipped session c current, unless replace is
// false and another became current meanwhile (that one is kept, and
// returned). The session it replaces is closed.
func (h *Host) makeCurrent(ctx context.Context, c *current, replace bool) (*current, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		c.close()
		return nil, ErrClosed
	}
	prev := h.cur
	if prev != nil && !replace {
		h.mu.Unlock()
		c.close() // another caller made one first: keep that
		return prev, nil
	}
	h.cur = c
	c.cells = h.code.takeEarly()
	h.mu.Unlock()
	if prev != nil {
		h.code.leave(prev)
		prev.close()
	}
	h.code.inherit(ctx, c)
	h.log.Info("agent session", "id", c.id, "model", c.model, "resumed", c.resumed)
	h.lis.Emit(agent.Event{Kind: EventSessionChanged})
	return c, nil
}

func (c *current) close() {
	c.unlisten()
	c.task.Close()
}

// Close closes the current session (a running turn is cancelled; what it
// streamed stays marked partial), the providers, and the store if the host
// opened it. A second call returns net.ErrClosed.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return net.ErrClosed
	}
	h.closed = true
	c, st, own := h.cur, h.st, h.ownStore
	h.cur = nil
	h.mu.Unlock()
	var errs []error
	if c != nil {
		c.close()
	}
	h.world.stop()
	errs = append(errs, h.tools.close())
	if st != nil {
		if own {
			errs = append(errs, st.Close())
		} else {
			errs = append(errs, st.Flush(context.Background()))
		}
	}
	errs = append(errs, h.models.close())
	return errors.Join(errs...)
}
