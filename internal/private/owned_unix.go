//go:build unix

package private

import (
	"io/fs"
	"os"
	"syscall"
)

// Owned reports whether the file is the process's user's.
func Owned(st fs.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Geteuid()
}
