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
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/models"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/bridge"
	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/eglaunch"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/mcp"
	"github.com/agentkernel/agentkernel/notebooks"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
)

func runKernel(args []string, stderr io.Writer) error {
	fs := newFlagSet("kernel", "kernel -f CONNECTION_FILE [flags]", stderr)
	connFile := fs.String("f", "", "connection file written by Jupyter (required unless launched by Enterprise Gateway)")
	backingName := fs.String("backing", "python3", "kernelspec of the backing kernel")
	modeName := fs.String("mode", "code", "kernel mode: code or prompt")
	model := fs.String("model", "", "model for new sessions (default $AGENTKERNEL_MODEL, then the config file)")
	record := fs.String("record", os.Getenv("AGENTKERNEL_RECORD"), "record the model's answers to this cassette `FILE`")
	gwFlags := addGatewayFlags(fs)
	storeArg := storeFlag(fs)
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
		return err
	}
	if *connFile == "" {
		egOpts = egOpts.Or(eglaunch.FromEnv(os.Getenv))
	}
	switch {
	case *connFile == "" && !egOpts.Enabled():
		fs.Usage()
		return errors.New("kernel: -f CONNECTION_FILE is required (or Enterprise Gateway's --response-address)")
	case *connFile != "" && egOpts.Enabled():
		return errors.New("kernel: -f CONNECTION_FILE and Enterprise Gateway's --response-address exclude each other")
	}
	mode, err := bridge.ParseMode(*modeName)
	if err != nil {
		return err
	}
	log, err := newLogger(stderr)
	if err != nil {
		return err
	}
	setKernelProcs()
	if path := os.Getenv("AGENTKERNEL_CPUPROFILE"); path != "" {
		// %p in the path becomes the process id: a benchmark that starts
		// several kernels gets one profile each.
		path = strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid()))
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	var conn *wire.ConnectionInfo
	var eg *eglaunch.Launch
	if egOpts.Enabled() {
		// Launched by Enterprise Gateway: the ports, key and transport are
		// ours to pick; bad arguments fail here, before anything starts.
		eg, err = eglaunch.Prepare(egOpts, eglaunch.Config{
			MinPortRangeSize: eglaunch.MinPortRangeSizeFromEnv(os.Getenv), Logger: log})
		if err != nil {
			return fmt.Errorf("kernel: launched by Enterprise Gateway: %w", err)
		}
		defer eg.Close()
		conn = eg.ConnectionInfo()
	} else if conn, err = wire.ReadConnectionFile(*connFile); err != nil {
		return err
	}
	nested := backing.CheckNested()
	if nested != nil {
		log.Error("refusing to start a backing kernel", "reason", nested)
		if len(passed) > 0 {
			log.Warn("no backing kernel to pass the arguments to", "args", passed)
		}
	} else if len(passed) > 0 {
		log.Debug("arguments for the backing kernel", "args", passed)
	}

	// SIGINT interrupts (signal interrupt mode) instead of killing us;
	// SIGTERM and SIGHUP shut down cleanly.
	sigint := make(chan os.Signal, 1)
	signal.Notify(sigint, os.Interrupt)
	defer signal.Stop(sigint)
	sigterm := make(chan os.Signal, 1)
	signal.Notify(sigterm, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigterm)

	bcfg, err := agentConfig(*model, *record, log)
	if err != nil {
		return err
	}
	defer bcfg.Host.EventLog.Close() // after the bridge (deferred below) has closed
	bcfg.Backing, bcfg.Mode, bcfg.Logger, bcfg.Version = *backingName, mode, log, versionString()
	bcfg.BackingArgs, bcfg.Name, bcfg.Refuse = passed, conn.KernelName, nested
	bcfg.Host.StoreURL = firstNonEmpty(*storeArg, bcfg.Host.StoreURL)
	if bcfg.Gateway, err = gwFlags.resolve(); err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	b, err := bridge.New(bcfg)
	if err != nil {
		return err
	}
	if eg == nil {
		b.Start()
	}
	defer func() {
		if err := b.Close(); err != nil && !errors.Is(err, net.ErrClosed) { // shutdown may have closed it
			log.Warn("closing the bridge", "error", err)
		}
	}()
	srv, err := kernel.New(kernel.Config{Conn: conn, Handler: b, Logger: log})
	if err != nil {
		return err
	}

	// A kernel never outlives the process that launched it (a Jupyter
	// server that crashed or was killed): jupyter_client names it in
	// JPY_PARENT_PID, as ipykernel expects. Started by hand, no watch.
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
	// Launched by Enterprise Gateway: once the ports are bound, EG gets the
	// connection info and may use the communication port; a signal there
	// is delivered to this process (SIGINT interrupts, SIGTERM shuts down,
	// as below), a shutdown request shuts down.
	var egShutdown chan struct{}
	var failed error
	if eg != nil {
		egShutdown = make(chan struct{}, 1)
		eg.Listen(eglaunch.Handler{Shutdown: func() {
			select {
			case egShutdown <- struct{}{}:
			default:
			}
		}})
		select {
		case <-srv.Listening():
			// The backing kernel starts once EG knows where we are: a launch
			// that cannot reach EG starts nothing.
			if err := eg.Reply(sctx); err != nil {
				failed = fmt.Errorf("kernel: launched by Enterprise Gateway: %w", err)
			} else {
				b.Start()
			}
		case err := <-done:
			done <- err // the loop below reports it
		}
	}
	// Going down on a signal or with the parent: the agent's turn stops
	// first, while the server still answers (what streamed is stored,
	// marked partial; the cell gets its reply), then the backing kernel
	// and the panel go, then the server.
	shutdown := func() {
		if err := b.Close(); err != nil && !errors.Is(err, net.ErrClosed) { // shutdown may have closed it
			log.Warn("closing the bridge", "error", err)
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
			log.Warn("the process that started this kernel is gone; shutting down", "parent", parent)
			shutdown()
		case sig := <-sigterm:
			signalled = true
			log.Info("shutting down on signal", "signal", sig)
			shutdown()
		case <-egShutdown:
			signalled = true
			log.Info("shutting down: Enterprise Gateway asked on the communication port")
			shutdown()
		case <-sigint:
			ictx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := srv.Interrupt(ictx); err != nil {
				log.Warn("interrupt failed", "error", err)
			}
			cancel()
		case err := <-done:
			if failed != nil {
				return failed
			}
			if orphaned {
				// Nobody is left to remove the connection file.
				if *connFile == "" {
					return nil
				}
				if err := os.Remove(*connFile); err != nil && !errors.Is(err, os.ErrNotExist) {
					log.Warn("remove connection file", "error", err)
				}
				return nil
			}
			if signalled && errors.Is(err, context.Canceled) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("kernel: %w", err)
			}
			log.Info("shut down")
			return nil
		}
	}
}

// agentConfig gathers the agent's settings: flags, then the environment
// (AGENTKERNEL_MODEL, AGENTKERNEL_APPROVE, AGENTKERNEL_PERMISSION_MODE,
// AGENTKERNEL_DATA_DIR), then the config file. The caller closes its
// EventLog.
//
// A setting it cannot use (a broken config file, an unknown approval
// policy or permission mode) is left at its default and reported in the
// config's Problems: a kernel must start and say what is wrong, where
// exiting before kernel_info would show a dead kernel and no message.
// ask and run make them errors (see configErr).
func agentConfig(model, record string, log hclog.Logger) (bridge.Config, error) {
	var problems []string
	fc, err := loadConfig()
	if err != nil {
		problems = append(problems, err.Error()+" (the whole file is ignored until it is fixed)")
	}
	approve, err := agent.ParseApprovalPolicy(firstNonEmpty(os.Getenv("AGENTKERNEL_APPROVE"), fc.Approve))
	if err != nil {
		problems = append(problems, "approval policy: "+err.Error()+" (using none)")
		approve = agent.ApproveNone
	}
	var pmode agent.Mode
	if m := firstNonEmpty(os.Getenv("AGENTKERNEL_PERMISSION_MODE"), fc.Mode); m != "" {
		if pmode, err = agent.ParseMode(m); err != nil {
			problems = append(problems, "permission mode: "+err.Error()+" (using default)")
			pmode = ""
		}
	}
	for _, p := range problems {
		log.Error("configuration problem", "problem", p)
	}
	prices := fc.prices()
	dataDir := os.Getenv("AGENTKERNEL_DATA_DIR")
	return bridge.Config{
		Approve:  approve,
		Reaper:   reaper(),
		Problems: problems,
		Host: session.Config{
			DataDir:        dataDir,
			StoreURL:       storeURL("", fc),
			Hooks:          fc.Hooks,
			Checkpoints:    fc.Checkpoints.options(),
			EventLog:       fc.eventLog(dataDir, log),
			Source:         eventlog.Source(os.Getenv(envEventSource)),
			Model:          models.Resolve(model, os.Getenv("AGENTKERNEL_MODEL"), fc.Model),
			PermissionMode: pmode,
			Allow:          fc.Allow,
			Deny:           fc.Deny,
			MCPServers:     fc.MCPServers,
			MCP:            mcp.Options{UserDir: filepath.Dir(configPath())},
			Notebook: func(w io.Writer, s store.Session, h store.Histories) error {
				nb, err := sessionNotebook(s, h, nil)
				if err != nil {
					return err
				}
				return notebooks.Write(w, nb)
			},
			OpenModel: func(spec string) (provider.Provider, error) {
				return models.Open(spec, models.Options{Prices: prices, Record: record})
			},
		},
	}, nil
}

// configErr is the error of the commands that must not run on a broken
// configuration (ask, run): all of cfg's problems.
func configErr(cfg bridge.Config) error {
	if len(cfg.Problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(cfg.Problems, "\n"))
}

// setKernelProcs runs the kernel's Go code on one processor unless
// GOMAXPROCS says otherwise. The kernel is an I/O-bound relay whose latency
// is made of thread wake-ups: with more processors, every message that
// readies a goroutine also wakes an idle thread to look for work, which
// costs a system call and, on virtual machines, an inter-processor
// interrupt. Measured with scripts/kernelbench on a 2-core VM: kernel CPU
// per proxied execute 570 → 390–450 µs, execute overhead over ipykernel
// direct +19% → +8–11%. Blocking system calls still run beside it.
func setKernelProcs() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
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
