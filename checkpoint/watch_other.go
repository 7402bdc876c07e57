//go:build !linux

package checkpoint

// watcher is Linux's inotify; elsewhere every scan walks the workspace.
type watcher struct{}

type changed struct {
	files   map[string]bool
	newDirs []string
	oldDirs []string
}

func newWatcher() *watcher                { return nil }
func (w *watcher) add(_, _ string)        {}
func (w *watcher) drain() (changed, bool) { return changed{}, false }
func (w *watcher) close()                 {}
