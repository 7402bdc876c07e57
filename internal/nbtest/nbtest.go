// Package nbtest is what the notebook packages' tests share: Debian's
// python3 with nbformat, to read and validate the notebooks they write.
package nbtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// SysPython is Debian's python3, whose nbformat the tests hold our
// notebooks to.
const SysPython = "/usr/bin/python3"

// HavePython skips t unless SysPython imports nbformat and modules.
func HavePython(t testing.TB, modules ...string) {
	t.Helper()
	if _, err := os.Stat(SysPython); err != nil {
		t.Skip("no " + SysPython)
	}
	for _, m := range append([]string{"nbformat"}, modules...) {
		if err := exec.Command(SysPython, "-c", "import "+m).Run(); err != nil {
			t.Skipf("%s cannot import %s", SysPython, m)
		}
	}
}

// Python runs a Python snippet with SysPython and returns its stdout.
func Python(t testing.TB, code string, args ...string) string {
	t.Helper()
	cmd := exec.Command(SysPython, append([]string{"-c", code}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// Validate checks the notebook at path with nbformat.validate: every
// notebook we write must pass it.
func Validate(t testing.TB, path string) {
	t.Helper()
	HavePython(t)
	Python(t, `import nbformat, sys
nbformat.validate(nbformat.read(sys.argv[1], as_version=4))`, path)
}
