package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentkernel/agentkernel/notebooks"
)

func TestMain(m *testing.M) {
	// zmq4 v0.17.0 leaves one goroutine per closed PUB socket behind; the
	// runner's kernel client uses none, but ignore it in case a dependency
	// does.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run"))
}

const sysPython = "/usr/bin/python3"

// havePython reports whether Debian's python3 with nbformat is there.
func havePython(t testing.TB, modules ...string) {
	t.Helper()
	if _, err := os.Stat(sysPython); err != nil {
		t.Skip("no " + sysPython)
	}
	for _, m := range append([]string{"nbformat"}, modules...) {
		if err := exec.Command(sysPython, "-c", "import "+m).Run(); err != nil {
			t.Skipf("%s cannot import %s", sysPython, m)
		}
	}
}

// python runs a Python snippet with Debian's python3 and returns stdout.
func python(t testing.TB, code string, args ...string) string {
	t.Helper()
	cmd := exec.Command(sysPython, append([]string{"-c", code}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// validate checks path with nbformat.validate, as the issue requires for
// every notebook we write.
func validate(t testing.TB, path string) {
	t.Helper()
	havePython(t)
	python(t, `import nbformat, sys
nbformat.validate(nbformat.read(sys.argv[1], as_version=4))`, path)
}

// writeTemp writes nb to a fresh file and validates it with nbformat.
func writeTemp(t testing.TB, nb *notebooks.Notebook, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := notebooks.WriteFile(path, nb); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	validate(t, path)
	return path
}
