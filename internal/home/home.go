// Package home finds the user's home directory where $HOME may be missing:
// Jupyter Kernel Gateway passes its kernels only PATH and KERNEL_*, and
// Enterprise Gateway only KERNEL_*, so a kernel there has no $HOME. It
// imports nothing of ours.
package home

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
)

// Dir returns the home directory: $HOME when it is set and absolute, else
// the account's own (the password database, through os/user), else an
// error that says what to set.
func Dir() (string, error) {
	if h := os.Getenv("HOME"); h != "" && filepath.IsAbs(h) {
		return h, nil
	}
	if u, err := user.Current(); err == nil && u.HomeDir != "" && filepath.IsAbs(u.HomeDir) {
		return u.HomeDir, nil
	}
	return "", errors.New("no home directory: $HOME is not set and the account has none")
}

// ConfigDir returns the user's configuration directory: $XDG_CONFIG_HOME
// when it is absolute (as the XDG spec wants), else ~/.config.
func ConfigDir() (string, error) {
	if dir := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
		return dir, nil
	}
	h, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, ".config"), nil
}
