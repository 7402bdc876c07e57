package client

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

func TestMain(m *testing.M) {
	// Every goroutine the package starts is owned and waited for by
	// Client.Close and Kernel.Shutdown. The one exception is the fake
	// kernel's PUB socket (fake_test.go; the client has none): zmq4
	// v0.17.0's pubSocket.Close never stops its pubMWriter.run goroutine.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run"))
}

// testLogger logs warnings to stderr; AGENTKERNEL_LOG_LEVEL=debug shows all.
func testLogger() hclog.Logger {
	level := hclog.LevelFromString(os.Getenv("AGENTKERNEL_LOG_LEVEL"))
	if level == hclog.NoLevel {
		level = hclog.Warn
	}
	return hclog.New(&hclog.LoggerOptions{Name: "test", Level: level, Output: os.Stderr})
}

// python3Spec returns Debian's ipykernel spec, or skips.
func python3Spec(t testing.TB) *Spec {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import ipykernel").Run(); err != nil {
		t.Skip("ipykernel is not installed for /usr/bin/python3")
	}
	spec, err := ReadSpec("/usr/share/jupyter/kernels/python3")
	if err != nil {
		t.Skipf("no python3 kernelspec: %v", err)
	}
	return spec
}

// startKernel starts spec and shuts it down at the end of the test.
func startKernel(t testing.TB, spec *Spec, opts Options) *Kernel {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger()
	}
	if opts.ConnectionDir == "" {
		opts.ConnectionDir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	k, err := Start(ctx, spec, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := k.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return k
}

// testCtx bounds one test step (a safety net against hangs, not a timing
// assertion).
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// content decodes m's content into a map.
func content(t testing.TB, m *wire.Message) map[string]any {
	t.Helper()
	if m == nil {
		t.Fatal("nil message")
	}
	var c map[string]any
	if err := m.DecodeContent(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// processGone reports whether pid and its process group no longer exist.
func processGone(pid int) (pidGone, groupGone bool) {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH), errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
