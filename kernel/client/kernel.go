package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/internal/procguard"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// Kernel is a launched kernel process and the Client connected to it. All
// methods are safe for concurrent use; Interrupt, Restart and Shutdown are
// serialised. Call Shutdown when done, also after the kernel died (it
// releases the client, the connection file and any leftover processes).
type Kernel struct {
	spec     *Spec
	opts     Options
	log      hclog.Logger
	conn     *wire.ConnectionInfo
	connFile string
	ipcDir   string // the private directory of its ipc sockets, or ""
	client   *Client

	ops chan struct{} // cap 1: held by Interrupt, Restart, Shutdown

	mu         sync.Mutex
	proc       *process
	expectExit bool // restarting or shutting down: an exit is not a death
	shut       bool // Shutdown has run
	err        error
	done       chan struct{}
	doneOnce   sync.Once

	wg sync.WaitGroup // one wait goroutine per process
}

// process is one run of the kernel's argv.
type process struct {
	cmd    *exec.Cmd
	pid    int
	exited chan struct{} // closed when Wait returned
	err    error         // Wait's result, set before exited closes
}

func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Start launches spec's kernel with a fresh connection file, in its own
// process group (so a SIGINT to us does not reach it), and returns once the
// kernel is ready: it answered kernel_info and iopub traffic was seen. ctx
// and opts.StartTimeout bound the start only.
//
// An ipykernel gets ipc sockets in a private directory (Options.Transport),
// which nothing else can take. Tcp ports are chosen free and released
// before the kernel binds them, so another process may take one meanwhile
// (jupyter_client has the same race): while the kernel starts, Start
// watches who binds its ports (on Linux), and a kernel that cannot bind
// them (ErrBind) or dies before it is ready (ErrDead) is started again,
// with fresh ports, up to startAttempts times.
func Start(ctx context.Context, spec *Spec, opts Options) (*Kernel, error) {
	if spec == nil || len(spec.Argv) == 0 {
		return nil, errors.New("client: start: kernelspec without argv")
	}
	switch opts.Transport {
	case "", TransportTCP, TransportIPC:
	default:
		return nil, fmt.Errorf("client: start: unknown transport %q", opts.Transport)
	}
	opts = opts.withDefaults()
	var err error
	for attempt := 1; ; attempt++ {
		var k *Kernel
		k, err = startOnce(ctx, spec, opts)
		if err == nil || !(errors.Is(err, ErrDead) || errors.Is(err, ErrBind)) || ctx.Err() != nil || attempt == startAttempts {
			return k, err
		}
		opts.Logger.Warn("kernel failed to start; trying again with fresh ports", "kernel", spec.Name, "attempt", attempt, "error", err)
	}
}

// startAttempts bounds how often Start launches a kernel that keeps dying
// or failing to bind before it is ready.
const startAttempts = 3

func startOnce(ctx context.Context, spec *Spec, opts Options) (*Kernel, error) {
	conn, ipcDir, err := newConnection(spec, opts)
	if err != nil {
		return nil, fmt.Errorf("client: start %s: %w", spec.Name, err)
	}
	conn.KernelName = spec.Name
	if opts.Key != "" {
		conn.Key = opts.Key
	}
	connFile := filepath.Join(opts.ConnectionDir, "kernel-"+uuid.NewString()+".json")
	c, err := newClient(conn, opts)
	if err == nil {
		err = wire.WriteConnectionFile(connFile, conn)
	}
	if err != nil {
		if c != nil {
			c.Close()
		}
		removeIPCDir(ipcDir)
		return nil, fmt.Errorf("client: start %s: %w", spec.Name, err)
	}
	k := &Kernel{
		spec:     spec,
		opts:     opts,
		log:      opts.Logger.Named("kernel").With("kernel", spec.Name),
		conn:     conn,
		connFile: connFile,
		ipcDir:   ipcDir,
		client:   c,
		ops:      make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	c.onDead = k.die
	if err := k.launchAndConnect(ctx); err != nil {
		k.Shutdown(context.Background()) // kills what was launched, removes the file
		return nil, fmt.Errorf("client: start %s: %w", spec.Name, err)
	}
	return k, nil
}

// launchAndConnect starts a process and connects the client to it.
func (k *Kernel) launchAndConnect(ctx context.Context) error {
	p, err := k.launch()
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.proc = p
	k.expectExit = false
	k.mu.Unlock()

	ctx, cancel := context.WithCancelCause(ctx)
	ctx, cancelT := context.WithTimeoutCause(ctx, k.opts.StartTimeout,
		fmt.Errorf("client: kernel not ready within %v", k.opts.StartTimeout))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // fail fast if the process exits while starting
		defer wg.Done()
		select {
		case <-p.exited:
			cancel(fmt.Errorf("%w: process exited while starting: %v", ErrDead, p.err))
		case <-ctx.Done():
		}
	}()
	if probe := proberFor(k.conn); probe != nil {
		wg.Add(1)
		go func() { // fail fast if the kernel cannot bind its ports
			defer wg.Done()
			watchBinding(ctx, k.conn, p.pid, probe, k.opts.BindTimeout, func(err error) { cancel(err) })
		}()
	}
	defer func() {
		cancelT()
		cancel(nil)
		wg.Wait()
	}()
	if err := k.client.connect(ctx); err != nil {
		return err
	}
	return nil
}

// templateRe matches the argv templates jupyter_client substitutes.
var templateRe = regexp.MustCompile(`\{(connection_file|resource_dir)\}`)

// envRe matches ${VAR} in kernelspec env values.
var envRe = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// launch starts the kernel process and the goroutine that waits for it.
func (k *Kernel) launch() (*process, error) {
	argv := make([]string, len(k.spec.Argv), len(k.spec.Argv)+len(k.opts.Args))
	for i, a := range k.spec.Argv {
		argv[i] = templateRe.ReplaceAllStringFunc(a, func(m string) string {
			if m == "{connection_file}" {
				return k.connFile
			}
			return k.spec.Dir
		})
	}
	argv = append(argv, k.opts.Args...)
	argv[0] = resolvePython(argv[0], k.spec.Dir)
	// A restart reuses the names of the sockets: no file of a killed
	// process may pass for the new one's.
	removeSockets(k.conn)
	cmd := exec.Command(argv[0], argv[1:]...)
	env := os.Environ()
	for key, v := range k.spec.Env {
		v = envRe.ReplaceAllStringFunc(v, func(m string) string {
			if val, ok := os.LookupEnv(m[2 : len(m)-1]); ok {
				return val
			}
			return m
		})
		env = append(env, key+"="+v)
	}
	env = append(env, k.opts.Env...)
	// ipykernel exits when this process goes away.
	env = append(env, "JPY_PARENT_PID="+strconv.Itoa(os.Getpid()))
	cmd.Env = env
	cmd.Dir = k.opts.Dir
	stdout := &lineLogger{log: k.log.Named("stdout"), level: hclog.Debug}
	stderr := &lineLogger{log: k.log.Named("stderr"), level: hclog.Info}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A grandchild holding the pipes must not delay noticing the exit.
	cmd.WaitDelay = time.Second
	// Its own process group, which ends with us however we end.
	if err := procguard.Start(cmd); err != nil {
		return nil, fmt.Errorf("client: launch %q: %w", argv[0], err)
	}
	p := &process{cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{})}
	k.log.Debug("launched", "pid", p.pid, "argv", argv)
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		err := cmd.Wait()
		stdout.flush()
		stderr.flush()
		// Leftovers of the group (the kernel's children) go with it.
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		procguard.Release(cmd)
		p.err = err
		close(p.exited)
		k.exited(p)
	}()
	return p, nil
}

// exited handles the exit of p: unless expected, the kernel is dead.
func (k *Kernel) exited(p *process) {
	k.mu.Lock()
	unexpected := k.proc == p && !k.expectExit && !k.shut
	k.mu.Unlock()
	if unexpected {
		k.log.Warn("kernel process exited", "pid", p.pid, "error", p.err)
		k.markDead(fmt.Errorf("%w: process %d exited: %v", ErrDead, p.pid, exitStatus(p.err)))
	} else {
		k.log.Debug("kernel process exited", "pid", p.pid, "error", p.err)
	}
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// die reports an unexpected death (the heartbeat stopped): ignored while a
// restart or shutdown is stopping the process on purpose.
func (k *Kernel) die(err error) {
	k.mu.Lock()
	expected := k.expectExit || k.shut
	k.mu.Unlock()
	if expected {
		k.log.Debug("ignoring heartbeat failure while stopping", "error", err)
		return
	}
	k.markDead(err)
}

// markDead marks the kernel dead for good (err wraps ErrDead): Done closes,
// requests fail, and the process group is killed.
func (k *Kernel) markDead(err error) {
	k.doneOnce.Do(func() {
		k.mu.Lock()
		k.err = err
		p := k.proc
		k.mu.Unlock()
		// Pending requests learn of the death before Done closes: a
		// watcher of Done may Close the client, and requests failed by
		// Close would not wrap ErrDead.
		k.client.fail(err)
		close(k.done)
		if p != nil && !p.hasExited() {
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		}
	})
}

// Client returns the client connected to the kernel. It stays valid across
// Restart and is closed by Shutdown.
func (k *Kernel) Client() *Client { return k.client }

// Spec returns the kernelspec the kernel was started from.
func (k *Kernel) Spec() *Spec { return k.spec }

// ConnectionFile returns the path of the kernel's connection file.
func (k *Kernel) ConnectionFile() string { return k.connFile }

// ConnectionInfo returns a copy of the kernel's connection info.
func (k *Kernel) ConnectionInfo() *wire.ConnectionInfo {
	ci := *k.conn
	return &ci
}

// Done returns a channel closed when the kernel is gone for good: its
// process exited unexpectedly, its heartbeat stopped, or Shutdown ran. A
// Restart does not close it.
func (k *Kernel) Done() <-chan struct{} { return k.done }

// Err returns why the kernel died (wrapping ErrDead), or nil while it runs
// and after a clean Shutdown.
func (k *Kernel) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Pid returns the process id of the current kernel process, which is also
// its process group id.
func (k *Kernel) Pid() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.proc == nil {
		return 0
	}
	return k.proc.pid
}

func (k *Kernel) acquire(ctx context.Context) error {
	select { // a free slot wins over a done ctx
	case k.ops <- struct{}{}:
		return nil
	default:
	}
	select {
	case k.ops <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (k *Kernel) release() { <-k.ops }

// alive returns the current process, or an error if the kernel is dead or
// shut down.
func (k *Kernel) alive() (*process, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.shut:
		return nil, fmt.Errorf("client: kernel shut down: %w", net.ErrClosed)
	case k.err != nil:
		return nil, k.err
	case k.proc == nil:
		return nil, fmt.Errorf("%w: no process", ErrDead)
	}
	return k.proc, nil
}

// Interrupt interrupts the kernel as its spec says: interrupt_mode
// "message" sends interrupt_request on control and waits for the reply;
// otherwise SIGINT goes to the kernel's process group.
func (k *Kernel) Interrupt(ctx context.Context) error {
	if err := k.acquire(ctx); err != nil {
		return fmt.Errorf("client: interrupt: %w", err)
	}
	defer k.release()
	p, err := k.alive()
	if err != nil {
		return fmt.Errorf("client: interrupt: %w", err)
	}
	if k.spec.InterruptMode == "message" {
		if _, err := k.client.do(ctx, Request{Channel: wire.Control, MsgType: wire.MsgInterruptRequest}, Handlers{}, false); err != nil {
			return fmt.Errorf("client: interrupt: %w", err)
		}
		return nil
	}
	if err := syscall.Kill(-p.pid, syscall.SIGINT); err != nil {
		return fmt.Errorf("client: interrupt: signal process group %d: %w", p.pid, err)
	}
	return nil
}

// Restart shuts the kernel down with restart=true (gracefully, then by
// killing its process group), launches it again with the same connection
// info and waits until it is ready. Requests pending meanwhile fail with an
// error wrapping ErrDead; the Client keeps working afterwards. If the new
// process does not come up the kernel is dead (Done closes).
func (k *Kernel) Restart(ctx context.Context) error {
	if err := k.acquire(ctx); err != nil {
		return fmt.Errorf("client: restart: %w", err)
	}
	defer k.release()
	p, err := k.alive()
	if err != nil {
		return fmt.Errorf("client: restart: %w", err)
	}
	k.mu.Lock()
	k.expectExit = true
	k.mu.Unlock()
	if err := k.stop(ctx, p, true); err != nil {
		k.markDead(fmt.Errorf("%w: restart: %v", ErrDead, err))
		return fmt.Errorf("client: restart: %w", err)
	}
	k.client.unlink(fmt.Errorf("%w: kernel restarted", ErrDead))
	if err := k.launchAndConnect(ctx); err != nil {
		if !errors.Is(err, ErrDead) {
			err = fmt.Errorf("%w: restart: %v", ErrDead, err)
		}
		k.markDead(err)
		return fmt.Errorf("client: restart: %w", err)
	}
	return nil
}

// stop ends p: shutdown_request on control and a wait for the exit, bounded
// by ctx and ShutdownTimeout, then SIGKILL to the process group.
func (k *Kernel) stop(ctx context.Context, p *process, restart bool) error {
	if !p.hasExited() && k.client.connected() {
		gctx, cancel := context.WithTimeout(ctx, k.opts.ShutdownTimeout)
		_, err := k.client.do(gctx, Request{
			Channel: wire.Control,
			MsgType: wire.MsgShutdownRequest,
			Content: map[string]bool{"restart": restart},
		}, Handlers{}, false)
		if err != nil {
			k.log.Debug("shutdown_request failed", "error", err)
		} else {
			select {
			case <-p.exited:
			case <-gctx.Done():
			}
		}
		cancel()
	}
	if !p.hasExited() {
		k.log.Debug("killing kernel process group", "pid", p.pid)
		if err := syscall.Kill(-p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			k.log.Warn("kill kernel process group", "pid", p.pid, "error", err)
		}
	}
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("process %d did not exit after SIGKILL", p.pid)
	}
	k.waitGroupGone(p.pid)
	return nil
}

// waitGroupGone waits briefly until no process of group pgid is left (the
// wait goroutine SIGKILLs the group once its leader exited, but the kill is
// asynchronous and orphans are reaped by init).
func (k *Kernel) waitGroupGone(pgid int) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := syscall.Kill(-pgid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			k.log.Warn("kernel process group still has members", "pgid", pgid, "error", err)
			return
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		time.Sleep(10 * time.Millisecond)
	}
}

// Shutdown stops the kernel: shutdown_request on control, a wait for the
// process to exit (bounded by ctx and Options.ShutdownTimeout), then
// SIGKILL to its process group. It closes the Client, removes the
// connection file and the directory of the ipc sockets, and closes Done.
// A second call returns nil.
func (k *Kernel) Shutdown(ctx context.Context) error {
	if err := k.acquire(ctx); err != nil {
		// A Restart or Interrupt holds the kernel past ctx.
		return fmt.Errorf("client: shutdown: %w", err)
	}
	defer k.release()
	k.mu.Lock()
	if k.shut {
		k.mu.Unlock()
		return nil
	}
	k.shut = true
	p := k.proc
	k.mu.Unlock()
	var err error
	if p != nil {
		err = k.stop(ctx, p, false)
	}
	k.client.Close()
	k.wg.Wait()
	if rmErr := os.Remove(k.connFile); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) && err == nil {
		err = rmErr
	}
	if rmErr := removeIPCDir(k.ipcDir); rmErr != nil && err == nil {
		err = rmErr
	}
	k.doneOnce.Do(func() { close(k.done) })
	if err != nil {
		return fmt.Errorf("client: shutdown: %w", err)
	}
	return nil
}

// lineLogger writes each line of a child's output to a logger.
type lineLogger struct {
	log   hclog.Logger
	level hclog.Level
	mu    sync.Mutex
	buf   []byte
}

// maxLine caps a buffered partial line.
const maxLine = 64 << 10

func (w *lineLogger) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > maxLine {
		w.emit(w.buf)
		w.buf = nil
	}
	return len(b), nil
}

func (w *lineLogger) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = nil
	}
}

func (w *lineLogger) emit(line []byte) {
	s := strings.TrimRight(string(line), "\r")
	if s == "" {
		return
	}
	w.log.Log(w.level, "output", "line", s)
}
