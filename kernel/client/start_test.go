package client

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// takerPy is a kernel launcher that reproduces a taken port: before it
// execs ipykernel on the connection file, another process (in a session of
// its own, as an unrelated program would be) binds the kernel's iopub port
// and listens on it — on every launch ("always"), or on the first only
// ("once") — or only binds it, on the first launch ("bound"), as
// jupyter_client's probe for a free port does. ipykernel whose iopub port
// is taken hangs instead of exiting. Each launch adds a line to the
// launches file, each holder its pid to the launches file's .pids.
const takerPy = `
import json, os, subprocess, sys
cf, launches, mode = sys.argv[1], sys.argv[2], sys.argv[3]
with open(launches, "a") as f:
    f.write("launch\n")
n = len(open(launches).read().splitlines())
if mode == "always" or n == 1:
    port = json.load(open(cf))["iopub_port"]
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(port), launches + ".pids", mode],
                         stdout=subprocess.PIPE, start_new_session=True)
    p.stdout.readline()
os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", "-f", cf])
`

// holdPy is takerPy's HOLD: it binds a port (and listens, but in mode
// "bound") for two minutes at most.
const holdPy = `
import os, socket, sys, time
port, pids, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.socket()
s.bind(("127.0.0.1", port))
if mode != "bound":
    s.listen(1)
open(pids, "a").write("%d\n" % os.getpid())
print("held", flush=True)
time.sleep(120)
`

// takerSpec returns a kernelspec of takerPy in mode, and a function that
// counts its launches. The processes holding ports are killed when the test
// ends.
func takerSpec(t *testing.T, mode string) (*Spec, func() int) {
	t.Helper()
	python3Spec(t) // skips without ipykernel
	dir := t.TempDir()
	script := filepath.Join(dir, "taker.py")
	code := strings.Replace(takerPy, "HOLD", strconv.Quote(holdPy), 1)
	if err := os.WriteFile(script, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	launches := filepath.Join(dir, "launches")
	t.Cleanup(func() {
		b, _ := os.ReadFile(launches + ".pids")
		for _, l := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(l); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	spec := &Spec{Name: "taker", Language: "python",
		Argv: []string{"/usr/bin/python3", script, "{connection_file}", launches, mode}}
	return spec, func() int {
		b, _ := os.ReadFile(launches)
		return strings.Count(string(b), "\n")
	}
}

// logBuffer is a logger's output that a test reads while the logger may
// still write.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func bufferLogger(b *logBuffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Warn, Output: b})
}

// TestStartPortTaken: the kernel's iopub port is taken by another process
// before the kernel binds it (the race of ports that are picked free and
// released). ipykernel then hangs; Start sees the port held, kills it and
// starts it again with fresh ports, instead of waiting out the start
// timeout.
func TestStartPortTaken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ipykernel")
	}
	spec, launches := takerSpec(t, "once")
	var log logBuffer
	k := startKernel(t, spec, Options{Logger: bufferLogger(&log)})
	if reply, _ := execute(t, k.Client(), "print(1)"); content(t, reply)["status"] != "ok" {
		t.Fatalf("execute: %v", content(t, reply))
	}
	if n := launches(); n != 2 {
		t.Fatalf("%d launches, want 2 (one with the port taken, one with fresh ports)", n)
	}
	if l := log.String(); !strings.Contains(l, "held by another process: iopub") {
		t.Fatalf("the retry does not name the taken port; log:\n%s", l)
	}
}

// TestStartPortBound: the iopub port is bound, not listened on, by
// another process, as jupyter_client's probe for a free port binds one:
// nothing listens there that Start could see. ipykernel fails to bind it
// and hangs with ZeroMQ running and nothing bound; Start sees that it
// began to bind and did not, and starts it again.
func TestStartPortBound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ipykernel")
	}
	spec, launches := takerSpec(t, "bound")
	var log logBuffer
	k := startKernel(t, spec, Options{Logger: bufferLogger(&log)})
	if reply, _ := execute(t, k.Client(), "print(1)"); content(t, reply)["status"] != "ok" {
		t.Fatalf("execute: %v", content(t, reply))
	}
	if n := launches(); n != 2 {
		t.Fatalf("%d launches, want 2 (one with the port taken, one with fresh ports)", n)
	}
	if l := log.String(); !strings.Contains(l, "not bound after") || !strings.Contains(l, "iopub (tcp://") {
		t.Fatalf("the retry does not say the ports were not bound; log:\n%s", l)
	}
}

// TestStartPortAlwaysTaken: when every launch finds a port taken, Start
// gives up after its attempts with an error that names the port and why.
func TestStartPortAlwaysTaken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ipykernel")
	}
	spec, launches := takerSpec(t, "always")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k, err := Start(ctx, spec, Options{Logger: testLogger(), ConnectionDir: dir})
	if err == nil {
		k.Shutdown(testCtx(t))
		t.Fatal("Start succeeded with the iopub port taken")
	}
	if msg := err.Error(); !strings.Contains(msg, "held by another process: iopub (tcp://127.0.0.1:") {
		t.Fatalf("Start: %v; want the taken iopub port named", err)
	}
	if n := launches(); n != startAttempts {
		t.Fatalf("%d launches, want %d", n, startAttempts)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("connection dir not cleaned: %v", left)
	}
}
