//go:build !linux

package checkpoint

import (
	"os"
	"path/filepath"
)

// statAt stats name in the directory at abs.
func statAt(_ *os.File, abs, name string) (fileStat, error) {
	fi, err := os.Lstat(filepath.Join(abs, name))
	if err != nil {
		return fileStat{}, err
	}
	return fromInfo(fi), nil
}

// lstat stats the file at abs without following a final symbolic link.
func lstat(abs string) (s fileStat, regular, dir bool, err error) {
	fi, err := os.Lstat(abs)
	if err != nil {
		return fileStat{}, false, false, err
	}
	return fromInfo(fi), fi.Mode().IsRegular(), fi.IsDir(), nil
}

// fstat stats an open file.
func fstat(f *os.File) (fileStat, error) {
	fi, err := f.Stat()
	if err != nil {
		return fileStat{}, err
	}
	return fromInfo(fi), nil
}

// fromInfo has no change time or inode here: size and time decide.
func fromInfo(fi os.FileInfo) fileStat {
	return fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

// openDir opens a directory for listing.
func openDir(abs string) (*os.File, error) { return os.Open(abs) }

// lowerPriority is Linux's; elsewhere the thread keeps its priority.
func lowerPriority() (restore func()) { return func() {} }
