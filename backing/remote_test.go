package backing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/kernel/client"
)

const serverToken = "test-token-not-secret-3f9a"

// jupyterServer starts Debian's Notebook server on 127.0.0.1 with a token,
// as the real peer of a gateway backing; dataDir holds extra kernelspecs.
// It is stopped when the test ends.
func jupyterServer(t testing.TB, dataDir string) Gateway {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Jupyter server")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import notebook, ipykernel").Run(); err != nil {
		t.Skip("Debian's jupyter-notebook and python3-ipykernel are needed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	cmd := exec.Command("/usr/bin/python3", "-m", "notebook", "--no-browser", "--ip=127.0.0.1", fmt.Sprintf("--port=%d", port),
		"--NotebookApp.token="+serverToken, "--notebook-dir="+dir, "--allow-root")
	cmd.Env = append(os.Environ(), "JUPYTER_RUNTIME_DIR="+filepath.Join(dir, "runtime"), "JUPYTER_PATH="+dataDir,
		"JUPYTER_CONFIG_DIR="+filepath.Join(dir, "config"), "PYDEVD_DISABLE_FILE_VALIDATION=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		log.Close()
	})
	g := Gateway{URL: fmt.Sprintf("http://127.0.0.1:%d", port), AuthToken: serverToken, ValidateCert: true}
	for deadline := time.Now().Add(30 * time.Second); ; {
		req, _ := http.NewRequest(http.MethodGet, g.endpoint("/api"), nil)
		req.Header = g.header()
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return g
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			t.Fatalf("the notebook server did not start:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// serverKernels lists the kernel ids the server runs.
func serverKernels(t testing.TB, g Gateway) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, g.endpoint("/api/kernels"), nil)
	req.Header = g.header()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range list {
		ids = append(ids, k.ID)
	}
	return ids
}

// TestRemote runs code in a kernel of a real Jupyter server: state
// persists, the kernel is the server's (not our child), an interrupt ends
// a running cell, a kernel deleted behind our back is replaced, and Close
// deletes the kernel.
func TestRemote(t *testing.T) {
	g := jupyterServer(t, t.TempDir())
	r, err := NewRemote(RemoteOptions{Gateway: g})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	if _, err := r.Execute(ctx, Exec{Code: "import os, time; x = 6"}); err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(ctx, Exec{Code: "print(x * 7); os.getppid()"})
	if err != nil || res.Stdout != "42\n" {
		t.Fatalf("second cell: %+v, %v", res, err)
	}
	if strings.TrimSpace(res.Text) == fmt.Sprint(os.Getpid()) {
		t.Fatal("the kernel is our child, not the server's")
	}
	ids := serverKernels(t, g)
	if len(ids) != 1 {
		t.Fatalf("server kernels %v, want one", ids)
	}
	if info := r.LanguageInfo(ctx); !strings.Contains(string(info), "python") {
		t.Fatalf("language_info %s", info)
	}

	// (An interrupt through the REST API: the conformance suite.)

	// Deleted behind our back (culled, say): the next cell fails, clearly,
	// and the one after runs in a fresh kernel.
	r.deleteKernel(ids[0])
	_, err = r.Execute(ctx, Exec{Code: "x"})
	if err == nil {
		t.Fatal("a cell ran in a deleted kernel")
	}
	var res2 Result
	for i := 0; i < 3; i++ {
		if res2, err = r.Execute(ctx, Exec{Code: "'x' in globals()"}); err == nil {
			break
		}
	}
	if err != nil || res2.Text != "False\n" {
		t.Fatalf("fresh kernel: %+v, %v", res2, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if ids := serverKernels(t, g); len(ids) != 0 {
		t.Fatalf("Close left server kernels %v", ids)
	}
}

// TestRemoteBadInput: a bad token, an unknown kernelspec and an
// agentkernel kernelspec on the server give clear errors naming the URL,
// never the token.
func TestRemoteBadInput(t *testing.T) {
	data := t.TempDir()
	spec := filepath.Join(data, "kernels", "agent-on-server")
	if err := os.MkdirAll(spec, 0o755); err != nil {
		t.Fatal(err)
	}
	js := `{"argv": ["/opt/agentkernel", "kernel", "-f", "{connection_file}"], "display_name": "Agent", "language": "python",
		"metadata": {"agentkernel": {"mode": "code"}}}`
	if err := os.WriteFile(filepath.Join(spec, "kernel.json"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	g := jupyterServer(t, data)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bad := g
	bad.AuthToken = "wrong-token-XYZ"
	tests := []struct {
		name   string
		gw     Gateway
		kernel string
		want   string
		is     error
	}{
		{"bad token", bad, "python3", "refused the request", ErrGateway},
		{"unknown kernelspec", g, "no-such-kernel", `has no kernelspec "no-such-kernel"`, ErrGateway},
		{"agentkernel on the server", g, "agent-on-server", "agentkernel's own kernelspec", ErrSelf},
		{"nothing listening", Gateway{URL: "http://127.0.0.1:9", AuthToken: "secret-XYZ"}, "python3", "cannot reach", ErrGateway},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRemote(RemoteOptions{Gateway: tt.gw, Kernel: tt.kernel})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			_, err = r.Execute(ctx, Exec{Code: "1"})
			if err == nil || !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q (%v)", err, tt.want, tt.is)
			}
			if !strings.Contains(err.Error(), tt.gw.URL) {
				t.Errorf("the error does not name the URL: %v", err)
			}
			if strings.Contains(err.Error(), tt.gw.AuthToken) {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
	if _, err := NewRemote(RemoteOptions{Gateway: Gateway{URL: "ftp://x"}}); err == nil {
		t.Error("a non-http URL was accepted")
	}
	if _, err := client.FindSpec("python3"); err != nil {
		t.Log("no local python3: the gateway does not need one")
	}
}

func TestGatewayFromEnv(t *testing.T) {
	env := map[string]string{
		"JUPYTER_GATEWAY_URL": "https://eg.example:8888/base/", "JUPYTER_GATEWAY_AUTH_TOKEN": "tok",
		"JUPYTER_GATEWAY_HEADERS": `{"X-Team": "data"}`, "JUPYTER_GATEWAY_VALIDATE_CERT": "false",
		"JUPYTER_GATEWAY_REQUEST_TIMEOUT": "120",
	}
	g, ok, err := GatewayFromEnv(func(k string) string { return env[k] })
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if g.ValidateCert || g.RequestTimeout != 120*time.Second || g.Headers["X-Team"] != "data" ||
		g.wsEndpoint("/api/kernels/k/channels") != "wss://eg.example:8888/base/api/kernels/k/channels" {
		t.Fatalf("%+v", g)
	}
	if _, ok, _ := GatewayFromEnv(func(string) string { return "" }); ok {
		t.Fatal("no URL, yet a gateway")
	}
	env["JUPYTER_GATEWAY_HEADERS"] = "not json"
	if _, _, err := GatewayFromEnv(func(k string) string { return env[k] }); err == nil {
		t.Fatal("bad headers accepted")
	}
}
