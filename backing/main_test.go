package backing

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Kernels write connection files to the Jupyter runtime dir: keep
	// them out of the user's.
	dir, err := os.MkdirTemp("", "backing-runtime-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("JUPYTER_RUNTIME_DIR", dir)
	os.Setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}
