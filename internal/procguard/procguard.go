// Package procguard starts child processes that end with this process,
// however it ends: a clean exit, a crash, or a SIGKILL that gives it no time
// to stop anything (jupyter_client's shutdown_kernel(now=True), a gateway's
// cull, the OOM killer). What the children start ends too, as long as it
// stays in their process group: node's Claude Code under claude-agent-acp,
// a hook's sleep, the subprocesses of code in a backing kernel.
//
// Start a child with Start instead of cmd.Start, and call Release once
// cmd.Wait has returned:
//
//	if err := procguard.Start(cmd); err != nil {
//		return err
//	}
//	err := cmd.Wait()
//	procguard.Release(cmd)
//
// How: Start makes the child the leader of a process group of its own and
// tells a watcher of the group. The watcher (the script in watcher.go) is
// a few lines of POSIX sh, started with the first child in a session of
// its own, so that a signal to our process group (jupyter_client kills a
// kernel's group) does not reach it. Its stdin is a pipe whose write end
// only this process holds (close-on-exec: no child inherits it); on it go
// the groups started and released. When this process ends, however it
// ends, the kernel closes that end: the watcher sends SIGTERM to each group
// still listed, SIGKILL to what is left of them after 2 s, and exits. This
// is the gateway reaper's way (backing/reaper.go): a pipe that ends when we
// do, read by a process that outlives us.
//
// On Linux the child also has a parent-death signal (SIGTERM), for the
// moment between its start and the watcher hearing of it, and for a
// watcher that could not start. Linux sends it when the thread that
// started the child ends, not the process, and Go ends a thread when a
// goroutine locked to it returns; so children are started from one
// goroutine locked to its thread, which returns only once every child it
// started has been released (thread_linux.go).
//
// Why this way: a parent-death signal reaches only the direct child
// (claude-agent-acp, not the Claude Code it starts); a subreaper
// (PR_SET_CHILD_SUBREAPER) adopts orphans only while it lives, which a
// SIGKILL ends; cgroups and PID namespaces need privileges a kernel does
// not have. A group per child, and a process that outlives us to end the
// groups, need nothing but a shell.
//
// What it cannot do: a process that leaves its group (setsid, setpgid: a
// daemon) is out of reach; without /bin/sh only the parent-death signal is
// left, which reaches the child but not its children. A group whose
// leader was released while other processes of it run on (a hook's
// background job) stays listed until they end, as this process sees at
// each later Start and Release, or until this process ends and takes them.
//
// The guard is process-wide, as os/signal's handlers are: there is one
// pipe, whose end is this process's end, and one watcher per process. It
// is started by the first Start. Start and Release are safe for concurrent
// use.
package procguard

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"
)

// Start starts cmd, as cmd.Start does, as the leader of a new process group
// that ends with this process. It sets cmd.SysProcAttr's Setpgid and Pgid
// (and on Linux Pdeathsig), keeping its other fields. The caller waits for
// cmd as usual and then calls Release.
func Start(cmd *exec.Cmd) error { return std.start(cmd) }

// Release tells the guard that cmd, started by Start, has been waited for.
// It must not be called before cmd.Wait has returned (on Linux the thread
// that started cmd may end then, which would signal it). Calling it again,
// or for a cmd that did not start, does nothing.
func Release(cmd *exec.Cmd) {
	if cmd.Process != nil {
		std.release(cmd.Process.Pid)
	}
}

// std is the process's guard.
var std = guard{live: map[int]bool{}, lingering: map[int]bool{}}

// guard is the state behind Start and Release.
type guard struct {
	mu sync.Mutex
	// watcher and w are the watcher and the write end of its pipe: nil
	// before the first Start, or when it could not start or died.
	watcher *exec.Cmd
	w       *os.File
	tried   bool
	// starter starts children (thread_linux.go); nil while none runs.
	starter *starter
	// live holds the children started and not released; lingering the
	// groups whose leader was released while others of the group ran.
	live, lingering map[int]bool
}

func (g *guard) start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = true, 0
	setDeathSignal(cmd.SysProcAttr)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.startWatcher()
	if g.starter == nil {
		g.starter = newStarter()
	}
	if err := g.starter.start(cmd); err != nil {
		if len(g.live) == 0 {
			g.starter.stop()
			g.starter = nil
		}
		return err
	}
	pid := cmd.Process.Pid
	g.live[pid] = true
	g.tell('+', pid)
	g.prune()
	return nil
}

func (g *guard) release(pid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.live[pid] {
		return
	}
	delete(g.live, pid)
	if len(g.live) == 0 {
		g.starter.stop()
		g.starter = nil
	}
	if groupAlive(pid) {
		g.lingering[pid] = true
	} else {
		g.tell('-', pid)
	}
	g.prune()
}

// prune forgets the lingering groups that have ended.
func (g *guard) prune() {
	for pgid := range g.lingering {
		if !groupAlive(pgid) {
			delete(g.lingering, pgid)
			g.tell('-', pgid)
		}
	}
}

// groupAlive reports whether process group pgid has a process.
func groupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// startWatcher starts the watcher, once.
func (g *guard) startWatcher() {
	if g.tried {
		return
	}
	g.tried = true
	r, w, err := os.Pipe() // close-on-exec: children do not hold the write end
	if err != nil {
		warn("a pipe for the watcher", err)
		return
	}
	cmd := exec.Command("/bin/sh", "-c", watcher)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		warn("start the watcher", err)
		return
	}
	// Not waited for: it ends after this process does (or is reaped in
	// tell, if it dies before).
	g.watcher, g.w = cmd, w
}

// tell writes a line to the watcher: '+' or '-' and a group.
func (g *guard) tell(op byte, pgid int) {
	if g.w == nil {
		return
	}
	if _, err := fmt.Fprintf(g.w, "%c%d\n", op, pgid); err != nil {
		// It died (it was killed): only the death signal is left.
		g.w.Close()
		_ = g.watcher.Wait()
		g.w, g.watcher = nil, nil
		warn("the watcher is gone", err)
	}
}

func warn(what string, err error) {
	hclog.Default().Named("procguard").Warn("the children of this process may outlive it", "failed", what, "error", err)
}
