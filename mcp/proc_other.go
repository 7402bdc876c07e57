//go:build !linux

package mcp

import "syscall"

// procAttr runs a stdio server in its own process group (an interrupt of
// the kernel's group is not for it; stopping it stops its children).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
