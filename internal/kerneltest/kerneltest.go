// Package kerneltest is for the tests of packages that start real
// kernels or the binary: Run keeps the kernels' connection files out of
// the user's Jupyter runtime directory and quiets ipykernel's debugger;
// GoTool finds the go command to build the binary with.
package kerneltest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Run runs m's tests with JUPYTER_RUNTIME_DIR a new temporary directory,
// removed after them, and returns their exit code. after, when set, runs
// after the tests (before the removal) and may turn a pass into a failure
// (a leak check).
func Run(m *testing.M, after func(code int) int) int {
	dir, err := os.MkdirTemp("", "kernels-runtime-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Setenv("JUPYTER_RUNTIME_DIR", dir)
	os.Setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
	code := m.Run()
	if after != nil {
		code = after(code)
	}
	return code
}

// GoTool returns the go command that runs the tests, to build a binary
// with: the one on PATH, else $GOROOT's.
func GoTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}
