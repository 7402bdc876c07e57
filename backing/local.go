package backing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// LocalOptions configure NewLocal. The zero value works: python3 in the
// current directory.
type LocalOptions struct {
	// Kernel names the kernelspec, looked up with Find (never agentkernel
	// itself). Default "python3". A lookup that fails is retried at the
	// next use: the kernelspec may be installed meanwhile.
	Kernel string
	// KernelDir is the directory where the kernelspec was found when the
	// agentkernel was installed (install --backing-dir): used when the
	// search by name finds none, as in a kernel a gateway starts without
	// $HOME or $JUPYTER_PATH. Optional.
	KernelDir string
	// Args are appended to the kernelspec's argv (the launcher's arguments
	// that were meant for the kernel).
	Args []string
	// Env holds extra KEY=VALUE entries for the kernel; the chain mark
	// (Mark) is always added.
	Env []string
	// Dir is the kernel's working directory. Default: ours.
	Dir string
	// Owner is the kernelspec name of the agentkernel that owns this
	// runner, for the chain mark. Optional.
	Owner string
	// Refuse, when set, is why no kernel may be started (this process is
	// itself a backing kernel: CheckNested). Every request fails with it.
	Refuse error
	// Key, when set, is the kernel's signing key (client.Options.Key):
	// the key of the frontend of the agentkernel that owns the runner, so
	// that the kernel's outputs reach the frontend as the kernel signed
	// them. Default: a fresh key.
	Key string
	// OnIOPub receives the kernel's iopub messages that belong to no
	// pending request (late output of a finished cell, widgets). It runs on
	// the client's goroutine: it must not block.
	OnIOPub func(*wire.Message)
	// StartTimeout bounds a start. Default 60s.
	StartTimeout time.Duration
	// InterruptGrace is how long Execute waits for the kernel's reply
	// after interrupting it when its ctx ends. Default 10s.
	InterruptGrace time.Duration
	// Logger; default a null logger.
	Logger hclog.Logger
}

func (o LocalOptions) withDefaults() LocalOptions {
	if o.Kernel == "" {
		o.Kernel = "python3"
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.InterruptGrace <= 0 {
		o.InterruptGrace = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return o
}

// Local is a Runner over a kernelspec on this machine, launched with
// kernel/client. Close shuts its kernel down; use after Close fails with
// net.ErrClosed.
type Local struct {
	opts LocalOptions
	log  hclog.Logger

	ctx    context.Context // lifetime: bounds starts and replies after an interrupt
	cancel context.CancelFunc
	wg     sync.WaitGroup // start goroutines and death watchers

	kernels *starter[*client.Kernel]

	mu   sync.Mutex // never held across I/O
	spec *client.Spec
	info *infoCache
}

var _ Runner = (*Local)(nil)

// NewLocal returns a Local. It starts nothing; the kernelspec is looked up
// at once (a failure is logged, and retried at the first use).
func NewLocal(opts LocalOptions) *Local {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	l := &Local{
		opts:   opts,
		log:    opts.Logger.Named("backing"),
		ctx:    ctx,
		cancel: cancel,
	}
	l.kernels = newStarter(&l.wg, l.launch, func(k *client.Kernel) bool { return !isDone(k) }, l.shutdown)
	var spec *client.Spec
	if opts.Refuse == nil {
		var err error
		if spec, err = l.kernelSpec(); err != nil {
			l.log.Warn("no backing kernel", "error", err)
		}
	}
	l.info = newInfoCache(infoKey(opts.Kernel, spec))
	return l
}

// kernelSpec returns the kernelspec, looking it up until found.
func (l *Local) kernelSpec() (*client.Spec, error) {
	if l.opts.Refuse != nil {
		return nil, l.opts.Refuse
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.spec != nil {
		return l.spec, nil
	}
	spec, err := Find(l.opts.Kernel)
	if err != nil && l.opts.KernelDir != "" && errors.Is(err, client.ErrNoSpec) && !errors.Is(err, ErrSelf) {
		if s, derr := client.ReadSpec(l.opts.KernelDir); derr == nil && !IsAgentKernel(s) {
			spec, err = s, nil
		} else if derr != nil {
			err = errors.Join(err, derr)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("backing kernel: %w", err)
	}
	l.spec = spec
	return spec, nil
}

// Describe implements Runner.
func (l *Local) Describe() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.spec != nil && l.spec.DisplayName != "" {
		return l.spec.DisplayName
	}
	return l.opts.Kernel
}

// Start implements Runner.
func (l *Local) Start() {
	if l.opts.Refuse == nil {
		l.kernels.start()
	}
}

// Running implements Runner.
func (l *Local) Running() bool {
	_, ok := l.kernels.current()
	return ok
}

// waiters returns how many requests wait for a start.
func (l *Local) waiters() int { return l.kernels.waiters() }

func isDone(k *client.Kernel) bool {
	select {
	case <-k.Done():
		return true
	default:
		// A death is recorded, and the requests failed, just before Done
		// closes: a request answered with the death must not be followed
		// by one sent to the same kernel.
		return k.Err() != nil
	}
}

// launch starts one kernel and the goroutine that notices its death.
func (l *Local) launch() (*client.Kernel, error) {
	spec, err := l.kernelSpec()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(l.ctx, l.opts.StartTimeout)
	defer cancel()
	k, err := client.Start(ctx, spec, client.Options{
		Logger:  l.log,
		Dir:     l.opts.Dir,
		OnIOPub: l.opts.OnIOPub,
		Key:     l.opts.Key,
		Env:     append(slices.Clip(l.opts.Env), Mark(l.opts.Owner)),
		Args:    l.opts.Args,
	})
	if err != nil {
		if l.ctx.Err() != nil {
			// Shut down while the kernel started (a kernel closed early).
			l.log.Debug("backing kernel start stopped by shutdown", "kernel", l.opts.Kernel)
		} else {
			l.log.Error("backing kernel failed to start", "kernel", l.opts.Kernel, "error", err)
		}
		return nil, fmt.Errorf("start backing kernel %q: %w", l.opts.Kernel, err)
	}
	l.log.Info("backing kernel ready", "kernel", l.opts.Kernel, "pid", k.Pid(), "elapsed", time.Since(start))
	if rep, err := k.Client().KernelInfo(ctx); err == nil {
		if err := l.info.learn(rep, spec); err != nil {
			l.log.Debug("cache language_info failed", "error", err)
		}
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		select {
		case <-k.Done():
			if cur, _ := l.kernels.current(); cur == k && l.ctx.Err() == nil {
				l.log.Warn("backing kernel died", "pid", k.Pid(), "error", k.Err())
			}
			l.shutdown(k) // releases its sockets and connection file
		case <-l.ctx.Done():
		}
	}()
	return k, nil
}

// kernel returns a live kernel, starting one if none runs (first use, or
// the last one died). An Interrupt while it waits ends it with
// ErrInterrupted.
func (l *Local) kernel(ctx context.Context) (*client.Kernel, error) {
	if l.opts.Refuse != nil {
		return nil, l.opts.Refuse
	}
	return l.kernels.get(ctx)
}

// Ready implements Runner.
func (l *Local) Ready(ctx context.Context) error {
	_, err := l.kernel(ctx)
	return err
}

// Do implements Runner.
func (l *Local) Do(ctx context.Context, req client.Request, h client.Handlers) (*wire.Message, error) {
	k, err := l.kernel(ctx)
	if err != nil {
		return nil, err
	}
	return k.Client().Do(ctx, req, h)
}

// Execute implements Runner.
func (l *Local) Execute(ctx context.Context, e Exec) (Result, error) {
	k, err := l.kernel(ctx)
	if err != nil {
		return Result{}, err
	}
	res, err := runCell(ctx, l.ctx, l.opts.InterruptGrace, l.log, e, k.Interrupt, k.Client().Do)
	switch {
	case errors.Is(err, client.ErrDead):
		return res, fmt.Errorf("%w: the backing kernel (%s) died while running the code; it restarts at the next execution",
			client.ErrDead, l.opts.Kernel)
	case ctx.Err() != nil:
		return res, ctx.Err()
	case err != nil:
		return res, fmt.Errorf("backing: execute: %w", err)
	}
	return res, nil
}

// Interrupt implements Runner: the running kernel is interrupted (by
// signal or message, as its kernelspec says); requests waiting for a start
// end with ErrInterrupted.
func (l *Local) Interrupt(ctx context.Context) error {
	k, ok := l.kernels.interrupt()
	if !ok {
		return nil
	}
	if err := k.Interrupt(ctx); err != nil {
		return fmt.Errorf("backing: interrupt: %w", err)
	}
	return nil
}

// Restart implements Runner: a fresh kernel is started first and takes
// over; the old one is shut down behind it, so a restart costs a start-up,
// not a shutdown and then a start-up.
func (l *Local) Restart(ctx context.Context) error {
	if l.opts.Refuse != nil {
		return l.opts.Refuse
	}
	fresh, err := l.launch()
	if err != nil {
		return fmt.Errorf("backing: restart: %w", err)
	}
	old := l.kernels.replace(fresh)
	if old == fresh {
		l.shutdown(fresh)
		return fmt.Errorf("backing: restart: %w", net.ErrClosed)
	}
	if old != nil {
		l.wg.Add(1)
		go func() { // owned by l: Close waits for it
			defer l.wg.Done()
			l.shutdown(old)
		}()
	}
	return nil
}

// Generation implements Generations.
func (l *Local) Generation() int { return l.kernels.generation() }

// LanguageInfo implements Runner.
func (l *Local) LanguageInfo(ctx context.Context) json.RawMessage {
	return l.info.wait(ctx, l.kernels.starting()).LanguageInfo
}

// Debugger implements Runner.
func (l *Local) Debugger() bool { return l.info.get().Debugger }

// Subshells reports whether the kernel offers kernel subshells (protocol
// 5.5), as far as LanguageInfo knows.
func (l *Local) Subshells() bool { return l.info.get().subshells() }

func (l *Local) shutdown(k *client.Kernel) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.Shutdown(ctx); err != nil {
		l.log.Debug("backing kernel shutdown", "error", err)
	}
}

// Close implements Runner. A second call returns net.ErrClosed.
func (l *Local) Close() error {
	k, ok := l.kernels.close()
	if !ok {
		return net.ErrClosed
	}
	var err error
	if k != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if serr := k.Shutdown(ctx); serr != nil {
			err = fmt.Errorf("backing: shut down the kernel: %w", serr)
		}
		cancel()
	}
	l.cancel() // ends a start; a kernel it made is shut down by the starter
	l.wg.Wait()
	return err
}
