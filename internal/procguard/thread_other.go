//go:build !linux

package procguard

import (
	"os/exec"
	"syscall"
)

// setDeathSignal does nothing: only Linux has parent-death signals.
func setDeathSignal(*syscall.SysProcAttr) {}

// starter starts children on the caller's thread.
type starter struct{}

func newStarter() *starter { return &starter{} }

func (*starter) start(cmd *exec.Cmd) error { return cmd.Start() }

func (*starter) stop() {}
