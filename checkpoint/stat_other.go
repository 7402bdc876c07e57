//go:build !linux

package checkpoint

import (
	"os"
	"path/filepath"
)

// statAt stats name in the directory at abs.
func statAt(_ *os.File, abs, name string) (size, mtime int64, err error) {
	fi, err := os.Lstat(filepath.Join(abs, name))
	if err != nil {
		return 0, 0, err
	}
	return fi.Size(), fi.ModTime().UnixNano(), nil
}

// openDir opens a directory for listing.
func openDir(abs string) (*os.File, error) { return os.Open(abs) }
