// Command mcpbench measures a trivial execute ("pass": execute_code takes
// no empty code) through `agentkernel mcp
// serve` (a go-sdk client over stdio, tools/call execute_code) side by
// side with jupyter_client's own execute on the same kernel — the server's
// backing kernel, which a Python process connects to by its connection
// file — in one run, the two taking turns in rounds so that a change in
// the machine's speed falls on both alike.
//
// The server runs in bypassPermissions mode: the call is decided (and the
// decision stored) without an ask, as a client that has allowed it would
// see it.
//
//	go run ./scripts/mcpbench -agentkernel bin/agentkernel
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// direct is jupyter_client's side: it connects to the kernel of the
// connection file in argv[1], then for each line N on stdin runs N empty
// executes (reply and idle, as a client waits for) and prints their times
// in nanoseconds on one line.
const direct = `
import sys, time, json
from jupyter_client import BlockingKernelClient
c = BlockingKernelClient()
c.load_connection_file(sys.argv[1])
c.start_channels()
c.wait_for_ready(timeout=60)
def run():
    msg_id = c.execute("pass", store_history=True)
    c.get_shell_msg(timeout=30)
    while True:
        m = c.get_iopub_msg(timeout=30)
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return
for _ in range(20):
    run()
print("ready", flush=True)
for line in sys.stdin:
    out = []
    for _ in range(int(line)):
        t = time.perf_counter_ns()
        run()
        out.append(time.perf_counter_ns() - t)
    print(json.dumps(out), flush=True)
`

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		os.Exit(1)
	}
}

func run() error {
	ak := flag.String("agentkernel", "bin/agentkernel", "the agentkernel binary")
	python := flag.String("python", "/usr/bin/python3", "the `PYTHON` with jupyter_client (and the backing kernel's ipykernel)")
	n := flag.Int("n", 1000, "empty executes for each client")
	rounds := flag.Int("rounds", 50, "rounds the two clients take turns in")
	flag.Parse()
	bin, err := filepath.Abs(*ak)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mcpbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	runtime := filepath.Join(tmp, "runtime")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	mcp, err := startMCP(ctx, bin, tmp, *python)
	if err != nil {
		return err
	}
	defer mcp.cs.Close()
	for range 20 { // the kernel starts at the first call; warm both up
		if _, err := mcp.execute(ctx); err != nil {
			return err
		}
	}
	conns, _ := filepath.Glob(filepath.Join(runtime, "kernel-*.json"))
	if len(conns) != 1 {
		return fmt.Errorf("want the backing kernel's one connection file in %s, found %v", runtime, conns)
	}
	jc, err := startJupyterClient(ctx, *python, conns[0])
	if err != nil {
		return err
	}
	defer jc.close()

	per := max(*n / *rounds, 1)
	var viaMCP, viaJC []time.Duration
	for range *rounds {
		for range per {
			d, err := mcp.execute(ctx)
			if err != nil {
				return err
			}
			viaMCP = append(viaMCP, d)
		}
		d, err := jc.executes(per)
		if err != nil {
			return err
		}
		viaJC = append(viaJC, d...)
	}
	fmt.Printf("execute of `pass` on the same ipykernel, %d each, %d rounds\n\n", len(viaMCP), *rounds)
	fmt.Printf("%-44s %10s %10s\n", "client", "p50", "p99")
	fmt.Printf("%-44s %10s %10s\n", "jupyter_client (BlockingKernelClient)", us(pct(viaJC, 50)), us(pct(viaJC, 99)))
	fmt.Printf("%-44s %10s %10s\n", "MCP tools/call execute_code (go-sdk, stdio)", us(pct(viaMCP, 50)), us(pct(viaMCP, 99)))
	fmt.Printf("\nratio MCP / jupyter_client: p50 %.2fx, p99 %.2fx\n",
		float64(pct(viaMCP, 50))/float64(pct(viaJC, 50)), float64(pct(viaMCP, 99))/float64(pct(viaJC, 99)))
	return nil
}

// mcpClient is the MCP side: a go-sdk client of `agentkernel mcp serve`
// over stdio.
type mcpClient struct{ cs *sdk.ClientSession }

// startMCP starts bin's MCP server in bypassPermissions mode, its
// workspace, data and runtime directories in tmp, its backing kernel
// python's ipykernel, and connects to it.
func startMCP(ctx context.Context, bin, tmp, python string) (*mcpClient, error) {
	cmd := exec.Command(bin, "mcp", "serve", "--dir", tmp)
	cmd.Env = append(os.Environ(), "JUPYTER_RUNTIME_DIR="+filepath.Join(tmp, "runtime"), "AGENTKERNEL_DATA_DIR="+filepath.Join(tmp, "data"),
		"AGENTKERNEL_CONFIG="+filepath.Join(tmp, "none.json"), "AGENTKERNEL_PERMISSION_MODE=bypassPermissions",
		"AGENTKERNEL_PYTHON="+python, "PYDEVD_DISABLE_FILE_VALIDATION=1")
	cmd.Stderr = os.Stderr
	c := sdk.NewClient(&sdk.Implementation{Name: "mcpbench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("start mcp serve: %w", err)
	}
	return &mcpClient{cs: cs}, nil
}

// execute times one tools/call execute_code of `pass`.
func (m *mcpClient) execute(ctx context.Context) (time.Duration, error) {
	t := time.Now()
	res, err := m.cs.CallTool(ctx, &sdk.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "pass"}})
	d := time.Since(t)
	if err == nil && res.IsError {
		b, _ := json.Marshal(res.Content)
		err = fmt.Errorf("execute_code failed: %s", b)
	}
	return d, err
}

// jupyterClient is jupyter_client's side: the Python process running
// direct on the kernel, asked for executes over its stdin.
type jupyterClient struct {
	py    *exec.Cmd
	in    io.WriteCloser
	lines *bufio.Scanner
}

// startJupyterClient starts python running direct on the kernel of the
// connection file conn, and waits until it is connected and warm.
func startJupyterClient(ctx context.Context, python, conn string) (*jupyterClient, error) {
	py := exec.CommandContext(ctx, python, "-c", direct, conn)
	py.Stderr = os.Stderr
	in, err := py.StdinPipe()
	if err != nil {
		return nil, err
	}
	outp, err := py.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := py.Start(); err != nil {
		return nil, err
	}
	j := &jupyterClient{py: py, in: in, lines: bufio.NewScanner(outp)}
	j.lines.Buffer(make([]byte, 1<<20), 1<<24)
	if !j.lines.Scan() || j.lines.Text() != "ready" {
		j.close()
		return nil, errors.New("jupyter_client did not connect to the kernel")
	}
	return j, nil
}

// executes has jupyter_client run n empty executes and returns their times.
func (j *jupyterClient) executes(n int) ([]time.Duration, error) {
	fmt.Fprintln(j.in, strconv.Itoa(n))
	if !j.lines.Scan() {
		return nil, errors.New("jupyter_client stopped")
	}
	var ns []int64
	if err := json.Unmarshal(j.lines.Bytes(), &ns); err != nil {
		return nil, err
	}
	d := make([]time.Duration, len(ns))
	for i, v := range ns {
		d[i] = time.Duration(v)
	}
	return d, nil
}

// close ends the Python process (its stdin closed) and waits for it.
func (j *jupyterClient) close() {
	j.in.Close()
	j.py.Wait()
}

func us(d time.Duration) string { return strings.TrimSpace(fmt.Sprintf("%8.0f µs", float64(d)/1e3)) }

func pct(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p/100))]
}
