package mcp

import "syscall"

// procAttr runs a stdio server in its own process group (an interrupt of
// the kernel's group is not for it; stopping it stops its children) and
// has Linux send it SIGTERM if agentkernel dies without stopping it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
