package checkpoint

import (
	"errors"
	"path"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watcher learns from inotify which paths changed since the last scan, so
// that a scan stats those instead of the whole workspace. The kernel queues
// an event before the system call that caused it returns, so a change made
// before a scan starts is in the queue the scan drains. Anything the
// watcher cannot follow (a full queue, a directory moved, the watch limit
// reached) makes the next scan walk everything.
type watcher struct {
	fd int

	mu     sync.Mutex
	dirs   map[int32]string // watch descriptor → workspace-relative directory
	lost   bool             // events were lost: the next scan walks everything
	broken bool             // watching failed for good: every scan walks
	buf    []byte           // drain's, kept between scans
}

const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// newWatcher returns a watcher, or nil where inotify cannot be used.
func newWatcher() *watcher {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	return &watcher{fd: fd, dirs: map[int32]string{}}
}

// add watches the directory abs (rel in the workspace).
func (w *watcher) add(abs, rel string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken {
		return
	}
	wd, err := unix.InotifyAddWatch(w.fd, abs, watchMask)
	switch {
	case err == nil:
		w.dirs[int32(wd)] = rel
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EACCES):
		// Gone or unreadable since it was listed: the walk says so.
	default:
		// ENOSPC: the user's watch limit (fs.inotify.max_user_watches).
		w.broken = true
	}
}

// changed is what the events since the last drain name.
type changed struct {
	files   map[string]bool // paths created, written, removed or moved
	newDirs []string        // directories created or moved in: walked
	oldDirs []string        // directories removed: what was under them is gone
}

// drain reads the queued events. ok is false when they do not tell the
// whole story: the scan must walk everything.
func (w *watcher) drain() (c changed, ok bool) {
	c.files = map[string]bool{}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf == nil {
		w.buf = make([]byte, 64<<10)
	}
	buf := w.buf
	for {
		n, err := unix.Read(w.fd, buf)
		if err != nil || n <= 0 {
			break // EAGAIN: the queue is empty
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			w.event(ev.Wd, ev.Mask, cstring(name), &c)
		}
	}
	ok = !w.lost && !w.broken
	w.lost = false
	return c, ok
}

func (w *watcher) event(wd int32, mask uint32, name string, c *changed) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.lost = true
		return
	}
	dir, known := w.dirs[wd]
	if mask&unix.IN_IGNORED != 0 {
		delete(w.dirs, wd)
		return
	}
	if !known {
		return
	}
	if name == "" { // the directory itself
		if mask&(unix.IN_MOVE_SELF|unix.IN_DELETE_SELF) != 0 {
			w.lost = true // its watch would name the old path: relearn
		}
		return
	}
	p := path.Join(dir, name)
	switch {
	case mask&unix.IN_ISDIR == 0:
		c.files[p] = true
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		c.newDirs = append(c.newDirs, p)
	case mask&unix.IN_DELETE != 0:
		c.oldDirs = append(c.oldDirs, p)
	case mask&unix.IN_MOVED_FROM != 0:
		w.lost = true // its watches still name the old paths
	}
}

// close stops watching.
func (w *watcher) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
		w.broken = true
	}
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
