// Package pyenv knows where a Python environment is: the prefix that pip
// installs a wheel's binary under (PREFIX/bin) beside its kernelspecs
// (PREFIX/share/jupyter), as sys.prefix is to the Python inside it.
package pyenv

import (
	"os"
	"path/filepath"
)

// Prefix returns PREFIX when bin is PREFIX/bin of a Python environment (it
// holds a python or python3).
func Prefix(bin string) (string, bool) {
	if filepath.Base(bin) != "bin" {
		return "", false
	}
	for _, py := range []string{"python", "python3"} {
		if fi, err := os.Stat(filepath.Join(bin, py)); err == nil && !fi.IsDir() {
			return filepath.Dir(bin), true
		}
	}
	return "", false
}

// Own returns the prefix of the environment this executable was installed
// into, if it was (pip put it in PREFIX/bin).
func Own() (string, bool) {
	exe, err := os.Executable()
	if err != nil {
		return "", false
	}
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		exe = p
	}
	return Prefix(filepath.Dir(exe))
}
