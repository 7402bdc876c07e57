package kernel

import (
	"os"

	"golang.org/x/sys/unix"
)

// pidWaiter opens a pidfd for pid. wait blocks, in the runtime's poller
// (no thread held, no polling), until the process exits (true) or unblock
// is called (false). ok is false when the kernel has no pidfd_open (Linux
// before 5.3) or the process is gone already.
func pidWaiter(pid int) (wait func() bool, unblock func(), ok bool) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, nil, false
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, nil, false
	}
	wait = func() bool {
		// A pidfd becomes readable when its process exits. The first call
		// reports "not ready" so that Read waits for readability; the
		// second ends the wait. Close makes Read return an error.
		ready := false
		err := rc.Read(func(uintptr) bool {
			if ready {
				return true
			}
			ready = true
			return false
		})
		return err == nil
	}
	return wait, func() { f.Close() }, true
}
