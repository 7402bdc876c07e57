package mcpserve

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/internal/kerneltest"
	"github.com/agentkernel/agentkernel/kernel/client"
)

// TestInspector: the MCP Inspector's CLI (npm's
// @modelcontextprotocol/inspector-cli, on the TypeScript SDK) lists and
// calls the tools of the built binary's `mcp serve`, over stdio and over
// streamable HTTP with the token; a wrong token is refused.
func TestInspector(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts kernels")
	}
	mods, err := filepath.Abs("../../tests/mcp/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(mods, "@modelcontextprotocol", "inspector-cli", "build", "index.js")
	if _, err := os.Stat(cli); err != nil {
		t.Skip("@modelcontextprotocol/inspector-cli is not installed: run make mcp-server")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := client.FindSpec("python3"); err != nil {
		t.Skipf("no python3 kernelspec: %v", err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "agentkernel")
	if out, err := exec.Command(kerneltest.GoTool(), "build", "-o", bin, "../../cmd/agentkernel").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := append(os.Environ(), "AGENTKERNEL_DATA_DIR="+filepath.Join(tmp, "data"),
		"AGENTKERNEL_CONFIG="+filepath.Join(tmp, "none.json"), "AGENTKERNEL_APPROVE=all", "AGENTKERNEL_MCP_TOKEN=tok-123")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inspector := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, node, append([]string{cli}, args...)...)
		// The CLI reads its own package.json from ../package.json of
		// its working directory.
		cmd.Dir = mods
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := inspector(bin, "mcp", "serve", "--dir", tmp, "--method", "tools/list")
	if err != nil || !strings.Contains(out, `"execute_code"`) || !strings.Contains(out, `"fork_session"`) {
		t.Fatalf("tools/list over stdio: %v\n%s", err, out)
	}
	out, err = inspector(bin, "mcp", "serve", "--dir", tmp, "--method", "tools/call", "--tool-name", "execute_code",
		"--tool-arg", "code=print(sum(range(10)))")
	if err != nil || !strings.Contains(out, `45`) || strings.Contains(out, `"isError": true`) {
		t.Fatalf("execute_code over stdio: %v\n%s", err, out)
	}

	// Over HTTP: the server runs until it is told to stop.
	srv := exec.Command(bin, "mcp", "serve", "--http", "127.0.0.1:0", "--dir", tmp)
	srv.Env = env
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			srv.Process.Kill()
			<-done
		}
	})
	lines := bufio.NewScanner(stderr)
	url := ""
	for url == "" && lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), "MCP server at "); ok {
			url, _, _ = strings.Cut(rest, " ")
		}
	}
	if url == "" {
		t.Fatal("mcp serve --http did not say where it serves")
	}
	go func() {
		for lines.Scan() { // drain the log
		}
	}()
	out, err = inspector(url, "--transport", "http", "--header", "Authorization: Bearer tok-123",
		"--method", "tools/call", "--tool-name", "execute_code", "--tool-arg", "code=z = 'over http'; print(z)")
	if err != nil || !strings.Contains(out, "over http") {
		t.Fatalf("execute_code over HTTP: %v\n%s", err, out)
	}
	out, err = inspector(url, "--transport", "http", "--header", "Authorization: Bearer tok-123",
		"--method", "tools/call", "--tool-name", "list_variables")
	if err != nil || !strings.Contains(out, "z: str = 'over http'") {
		t.Fatalf("list_variables over HTTP (the same live kernel): %v\n%s", err, out)
	}
	if out, err = inspector(url, "--transport", "http", "--header", "Authorization: Bearer wrong",
		"--method", "tools/list"); err == nil {
		t.Fatalf("a wrong token listed the tools:\n%s", out)
	}
}
