package checkpoint

import (
	"os"

	"golang.org/x/sys/unix"
)

// statAt stats name in the open directory dir (fstatat: no path walk in
// the kernel for each file).
func statAt(dir *os.File, _ string, name string) (fileStat, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fileStat{}, err
	}
	return fromSys(&st), nil
}

// lstat stats the file at abs without following a final symbolic link;
// regular says whether it is a regular file, dir a directory.
func lstat(abs string) (s fileStat, regular, dir bool, err error) {
	var st unix.Stat_t
	if err := unix.Lstat(abs, &st); err != nil {
		return fileStat{}, false, false, err
	}
	mode := st.Mode & unix.S_IFMT
	return fromSys(&st), mode == unix.S_IFREG, mode == unix.S_IFDIR, nil
}

// fstat stats an open file.
func fstat(f *os.File) (fileStat, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileStat{}, err
	}
	return fromSys(&st), nil
}

func fromSys(st *unix.Stat_t) fileStat {
	return fileStat{size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: int64(st.Ino)}
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

// lowerPriority gives the calling thread the lowest CPU priority (nice 19)
// and the idle I/O class; restore puts back what it had, so that the
// thread can return to the runtime's pool. Best effort: a failure leaves
// it as it was. (Children are not started from it: internal/procguard
// starts them, with their parent-death signal, from a thread of its own.)
func lowerPriority() (restore func()) {
	tid := unix.Gettid()
	const ioprioWhoProcess, ioprioClassIdle, ioprioClassShift = 1, 3, 13
	raw, err := unix.Getpriority(unix.PRIO_PROCESS, tid) // 20 - nice on Linux
	io, _, errno := unix.Syscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(tid), 0)
	unix.Setpriority(unix.PRIO_PROCESS, tid, 19)
	unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), ioprioClassIdle<<ioprioClassShift)
	return func() {
		if err == nil {
			unix.Setpriority(unix.PRIO_PROCESS, tid, 20-raw)
		}
		if errno == 0 {
			unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), io)
		}
	}
}
