// Package private keeps a user's files to that user: agentkernel's data
// directory and the files in it (the SQLite store, the event log) are 0700
// and 0600, and a directory that another user owns is not written into.
// Tighten puts back modes that something widened; Dir makes or checks a
// directory before files are written there. It imports nothing of ours.
package private

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Tighten sets path's permissions to perm when path is the process's
// user's and group or others have any. A missing path is fine; another
// user's is left as it is (opening it is then their permission's
// business).
func Tighten(path string, perm fs.FileMode) error {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode().Perm()&0o077 == 0 || !Owned(st) {
		return nil
	}
	return os.Chmod(path, perm)
}

// Dir creates the directory path (0700) when missing, else checks that it
// is a directory of the process's user and tightens it to 0700. A path
// that is another user's, or not a directory, is an error: what is written
// there would not be private.
func Dir(path string) error {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return err
	}
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	switch {
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", path)
	case !Owned(st):
		return fmt.Errorf("%s is another user's directory: not private", path)
	}
	return Tighten(path, 0o700)
}
