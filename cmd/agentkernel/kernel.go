package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/models"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/bridge"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/notebooks"
	"github.com/agentkernel/agentkernel/store"
)

func runKernel(args []string, stderr io.Writer) error {
	fs := newFlagSet("kernel", "kernel -f CONNECTION_FILE [flags]", stderr)
	connFile := fs.String("f", "", "connection file written by Jupyter (required)")
	backingName := fs.String("backing", "python3", "kernelspec of the backing kernel")
	modeName := fs.String("mode", "code", "kernel mode: code or prompt")
	model := fs.String("model", "", "model for new sessions (default $AGENTKERNEL_MODEL, then the config file)")
	record := fs.String("record", os.Getenv("AGENTKERNEL_RECORD"), "record the model's answers to this cassette `FILE`")
	gwFlags := addGatewayFlags(fs)
	storeArg := storeFlag(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: agentkernel kernel -f CONNECTION_FILE [flags] [BACKING_ARGS...]\n\n"+
			"Other arguments (--Class.trait=value, --name=value, --flag) go to the backing kernel's\n"+
			"command line, as launchers such as nbclient expect of a python3 kernel.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	ours, passed := splitKernelArgs(fs, args)
	if err := fs.Parse(ours); err != nil {
		return err
	}
	if *connFile == "" {
		fs.Usage()
		return errors.New("kernel: -f CONNECTION_FILE is required")
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
	conn, err := wire.ReadConnectionFile(*connFile)
	if err != nil {
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

	bcfg, err := agentConfig(*model, *record)
	if err != nil {
		return err
	}
	bcfg.Backing, bcfg.Mode, bcfg.Logger, bcfg.Version = *backingName, mode, log, versionString()
	bcfg.BackingArgs, bcfg.Name, bcfg.Refuse = passed, conn.KernelName, nested
	bcfg.Store = firstNonEmpty(*storeArg, bcfg.Store)
	if bcfg.Gateway, err = gwFlags.resolve(); err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	b, err := bridge.New(bcfg)
	if err != nil {
		return err
	}
	b.Start()
	defer func() {
		if err := b.Close(); err != nil {
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
	// Going down on a signal or with the parent: the agent's turn stops
	// first, while the server still answers (what streamed is stored,
	// marked partial; the cell gets its reply), then the backing kernel
	// and the panel go, then the server.
	shutdown := func() {
		if err := b.Close(); err != nil {
			log.Warn("closing the bridge", "error", err)
		}
		cancelServe()
	}
	orphaned, signalled := false, false
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
		case <-sigint:
			ictx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := srv.Interrupt(ictx); err != nil {
				log.Warn("interrupt failed", "error", err)
			}
			cancel()
		case err := <-done:
			if orphaned {
				// Nobody is left to remove the connection file.
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
// AGENTKERNEL_DATA_DIR), then the config file.
func agentConfig(model, record string) (bridge.Config, error) {
	fc, err := loadConfig()
	if err != nil {
		return bridge.Config{}, err
	}
	approve, err := agent.ParseApprovalPolicy(firstNonEmpty(os.Getenv("AGENTKERNEL_APPROVE"), fc.Approve))
	if err != nil {
		return bridge.Config{}, err
	}
	var pmode agent.Mode
	if m := firstNonEmpty(os.Getenv("AGENTKERNEL_PERMISSION_MODE"), fc.Mode); m != "" {
		if pmode, err = agent.ParseMode(m); err != nil {
			return bridge.Config{}, err
		}
	}
	prices := fc.prices()
	return bridge.Config{
		DataDir:        os.Getenv("AGENTKERNEL_DATA_DIR"),
		Store:          storeURL("", fc),
		Model:          models.Resolve(model, os.Getenv("AGENTKERNEL_MODEL"), fc.Model),
		Approve:        approve,
		PermissionMode: pmode,
		Allow:          fc.Allow,
		Deny:           fc.Deny,
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
	}, nil
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
