package notebooks

import (
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentkernel/agentkernel/internal/nbtest"
)

func TestMain(m *testing.M) {
	// zmq4 v0.17.0 leaves one goroutine per closed PUB socket behind; the
	// runner's kernel client uses none, but ignore it in case a dependency
	// does.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run"))
}

// writeTemp writes nb to a fresh file and validates it with nbformat.
func writeTemp(t testing.TB, nb *Notebook, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := WriteFile(path, nb); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	nbtest.Validate(t, path)
	return path
}
