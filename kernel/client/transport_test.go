package client

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestStartTransports: ipykernel is started on ipc sockets in a private
// directory (nothing can take them), removed with the kernel; tcp still
// works when asked for, and other kernels get it.
func TestStartTransports(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ipykernel")
	}
	for _, tc := range []struct{ name, transport, want string }{
		{"ipykernel default", "", TransportIPC},
		{"tcp asked for", TransportTCP, TransportTCP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			k := startKernel(t, python3Spec(t), Options{Transport: tc.transport, ConnectionDir: dir})
			conn := k.ConnectionInfo()
			if conn.Transport != tc.want {
				t.Fatalf("transport %q, want %q", conn.Transport, tc.want)
			}
			if reply, col := execute(t, k.Client(), "print(6*7)"); content(t, reply)["status"] != "ok" || !contains(col.types(), "stream:stdout") {
				t.Fatalf("execute: %v %v", content(t, reply), col.types())
			}
			if tc.want == TransportIPC {
				sockDir := filepath.Dir(conn.IP)
				if filepath.Dir(sockDir) != dir {
					t.Fatalf("sockets in %s, not beside the connection file in %s", sockDir, dir)
				}
				fi, err := os.Stat(sockDir)
				if err != nil || fi.Mode().Perm() != 0o700 {
					t.Fatalf("socket directory: %v, %v; want mode 0700", fi, err)
				}
			}
			if err := k.Shutdown(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("left in the connection dir after Shutdown: %v", left)
			}
		})
	}
	if got := transport(&Spec{Argv: []string{"/bin/sh", "{connection_file}"}}, Options{}); got != TransportTCP {
		t.Fatalf("another kernel gets %q", got)
	}
}

// TestSlowKernelKept: a kernel slow to start is not taken for one that
// cannot bind its ports, with a BindTimeout far shorter than its slowness:
// neither one slow before it binds (a cold import) nor one slow to answer
// once it has bound them all (an IPython startup file).
func TestSlowKernelKept(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ipykernel")
	}
	python3Spec(t)
	// Each launch appends a byte to launches: the wrapper that sleeps
	// before ipykernel binds, or the IPython startup file that sleeps
	// once it has.
	slowToBind := func(dir, launches string) ([]string, []string) {
		sh := filepath.Join(dir, "sleep-first.sh")
		if err := os.WriteFile(sh, []byte("#!/bin/sh\necho >>"+launches+"\nsleep 1.5\n"+
			"exec /usr/bin/python3 -m ipykernel_launcher -f \"$1\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return []string{sh, "{connection_file}"}, nil
	}
	slowToAnswer := func(dir, launches string) ([]string, []string) {
		startup := filepath.Join(dir, "ipython", "profile_default", "startup")
		if err := os.MkdirAll(startup, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(startup, "00-slow.py"),
			[]byte("import time\nopen("+strconv.Quote(launches)+", 'a').write('\\n')\ntime.sleep(1.5)\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{"/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"},
			[]string{"IPYTHONDIR=" + filepath.Join(dir, "ipython")}
	}
	for _, tc := range []struct {
		name   string
		kernel func(dir, launches string) (argv, env []string)
	}{{"slow to bind", slowToBind}, {"slow to answer", slowToAnswer}} {
		for _, tr := range []string{TransportTCP, TransportIPC} {
			t.Run(tc.name+" "+tr, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				launches := filepath.Join(dir, "launches")
				argv, env := tc.kernel(dir, launches)
				spec := &Spec{Name: "slow", Language: "python", Argv: argv}
				k := startKernel(t, spec, Options{Transport: tr, Env: env, BindTimeout: 300 * time.Millisecond})
				if reply, _ := execute(t, k.Client(), "print(1)"); content(t, reply)["status"] != "ok" {
					t.Fatalf("execute: %v", content(t, reply))
				}
				if b, _ := os.ReadFile(launches); len(b) != 1 {
					t.Fatalf("%d launches, want 1", len(b))
				}
			})
		}
	}
}

func TestSpeaksIPC(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want bool
	}{
		{[]string{"python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"}, true},
		{[]string{"/opt/conda/bin/python", "-m", "ipykernel", "-f", "{connection_file}"}, true},
		{[]string{"conda", "run", "-n", "x", "python", "-m", "ipykernel_launcher", "-f", "{connection_file}"}, true},
		{[]string{"python", "/usr/lib/python3/dist-packages/ipykernel_launcher.py", "-f", "{connection_file}"}, true},
		{[]string{"R", "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"}, false},
		{[]string{"julia", "-i", "--color=yes", "/x/IJulia/src/kernel.jl", "{connection_file}"}, false},
		{[]string{"python3", "-m", "bash_kernel", "-f", "{connection_file}"}, false},
		{[]string{"python3", "ipykernel", "{connection_file}"}, false},
	} {
		if got := (&Spec{Argv: tc.argv}).speaksIPC(); got != tc.want {
			t.Errorf("%q: speaksIPC = %v, want %v", tc.argv, got, tc.want)
		}
	}
}
