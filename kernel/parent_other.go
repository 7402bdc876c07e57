//go:build !linux

package kernel

// pidWaiter: no pidfd outside Linux; WatchParent polls.
func pidWaiter(int) (func() bool, func(), bool) { return nil, nil, false }
