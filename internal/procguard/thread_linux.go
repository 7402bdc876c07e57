package procguard

import (
	"os/exec"
	"runtime"
	"syscall"
)

// setDeathSignal has Linux send the child SIGTERM when the thread that
// started it ends.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGTERM }

// starter starts children from one goroutine locked to its thread, so that
// their parent-death signal comes when this process ends and not when Go
// happens to end the thread that forked them (it does when a goroutine
// locked to a thread returns). The guard stops it once no child it started
// runs; its thread ends then.
type starter struct {
	cmds chan *exec.Cmd
	errs chan error
	done chan struct{}
}

func newStarter() *starter {
	s := &starter{cmds: make(chan *exec.Cmd), errs: make(chan error), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		for cmd := range s.cmds {
			s.errs <- cmd.Start()
		}
	}()
	return s
}

// start starts cmd on the starter's thread.
func (s *starter) start(cmd *exec.Cmd) error {
	s.cmds <- cmd
	return <-s.errs
}

// stop ends the goroutine, and its thread, and waits for it.
func (s *starter) stop() {
	close(s.cmds)
	<-s.done
}
