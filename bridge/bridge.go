package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/store"
)

// Mode is what a cell means.
type Mode string

// The kernel modes.
const (
	// ModeCode: a cell is backing-kernel code.
	ModeCode Mode = "code"
	// ModePrompt: a cell is a request to the agent.
	ModePrompt Mode = "prompt"
)

// ParseMode checks a mode name.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case ModeCode, ModePrompt:
		return Mode(s), nil
	case "":
		return ModeCode, nil
	}
	return "", fmt.Errorf("bridge: unknown mode %q (want code or prompt)", s)
}

// Config configures a Bridge. The zero value works: code mode over the
// python3 kernelspec.
type Config struct {
	// Backing names the backing kernelspec. Default "python3". It is looked
	// up with backing.Find, which never picks agentkernel itself.
	Backing string
	// BackingArgs are appended to the backing kernel's command line: the
	// launcher's arguments that were not ours (nbclient's
	// --HistoryManager.hist_file=:memory:, --IPKernelApp.…).
	BackingArgs []string
	// Name is this kernel's own kernelspec name, for the environment mark
	// of its backing kernel and for logs. Optional.
	Name string
	// Refuse, when set, is why this kernel must not start a backing kernel
	// (it is itself one: backing.CheckNested). It answers kernel_info, and
	// every request that needs a backing kernel fails with this error.
	Refuse error
	// Mode is the kernel mode. Default ModeCode.
	Mode Mode
	// Logger; default hclog.NewNullLogger().
	Logger hclog.Logger
	// Dir is the backing kernel's working directory; default ours.
	Dir string
	// Version is agentkernel's version for kernel_info.
	Version string
	// StartTimeout bounds a backing kernel start. Default 60s.
	StartTimeout time.Duration
	// InfoWait bounds how long kernel_info waits for the backing kernel
	// when no language_info is cached. Default 10s.
	InfoWait time.Duration

	// The agent (prompt mode, %%agent cells and %agent magics):

	// DataDir holds the session store; default store.DataDir().
	DataDir string
	// Model is the model string for new sessions ("" = none configured).
	Model string
	// OpenModel turns model strings into providers; nil: none can be used.
	OpenModel ModelOpener
	// Approve answers asks when the frontend has no stdin. Default none.
	Approve Approve
	// PermissionMode, Allow and Deny configure the agent's Policy.
	PermissionMode agent.Mode
	Allow, Deny    []string
}

func (c Config) withDefaults() Config {
	if c.Backing == "" {
		c.Backing = "python3"
	}
	if c.Mode == "" {
		c.Mode = ModeCode
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 60 * time.Second
	}
	if c.InfoWait <= 0 {
		c.InfoWait = 10 * time.Second
	}
	if c.Approve == "" {
		c.Approve = ApproveNone
	}
	return c
}

// Bridge implements kernel.Handler. All methods are safe for concurrent use.
type Bridge struct {
	cfg Config
	log hclog.Logger

	ctx    context.Context // lifetime of the bridge
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.Mutex
	spec        *client.Spec // once found
	backing     *client.Kernel
	starting    chan struct{} // non-nil while a start is under way; closed at its end
	startErr    error
	langInfo    json.RawMessage
	inputCancel context.CancelFunc
	lastCount   int
	closed      bool

	recent recentRequests

	// prompt mode state, under amu (never held across a turn)
	amu        sync.Mutex
	store      *store.Store
	sess       *session
	cell       *cellOut
	cellCancel context.CancelFunc
	count      int // prompt mode's execution count
	providers  map[string]provider.Provider

	pmu   sync.Mutex // guards panel; never held across a call out
	panel *panel     // the web panel, once %agent webview started it
}

// New returns a Bridge. It starts nothing. The backing kernelspec is
// looked up at once, but a lookup that fails is no error here: the kernel
// keeps serving, every request that needs the backing kernel fails with
// the reason, and the next one looks again (the kernelspec may be
// installed meanwhile).
func New(cfg Config) (*Bridge, error) {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	b := &Bridge{
		cfg:      cfg,
		log:      cfg.Logger.Named("bridge"),
		ctx:      ctx,
		cancel:   cancel,
		langInfo: loadLangInfo(cfg.Backing),
	}
	b.recent.init(256)
	if _, err := b.backingSpec(); err != nil && cfg.Refuse == nil {
		b.log.Warn("no backing kernel", "error", err)
	}
	return b, nil
}

// backingSpec returns the backing kernelspec, looking it up until found.
func (b *Bridge) backingSpec() (*client.Spec, error) {
	if b.cfg.Refuse != nil {
		return nil, b.cfg.Refuse
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.spec != nil {
		return b.spec, nil
	}
	spec, err := backing.Find(b.cfg.Backing)
	if err != nil {
		return nil, fmt.Errorf("bridge: backing kernel: %w", err)
	}
	b.spec = spec
	return spec, nil
}

// Start launches the backing kernel in the background.
func (b *Bridge) Start() {
	if b.cfg.Refuse != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.beginStartLocked()
}

// beginStartLocked starts a backing kernel unless one runs or is starting.
func (b *Bridge) beginStartLocked() chan struct{} {
	if b.starting != nil {
		return b.starting
	}
	done := make(chan struct{})
	b.starting = done
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		k, err := b.launch()
		b.mu.Lock()
		closed := b.closed
		if !closed {
			b.backing, b.startErr = k, err
		}
		b.starting = nil
		b.mu.Unlock()
		if closed && k != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := k.Shutdown(ctx); err != nil {
				b.log.Warn("shut down backing kernel started during close", "error", err)
			}
			cancel()
		}
		close(done)
	}()
	return done
}

func (b *Bridge) launch() (*client.Kernel, error) {
	spec, err := b.backingSpec()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(b.ctx, b.cfg.StartTimeout)
	defer cancel()
	k, err := client.Start(ctx, spec, client.Options{
		Logger:  b.log.Named("backing"),
		Dir:     b.cfg.Dir,
		OnIOPub: b.unsolicited,
		Env:     []string{backing.Mark(b.cfg.Name)},
		Args:    b.cfg.BackingArgs,
	})
	if err != nil {
		b.log.Error("backing kernel failed to start", "spec", b.cfg.Backing, "error", err)
		return nil, fmt.Errorf("bridge: start backing kernel %q: %w", b.cfg.Backing, err)
	}
	b.log.Info("backing kernel ready", "spec", b.cfg.Backing, "pid", k.Pid(), "elapsed", time.Since(start))
	if rep, err := k.Client().KernelInfo(ctx); err == nil {
		var c struct {
			LanguageInfo json.RawMessage `json:"language_info"`
		}
		if rep.DecodeContent(&c) == nil && len(c.LanguageInfo) > 0 {
			b.mu.Lock()
			b.langInfo = c.LanguageInfo
			b.mu.Unlock()
			if err := saveLangInfo(b.cfg.Backing, c.LanguageInfo); err != nil {
				b.log.Debug("cache language_info failed", "error", err)
			}
		}
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		select {
		case <-k.Done():
			b.mu.Lock()
			current := b.backing == k
			b.mu.Unlock()
			if current && b.ctx.Err() == nil {
				b.log.Warn("backing kernel died", "pid", k.Pid(), "error", k.Err())
			} else {
				b.log.Debug("backing kernel exited", "pid", k.Pid())
			}
			// Release its sockets and connection file.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := k.Shutdown(ctx); err != nil {
				b.log.Debug("release dead backing kernel", "error", err)
			}
			cancel()
		case <-b.ctx.Done():
		}
	}()
	return k, nil
}

// kernelFor returns a live backing kernel, starting a fresh one if none
// runs (first use, or the last one died).
func (b *Bridge) kernelFor(ctx context.Context) (*client.Kernel, error) {
	if b.cfg.Refuse != nil {
		return nil, b.cfg.Refuse
	}
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, errors.New("bridge: closed")
		}
		if k := b.backing; k != nil {
			select {
			case <-k.Done():
				b.backing = nil // dead: start another below
			default:
				b.mu.Unlock()
				return k, nil
			}
		}
		wait := b.starting
		if wait == nil {
			if b.startErr != nil && b.backing == nil {
				// The last start failed: try again for this request.
				b.startErr = nil
			}
			wait = b.beginStartLocked()
		}
		b.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		b.mu.Lock()
		k, err := b.backing, b.startErr
		b.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if k != nil {
			return k, nil
		}
	}
}

// KernelInfo implements kernel.Handler.
func (b *Bridge) KernelInfo() kernel.KernelInfo {
	b.mu.Lock()
	info, wait, spec := b.langInfo, b.starting, b.spec
	b.mu.Unlock()
	if spec == nil {
		spec = &client.Spec{Name: b.cfg.Backing, DisplayName: b.cfg.Backing}
	}
	if info == nil && wait != nil {
		select {
		case <-wait:
		case <-time.After(b.cfg.InfoWait):
		}
		b.mu.Lock()
		info = b.langInfo
		b.mu.Unlock()
	}
	if info == nil {
		info, _ = json.Marshal(map[string]string{"name": spec.Language})
	}
	if b.cfg.Mode == ModePrompt {
		info = promptLanguageInfo
	}
	return kernel.KernelInfo{
		Implementation:        "agentkernel",
		ImplementationVersion: b.cfg.Version,
		LanguageInfo:          info,
		Banner: fmt.Sprintf("agentkernel %s (%s mode), backed by %s (%s)",
			b.cfg.Version, b.cfg.Mode, spec.DisplayName, b.cfg.Backing),
		HelpLinks: []kernel.HelpLink{{Text: "agentkernel", URL: "https://github.com/agentkernel/agentkernel"}},
	}
}

// Interrupt implements kernel.Handler: it cancels a running agent turn
// (which interrupts the code it runs) or a pending input request, and
// interrupts the backing kernel.
func (b *Bridge) Interrupt(ctx context.Context) error {
	b.amu.Lock()
	sess, cancelCell := b.sess, b.cellCancel
	b.amu.Unlock()
	if cancelCell != nil {
		cancelCell()
		if sess != nil {
			sess.task.Cancel()
		}
		return nil
	}
	b.mu.Lock()
	k, cancelInput := b.backing, b.inputCancel
	b.mu.Unlock()
	if cancelInput != nil {
		cancelInput()
	}
	if k == nil {
		return nil
	}
	if err := k.Interrupt(ctx); err != nil {
		return fmt.Errorf("bridge: interrupt backing kernel: %w", err)
	}
	return nil
}

// Shutdown implements kernel.Handler: it shuts the backing kernel down.
// The agentkernel process exits after the reply, restart or not: Jupyter
// starts a new one.
func (b *Bridge) Shutdown(ctx context.Context, restart bool) error {
	return b.shutdownBacking(ctx)
}

func (b *Bridge) shutdownBacking(ctx context.Context) error {
	b.mu.Lock()
	k := b.backing
	b.backing = nil
	b.mu.Unlock()
	if k == nil {
		return nil
	}
	if err := k.Shutdown(ctx); err != nil {
		return fmt.Errorf("bridge: shut down backing kernel: %w", err)
	}
	return nil
}

// Close shuts the backing kernel down (also one still starting) and waits
// for the bridge's goroutines. It is idempotent.
func (b *Bridge) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b.closePanel()
	aerr := b.closeAgent()
	err := b.shutdownBacking(ctx)
	b.cancel()
	b.wg.Wait()
	return errors.Join(aerr, err)
}

// promptLanguageInfo declares prompt cells prose, so frontends highlight
// them as markdown.
var promptLanguageInfo = json.RawMessage(`{"name":"markdown","mimetype":"text/markdown","file_extension":".md",` +
	`"codemirror_mode":"markdown","pygments_lexer":"markdown","version":"1.0"}`)

// Probe starts the backing kernel (if not yet started), waits until it is
// ready and its language_info is cached, then returns.
func (b *Bridge) Probe(ctx context.Context) error {
	_, err := b.kernelFor(ctx)
	return err
}
