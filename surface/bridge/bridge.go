package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/session"
)

// CellKind is what a cell of the kernel means (the kernelspec's and
// --mode's "code" or "prompt"): not the permission mode nor the agent mode.
type CellKind string

// The kinds of cell.
const (
	// CodeCells: a cell is backing-kernel code.
	CodeCells CellKind = "code"
	// PromptCells: a cell is a request to the agent.
	PromptCells CellKind = "prompt"
)

// ParseCellKind checks a cell kind's name ("" is code).
func ParseCellKind(s string) (CellKind, error) {
	switch CellKind(s) {
	case CodeCells, PromptCells:
		return CellKind(s), nil
	case "":
		return CodeCells, nil
	}
	return "", fmt.Errorf("bridge: unknown kernel mode %q: a cell is code or prompt", s)
}

// Config configures a Bridge: the Jupyter mapping only. The backing runner
// and the session host come from the composition root (package app).
type Config struct {
	// Runner runs the backing kernel. Required. The bridge starts it
	// (Start) and closes it (Close). Its iopub messages that belong to no
	// request go to the bridge's Unsolicited.
	Runner backing.Runner
	// Host is the session host of the agent (prompt mode, %%agent cells,
	// %agent magics). Required. The bridge closes it (Close).
	Host *session.Host
	// Refuse, when set, is why this kernel must not start a backing kernel
	// (it is itself one: backing.CheckNested). It answers kernel_info, and
	// every cell fails with this error.
	Refuse error
	// Cells is the kernel mode. Default ModeCode.
	Cells CellKind
	// Logger; default hclog.NewNullLogger().
	Logger hclog.Logger
	// Version is agentkernel's version for kernel_info.
	Version string
	// InfoWait bounds how long kernel_info waits for the backing kernel
	// when no language_info is cached. Default 10s.
	InfoWait time.Duration
	// Problems are what was wrong with the configuration (a broken config
	// file, an unknown setting), left at defaults: shown in the first
	// cell's output and in %agent help.
	Problems []string
	// Approve answers asks when the frontend has no stdin. Default none.
	Approve agent.ApprovalPolicy
	// UpdateInterval is the least time between two updates of a prompt
	// cell's growing display while its message streams (the complete
	// text goes out at once). Default 1/19 s: at most 20 updates in any
	// second, the last one included.
	UpdateInterval time.Duration
	// Notebook is an .ipynb (relative to the workspace) that the agent's
	// notebook tools work on while no frontend shows one through the
	// notebook comm (AGENTKERNEL_NOTEBOOK; %agent notebook sets it later).
	Notebook string
	// MCP is the kernel's MCP server as outside clients (Claude Code, an
	// MCP inspector) reach it: %agent mcp serve starts it, %agent mcp stop
	// and Close stop it. nil: this kernel has none to serve.
	MCP MCPServer
}

// MCPServer is a kernel's MCP server served on loopback behind a bearer
// token (mcpserve.Loopback). Its methods are safe for concurrent use.
type MCPServer interface {
	// Start serves it, unless it is served already, and returns its URL
	// and the token every request must carry.
	Start() (url, token string, err error)
	// Stop stops serving it; a later Start serves it behind a new token.
	Stop() error
}

func (c Config) withDefaults() Config {
	if c.Cells == "" {
		c.Cells = CodeCells
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.UpdateInterval <= 0 {
		c.UpdateInterval = defaultUpdateInterval
	}
	if c.InfoWait <= 0 {
		c.InfoWait = 10 * time.Second
	}
	if c.Approve == "" {
		c.Approve = agent.ApproveNone
	}
	return c
}

// Bridge implements kernel.Handler over a backing runner (the kernel that
// runs code) and a session host (the agent). All methods are safe for
// concurrent use.
type Bridge struct {
	cfg    Config
	log    hclog.Logger
	runner backing.Runner
	host   *session.Host

	mu          sync.Mutex
	inputCancel context.CancelFunc
	lastCount   int
	closed      bool

	recent recentRequests

	problemsShown sync.Once // Config.Problems, in the first cell

	amu        sync.Mutex // never held across a turn
	cellCancel context.CancelFunc
	count      int // prompt mode's execution count

	pmu   sync.Mutex // guards panel; never held across a call out
	panel *panel     // the web panel, once %agent webview started it

	comms     *commRouter    // the comms the bridge serves itself
	panels    *panelComms    // the panel's comms (the JupyterLab sidebar)
	notebooks *notebookComms // the notebooks' comms (the agent's notebook tools)
	// promptFrom is the Jupyter session of the frontend whose prompt runs:
	// its notebook is the one the agent works in.
	promptFrom atomic.Value // string

	attachMu sync.Mutex
	attached []attachment // %agent attach: images for the next prompt
}

// New returns a Bridge over cfg's runner and host. It starts nothing. A
// backing kernelspec that cannot be found is no error: the kernel keeps
// serving, every request that needs the backing kernel fails with the
// reason, and the next one looks again.
func New(cfg Config) (*Bridge, error) {
	if cfg.Runner == nil || cfg.Host == nil {
		return nil, errors.New("bridge: a runner and a host are required")
	}
	cfg = cfg.withDefaults()
	b := &Bridge{cfg: cfg, log: cfg.Logger.Named("bridge"), runner: cfg.Runner, host: cfg.Host}
	b.recent.init(256)
	b.panels = &panelComms{b: b}
	b.notebooks = &notebookComms{b: b}
	b.comms = newCommRouter(map[string]commTarget{PanelTarget: b.panels, NotebookTarget: b.notebooks,
		CompleteTarget: &completeComms{b: b}}, b.log.Warn)
	cfg.Host.Tools().SetFrontends(b.notebooks)
	cfg.Host.Tools().ExpectCells()
	cfg.Host.Tools().SetPromptCells(cfg.Cells == PromptCells)
	if cfg.Notebook != "" {
		f, err := cfg.Host.Tools().OpenNotebookFile(cfg.Notebook)
		if err != nil {
			b.cfg.Problems = append(b.cfg.Problems, "the notebook "+cfg.Notebook+": "+err.Error())
		} else {
			b.notebooks.setFile(f)
		}
	}
	return b, nil
}

// Start launches the backing kernel in the background and, in prompt
// mode, the learning of the workspace that rewinds restore files from,
// once the backing kernel is up (the agent's code cannot run before).
func (b *Bridge) Start() {
	b.runner.Start()
	if b.cfg.Cells == PromptCells {
		b.host.World().StartTracking(b.runner.Ready)
	}
}

// KernelInfo implements kernel.Handler: the backing kernel's
// language_info (cached, or waited for up to InfoWait while it starts).
func (b *Bridge) KernelInfo() kernel.KernelInfo {
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.InfoWait)
	info := b.runner.LanguageInfo(ctx)
	cancel()
	if info == nil {
		info, _ = json.Marshal(map[string]string{"name": ""})
	}
	if b.cfg.Cells == PromptCells {
		info = promptLanguageInfo
	}
	// The debugger is the backing kernel's, passed through in code mode:
	// debug_request goes to its control channel, debug_event comes back.
	var features []string
	debugger := b.cfg.Cells == CodeCells && b.runner.Debugger()
	if debugger {
		features = append(features, "debugger")
	}
	// Kernel subshells are the backing kernel's too: its create, delete
	// and list requests go to its control channel, a request's subshell_id
	// goes with it, and each subshell's requests run beside the main
	// shell's (kernel.Server keeps a queue per subshell).
	if s, ok := b.runner.(interface{ Subshells() bool }); ok && b.cfg.Cells == CodeCells && s.Subshells() {
		features = append(features, "kernel subshells")
	}
	return kernel.KernelInfo{
		Debugger:              debugger,
		SupportedFeatures:     features,
		Implementation:        "agentkernel",
		ImplementationVersion: b.cfg.Version,
		LanguageInfo:          info,
		Banner: fmt.Sprintf("agentkernel %s (%s mode), backed by %s",
			b.cfg.Version, b.cfg.Cells, b.runner.Describe()),
		HelpLinks: []kernel.HelpLink{{Text: "agentkernel", URL: "https://github.com/agentkernel/agentkernel"}},
	}
}

// Interrupt implements kernel.Handler: it cancels a running agent turn
// (which interrupts the code it runs) or a pending input request, and
// interrupts the backing kernel (also a start that requests wait for).
func (b *Bridge) Interrupt(ctx context.Context) error {
	b.amu.Lock()
	cancelCell := b.cellCancel
	b.amu.Unlock()
	if cancelCell != nil {
		cancelCell()
		b.host.Cancel(ctx)
		return nil
	}
	b.mu.Lock()
	cancelInput := b.inputCancel
	b.mu.Unlock()
	if cancelInput != nil {
		cancelInput()
	}
	if err := b.runner.Interrupt(ctx); err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	return nil
}

// Shutdown implements kernel.Handler: the agent's running turn stops (what
// streamed is stored, marked partial), and the backing kernel and the
// panel shut down. The agentkernel process exits after the reply, restart
// or not: Jupyter starts a new one.
func (b *Bridge) Shutdown(ctx context.Context, restart bool) error { return b.Close() }

// Close stops the web panel, closes the agent session (a running turn is
// cancelled and stored) and shuts the backing kernel down. A second call
// returns net.ErrClosed.
func (b *Bridge) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return net.ErrClosed
	}
	b.closed = true
	b.mu.Unlock()
	b.closePanel()
	b.comms.close()
	var err error
	if b.cfg.MCP != nil {
		err = b.cfg.MCP.Stop()
	}
	return errors.Join(err, b.host.Close(), b.runner.Close())
}

// promptLanguageInfo declares prompt cells prose, so frontends highlight
// them as markdown.
var promptLanguageInfo = json.RawMessage(`{"name":"markdown","mimetype":"text/markdown","file_extension":".md",` +
	`"codemirror_mode":"markdown","pygments_lexer":"markdown","version":"1.0"}`)

// Probe starts the backing kernel (if not yet started), waits until it is
// ready and its language_info is cached, then returns.
func (b *Bridge) Probe(ctx context.Context) error { return b.runner.Ready(ctx) }

// BackingDebugger reports whether the backing kernel said it has a
// debugger, as far as is known (Probe makes sure).
func (b *Bridge) BackingDebugger() bool { return b.runner.Debugger() }
