package pgtest

import "syscall"

// procAttr runs the server as cred in a process group of its own, killed
// when the test binary's thread that started it ends (a test killed by a
// timeout leaves no cluster behind).
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
