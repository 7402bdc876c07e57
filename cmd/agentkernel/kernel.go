package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider/acpagent"
	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/eglaunch"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/surface/bridge"
	"github.com/agentkernel/agentkernel/surface/mcpserve"
)

func runKernel(args []string, stderr io.Writer) error {
	k, err := parseKernel(args, stderr)
	if err != nil {
		return err
	}
	return k.run()
}

// kernelRun is one `agentkernel kernel`: its options, and then what it
// started.
type kernelRun struct {
	connFile, mode, model, record, store string
	backing                              *app.BackingFlags
	eg                                   eglaunch.Options
	passed                               []string // the backing kernel's arguments
	stderr                               io.Writer

	// Set by run.
	log   hclog.Logger
	conn  *wire.ConnectionInfo
	egl   *eglaunch.Launch // launched by Enterprise Gateway
	procs *procs           // the process's processors (setKernelProcs)
}

// parseKernel reads the kernel's flags: ours, Enterprise Gateway's
// launcher contract, and the backing kernel's (the rest).
func parseKernel(args []string, stderr io.Writer) (*kernelRun, error) {
	k := &kernelRun{stderr: stderr}
	fs := newFlagSet("kernel", "kernel -f CONNECTION_FILE [flags]", stderr)
	fs.StringVar(&k.connFile, "f", "", "connection file written by Jupyter (required unless launched by Enterprise Gateway)")
	k.backing = app.AddBackingFlags(fs, "kernelspec of the backing kernel")
	fs.StringVar(&k.mode, "mode", "code", "kernel mode: code or prompt")
	fs.StringVar(&k.model, "model", "", "model for new sessions (default $AGENTKERNEL_MODEL, then the config file)")
	fs.Func("agent", "an external ACP agent answers instead of a model: claude, codex, gemini or its `COMMAND` line, "+
		"with or without acp: (same as --model acp:…)", func(v string) error {
		k.model = acpagent.Model(v)
		return nil
	})
	fs.StringVar(&k.record, "record", "", "record the model's answers to this cassette `FILE` (default $"+app.EnvRecord+")")
	storeArg := app.StoreFlag(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: agentkernel kernel -f CONNECTION_FILE [flags] [BACKING_ARGS...]\n"+
			"       agentkernel kernel --kernel-id ID --response-address HOST:PORT --public-key KEY [--port-range LOW..HIGH] [flags]\n\n"+
			"The second form is Enterprise Gateway's remote kernel launcher contract (also spelled\n"+
			"--RemoteProcessProxy.kernel-id etc.; without -f, KERNEL_ID, RESPONSE_ADDRESS, PUBLIC_KEY\n"+
			"and PORT_RANGE are read from the environment): the kernel picks its ports, sends its\n"+
			"encrypted connection info to the response address and takes signals and shutdown on\n"+
			"its communication port.\n\n"+
			"Other arguments (--Class.trait=value, --name=value, --flag) go to the backing kernel's\n"+
			"command line, as launchers such as nbclient expect of a python3 kernel.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	egOpts, args := eglaunch.SplitArgs(args)
	ours, passed := splitKernelArgs(fs, args)
	if err := fs.Parse(ours); err != nil {
		return nil, err
	}
	k.passed, k.store = passed, *storeArg
	if k.connFile == "" {
		egOpts = egOpts.Or(eglaunch.FromEnv(os.Getenv))
	}
	k.eg = egOpts
	switch {
	case k.connFile == "" && !egOpts.Enabled():
		fs.Usage()
		return nil, errors.New("kernel: -f CONNECTION_FILE is required (or Enterprise Gateway's --response-address)")
	case k.connFile != "" && egOpts.Enabled():
		return nil, errors.New("kernel: -f CONNECTION_FILE and Enterprise Gateway's --response-address exclude each other")
	}
	return k, nil
}

// run starts the bridge and the kernel server and serves until a signal,
// the parent's end, Enterprise Gateway or a shutdown request ends it.
func (k *kernelRun) run() error {
	mode, err := bridge.ParseCellKind(k.mode)
	if err != nil {
		return err
	}
	if k.log, err = newLogger(k.stderr); err != nil {
		return err
	}
	k.procs = setKernelProcs()
	stopProfile, err := startProfile()
	if err != nil {
		return err
	}
	defer stopProfile()
	if err := k.connection(); err != nil {
		return err
	}
	if k.egl != nil {
		defer k.egl.Close()
	}
	nested := backing.CheckNested()
	if nested != nil {
		k.log.Error("refusing to start a backing kernel", "reason", nested)
		if len(k.passed) > 0 {
			k.log.Warn("no backing kernel to pass the arguments to", "args", k.passed)
		}
	} else if len(k.passed) > 0 {
		k.log.Debug("arguments for the backing kernel", "args", k.passed)
	}
	// SIGINT interrupts (signal interrupt mode) instead of killing us;
	// SIGTERM and SIGHUP shut down cleanly.
	sigint := make(chan os.Signal, 1)
	signal.Notify(sigint, os.Interrupt)
	defer signal.Stop(sigint)
	sigterm := make(chan os.Signal, 1)
	signal.Notify(sigterm, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigterm)

	b, closeApp, err := k.open(mode, nested)
	if err != nil {
		return err
	}
	defer closeApp() // after the bridge (deferred below) has closed
	if k.egl == nil {
		b.Start()
	}
	defer func() {
		if err := b.Close(); err != nil && !errors.Is(err, net.ErrClosed) { // shutdown may have closed it
			k.log.Warn("closing the bridge", "error", err)
		}
	}()
	cfg := kernel.Config{Conn: k.conn, Handler: b, Logger: k.log}
	if k.egl != nil {
		cfg.Listeners = k.egl.TakeListeners() // bound in EG's port range
	}
	srv, err := kernel.New(cfg)
	if err != nil {
		return err
	}
	return k.serve(srv, b, sigint, sigterm)
}

// open opens the app (the event log, the backing runner, the host) and
// the bridge over it; closeApp closes what the bridge does not.
func (k *kernelRun) open(mode bridge.CellKind, nested error) (b *bridge.Bridge, closeApp func(), err error) {
	cfg := app.Load(app.Flags{Model: k.model, Record: k.record, Store: k.store}, k.log)
	cfg.Processor = k.procs.lend
	bo, err := k.backing.Options(k.conn.KernelName)
	if err != nil {
		return nil, nil, fmt.Errorf("kernel: %w", err)
	}
	// The runner's iopub goes to the bridge, which is made before the
	// runner starts (b.Start).
	bo.Args, bo.Refuse, bo.OnIOPub = k.passed, nested, func(m *wire.Message) { b.Unsolicited(m) }
	// A local backing kernel signs with the frontend's key: its outputs
	// go on to the frontend as they came, where they would otherwise be
	// checked and signed again, a megabyte's HMAC each way (the
	// frontend's key gives the kernel's code nothing it could not read
	// from this kernel's connection file, the user's own).
	bo.Key = k.conn.Key
	a, err := app.Open(context.Background(), cfg, app.Surface{Kind: string(mode), Logger: k.log, Backing: bo})
	if err != nil {
		return nil, nil, fmt.Errorf("kernel: %w", err)
	}
	// An external agent (%agent use claude) is given the live kernel and
	// the notebook a frontend shows (the bridge's comms) as an MCP server;
	// %agent mcp serve serves them to an outside MCP client, whose asks
	// go to it (elicitation) or to the approval policy.
	tools, closeTools := mcpserve.AgentTools(mcpserve.Options{Host: a.Host, Runner: a.Runner, Version: versionString(),
		Approve: agent.ApproveAll, Notebook: true, Logger: k.log})
	a.SetAgentTools(tools)
	outside := mcpserve.NewLoopback(mcpserve.Options{Host: a.Host, Runner: a.Runner, Version: versionString(),
		Approve: cfg.Approve, Notebook: true, Logger: k.log})
	b, err = bridge.New(bridge.Config{Runner: a.Runner, Host: a.Host, Refuse: nested, Cells: mode, Logger: k.log,
		Version: versionString(), Problems: cfg.Problems, Approve: cfg.Approve, Notebook: os.Getenv(app.EnvNotebook),
		MCP: outside})
	if err != nil {
		closeTools()
		a.Close()
		return nil, nil, err
	}
	return b, func() { a.Close(); closeTools() }, nil
}

// startProfile writes a CPU profile when AGENTKERNEL_CPUPROFILE names a
// file (%p in it becomes the process id: a benchmark that starts several
// kernels gets one profile each).
func startProfile() (stop func(), err error) {
	path := os.Getenv("AGENTKERNEL_CPUPROFILE")
	if path == "" {
		return func() {}, nil
	}
	path = strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid()))
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// connection reads the connection file, or, launched by Enterprise
// Gateway, picks the ports, key and transport (bad arguments fail here,
// before anything starts).
func (k *kernelRun) connection() error {
	if !k.eg.Enabled() {
		var err error
		k.conn, err = wire.ReadConnectionFile(k.connFile)
		return err
	}
	egl, err := eglaunch.Prepare(k.eg, eglaunch.Config{
		MinPortRangeSize: eglaunch.MinPortRangeSizeFromEnv(os.Getenv), Logger: k.log})
	if err != nil {
		return fmt.Errorf("kernel: launched by Enterprise Gateway: %w", err)
	}
	k.egl, k.conn = egl, egl.ConnectionInfo()
	return nil
}

// serve runs the kernel server until it ends. A kernel never outlives the
// process that launched it (a Jupyter server that crashed or was killed):
// jupyter_client names it in JPY_PARENT_PID, as ipykernel expects; started
// by hand, no watch.
func (k *kernelRun) serve(srv *kernel.Server, b *bridge.Bridge, sigint, sigterm <-chan os.Signal) error {
	var parentGone <-chan struct{}
	parent := 0
	if pid := kernel.ParentPID(); pid != 0 {
		w := kernel.WatchParent(pid)
		defer w.Close()
		parentGone, parent = w.Gone(), w.Pid()
	}
	sctx, cancelServe := context.WithCancel(context.Background())
	defer cancelServe()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx) }()
	egShutdown, failed := k.egStart(sctx, srv, b, done)
	if failed == nil {
		failed = k.writeBack(srv, done)
	}
	// Going down on a signal or with the parent: the agent's turn stops
	// first, while the server still answers (what streamed is stored,
	// marked partial; the cell gets its reply), then the backing kernel
	// and the panel go, then the server.
	shutdown := func() {
		if err := b.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			k.log.Warn("closing the bridge", "error", err)
		}
		cancelServe()
	}
	orphaned, signalled := false, false
	if failed != nil {
		shutdown()
	}
	for {
		select {
		case <-parentGone:
			parentGone = nil
			orphaned = true
			k.log.Warn("the process that started this kernel is gone; shutting down", "parent", parent)
			shutdown()
		case sig := <-sigterm:
			signalled = true
			k.log.Info("shutting down on signal", "signal", sig)
			shutdown()
		case <-egShutdown:
			signalled = true
			k.log.Info("shutting down: Enterprise Gateway asked on the communication port")
			shutdown()
		case <-sigint:
			ictx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := srv.Interrupt(ictx); err != nil {
				k.log.Warn("interrupt failed", "error", err)
			}
			cancel()
		case err := <-done:
			return k.ended(err, failed, orphaned, signalled)
		}
	}
}

// egStart, launched by Enterprise Gateway, gives EG the connection info
// once the ports are bound, and starts the backing kernel then (a launch
// that cannot reach EG starts nothing). EG may use the communication port
// from then on: a signal there is delivered to this process, a shutdown
// request comes on the returned channel.
func (k *kernelRun) egStart(ctx context.Context, srv *kernel.Server, b *bridge.Bridge, done chan error) (<-chan struct{}, error) {
	if k.egl == nil {
		return nil, nil
	}
	egShutdown := make(chan struct{}, 1)
	k.egl.Listen(eglaunch.Handler{Shutdown: func() {
		select {
		case egShutdown <- struct{}{}:
		default:
		}
	}})
	select {
	case <-srv.Listening():
		if err := k.egl.Reply(ctx); err != nil {
			return egShutdown, fmt.Errorf("kernel: launched by Enterprise Gateway: %w", err)
		}
		b.Start()
	case err := <-done:
		done <- err // the serve loop reports it
	}
	return egShutdown, nil
}

// writeBack, when the connection file leaves ports to the kernel (0, as
// ipykernel allows), writes the file again with the ports the server
// bound, once it listens: the launcher reads them from it.
func (k *kernelRun) writeBack(srv *kernel.Server, done chan error) error {
	if k.connFile == "" || len(k.conn.Unassigned()) == 0 {
		return nil
	}
	select {
	case <-srv.Listening():
	case err := <-done:
		done <- err // the serve loop reports it
		return nil
	}
	if err := wire.WriteConnectionFile(k.connFile, srv.ConnectionInfo()); err != nil {
		return fmt.Errorf("kernel: write the bound ports to the connection file: %w", err)
	}
	return nil
}

// ended is the kernel's exit: the server's end, read with how it came.
func (k *kernelRun) ended(err, failed error, orphaned, signalled bool) error {
	switch {
	case failed != nil:
		return failed
	case orphaned:
		// Nobody is left to remove the connection file.
		if k.connFile != "" {
			if err := os.Remove(k.connFile); err != nil && !errors.Is(err, os.ErrNotExist) {
				k.log.Warn("remove connection file", "error", err)
			}
		}
		return nil
	case signalled && errors.Is(err, context.Canceled):
		return nil
	case err != nil:
		return fmt.Errorf("kernel: %w", err)
	}
	k.log.Info("shut down")
	return nil
}

// setKernelProcs runs the kernel's Go code on one processor unless
// GOMAXPROCS says otherwise. The kernel is an I/O-bound relay whose latency
// is made of thread wake-ups: with more processors, every message that
// readies a goroutine also wakes an idle thread to look for work, which
// costs a system call and, on virtual machines, an inter-processor
// interrupt. Measured with scripts/kernelbench on a 2-core VM: kernel CPU
// per proxied execute 570 → 390–450 µs, execute overhead over ipykernel
// direct +19% → +8–11%. Blocking system calls still run beside it. The
// process's processors are the kernel command's alone: the workspace
// baseline borrows one through the procs it returns.
func setKernelProcs() *procs {
	if os.Getenv("GOMAXPROCS") != "" {
		return &procs{fixed: true}
	}
	runtime.GOMAXPROCS(1)
	return &procs{base: 1}
}

// procs lends background work a processor beside the kernel's: GOMAXPROCS
// is raised by one while any loan is out (two baselines at once, in two
// sessions, share the one), and set back when the last is returned. Its
// methods are safe for concurrent use.
type procs struct {
	mu    sync.Mutex
	base  int  // GOMAXPROCS with nothing lent
	fixed bool // GOMAXPROCS is the user's: lend nothing
	lent  int
}

// lend raises GOMAXPROCS for the caller (checkpoint.Options.Processor) and
// returns the release, which may be called once.
func (p *procs) lend() (release func()) {
	if p.fixed || p.base >= runtime.NumCPU() {
		return func() {}
	}
	p.mu.Lock()
	if p.lent++; p.lent == 1 {
		runtime.GOMAXPROCS(p.base + 1)
	}
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			if p.lent--; p.lent == 0 {
				runtime.GOMAXPROCS(p.base)
			}
			p.mu.Unlock()
		})
	}
}

// splitKernelArgs separates the kernel command's own flags from the
// arguments meant for the backing kernel. Launchers append options for the
// kernel they think they start (nbclient gives kernels named python3
// --HistoryManager.hist_file=:memory:); those go, in order, after the
// backing kernelspec's argv. An argument is ours when its name (without
// dashes, before any "=") is one of fs's flags; a flag of ours without
// "=" takes the next argument as its value unless it is boolean.
func splitKernelArgs(fs *flag.FlagSet, args []string) (ours, passed []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			passed = append(passed, args[i+1:]...)
			break
		}
		name, hasValue := strings.TrimLeft(a, "-"), false
		if n, _, ok := strings.Cut(name, "="); ok {
			name, hasValue = n, true
		}
		f := fs.Lookup(name)
		if !strings.HasPrefix(a, "-") || name == "" || f == nil {
			passed = append(passed, a)
			continue
		}
		ours = append(ours, a)
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); hasValue || (ok && bf.IsBoolFlag()) {
			continue
		}
		if i+1 < len(args) {
			i++
			ours = append(ours, args[i])
		}
	}
	return ours, passed
}
