package backing

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentkernel/agentkernel/internal/kerneltest"
)

func TestMain(m *testing.M) {
	os.Exit(kerneltest.Run(m, func(code int) int {
		if code == 0 {
			if err := goleak.Find(); err != nil {
				fmt.Fprintln(os.Stderr, "goleak:", err)
				return 1
			}
		}
		return code
	}))
}
