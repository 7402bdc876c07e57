package kernel

import (
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ParentPID returns the process that launched this kernel as jupyter_client
// records it in JPY_PARENT_PID, or 0 when it is not set (a kernel started by
// hand), is not a process id, or is 1 (init never goes away, it is only
// replaced). ipykernel watches the same variable.
func ParentPID() int {
	pid, err := strconv.Atoi(os.Getenv("JPY_PARENT_PID"))
	if err != nil || pid <= 1 {
		return 0
	}
	return pid
}

// ParentWatcher tells when the process that launched the kernel is gone, so
// that a kernel never outlives a server that crashed or was killed. Gone
// and Pid are safe from any goroutine; Close stops the watch and waits for
// it, and is idempotent.
type ParentWatcher struct {
	pid   int
	gone  chan struct{}
	stop  chan struct{}
	close func() // unblocks the wait (pidfd); nil when polling
	once  sync.Once
	wg    sync.WaitGroup
}

// WatchParent watches process pid: with a pidfd on Linux (no polling),
// elsewhere or when pidfd_open is not available by polling every
// pollInterval. When pid is not running at the start (a JPY_PARENT_PID
// inherited through a wrapper that is gone already), the parent at start,
// os.Getppid, is watched instead.
func WatchParent(pid int) *ParentWatcher {
	if !alive(pid) {
		pid = os.Getppid()
	}
	return watch(pid, pidWaiter)
}

// watch starts the watch of pid with waiter, or by polling when waiter
// cannot wait for it.
func watch(pid int, waiter func(int) (func() bool, func(), bool)) *ParentWatcher {
	w := &ParentWatcher{pid: pid, gone: make(chan struct{}), stop: make(chan struct{})}
	w.wg.Add(1)
	if wait, unblock, ok := waiter(pid); ok {
		w.close = unblock
		go func() {
			defer w.wg.Done()
			if wait() {
				close(w.gone)
			}
		}()
		return w
	}
	go func() {
		defer w.wg.Done()
		w.poll()
	}()
	return w
}

// pollInterval is how often the fallback checks the parent.
const pollInterval = 500 * time.Millisecond

// poll checks pid until it is gone or Close is called. A parent that died
// but was not yet reaped still answers kill(pid, 0), so the kernel's own
// parent is also judged by whether we were reparented.
func (w *ParentWatcher) poll() {
	ppid := os.Getppid()
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		if (w.pid == ppid && os.Getppid() != ppid) || !alive(w.pid) {
			close(w.gone)
			return
		}
	}
}

// alive reports whether a process with the id exists (it may be a zombie).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// Pid returns the process being watched.
func (w *ParentWatcher) Pid() int { return w.pid }

// Gone is closed when the watched process has exited.
func (w *ParentWatcher) Gone() <-chan struct{} { return w.gone }

// Close stops watching and waits for the watch to end. A second call
// returns net.ErrClosed.
func (w *ParentWatcher) Close() error {
	err := net.ErrClosed
	w.once.Do(func() {
		err = nil
		close(w.stop)
		if w.close != nil {
			w.close()
		}
	})
	w.wg.Wait()
	return err
}
