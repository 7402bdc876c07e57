package checkpoint

import (
	"os"

	"golang.org/x/sys/unix"
)

// statAt stats name in the open directory dir (fstatat: no path walk in
// the kernel for each file).
func statAt(dir *os.File, _ string, name string) (size, mtime int64, err error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, 0, err
	}
	return st.Size, st.Mtim.Nano(), nil
}

// openDir opens a directory for listing without registering it with the
// runtime's poller (os.Open tries, and fails, for every directory: one
// system call more per directory).
func openDir(abs string) (*os.File, error) {
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: abs, Err: err}
	}
	return os.NewFile(uintptr(fd), abs), nil
}
