//go:build !linux

package client

// tcpProber returns nil: who listens on a port is not told here, and a
// start over tcp waits for its kernel as long as Options.StartTimeout.
func tcpProber() prober { return nil }

// runsZMQ reports false: a process's threads are not looked at here.
func runsZMQ(pgid int) bool { return false }
