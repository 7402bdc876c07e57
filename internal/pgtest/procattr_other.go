//go:build !linux

package pgtest

import "syscall"

// procAttr runs the server as cred in a process group of its own; there is
// no parent-death signal outside Linux (see procattr_linux.go), so a test
// binary killed by a timeout may leave its cluster running.
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: true}
}
