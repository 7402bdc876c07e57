package main

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
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// jupyterServer is Debian's Notebook server, started for the benchmark on
// 127.0.0.1 with a random port and token.
type jupyterServer struct {
	url, token string
	cmd        *exec.Cmd
	dir        string
}

func startJupyterServer() (*jupyterServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir, err := os.MkdirTemp("", "kernelbench-server-")
	if err != nil {
		return nil, err
	}
	s := &jupyterServer{url: fmt.Sprintf("http://127.0.0.1:%d", port), token: uuid.NewString(), dir: dir}
	s.cmd = exec.Command("/usr/bin/python3", "-m", "notebook", "--no-browser", "--ip=127.0.0.1", fmt.Sprintf("--port=%d", port),
		"--NotebookApp.token="+s.token, "--notebook-dir="+dir, "--allow-root")
	s.cmd.Env = append(os.Environ(), "JUPYTER_RUNTIME_DIR="+filepath.Join(dir, "runtime"), "PYDEVD_DISABLE_FILE_VALIDATION=1")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer log.Close()
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start the notebook server: %w", err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		if _, err := s.kernels(); err == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			s.stop()
			return nil, fmt.Errorf("the notebook server did not start:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kernels lists the ids of the server's kernels.
func (s *jupyterServer) kernels() ([]string, error) {
	req, _ := http.NewRequest(http.MethodGet, s.url+"/api/kernels", nil)
	req.Header.Set("Authorization", "token "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/kernels: HTTP %d", resp.StatusCode)
	}
	var list []struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, err
	}
	ids := make([]string, len(list))
	for i, k := range list {
		ids[i] = k.ID
	}
	return ids, nil
}

// stop ends the server and its kernels (they are in its process group).
func (s *jupyterServer) stop() {
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	os.RemoveAll(s.dir)
}

// wsClient is a plain client of one server kernel's channels WebSocket,
// the baseline agentkernel's gateway backing is measured against.
type wsClient struct {
	c       *websocket.Conn
	session string
}

// dialKernel connects a wsClient to kernel id on s through httpc (nil:
// Go's default client).
func dialKernel(ctx context.Context, s *jupyterServer, id string, httpc *http.Client) (*wsClient, error) {
	session := uuid.NewString()
	u := "ws" + s.url[len("http"):] + "/api/kernels/" + id + "/channels?session_id=" + session
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: httpc, HTTPHeader: http.Header{"Authorization": {"token " + s.token}}})
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", u, err)
	}
	c.SetReadLimit(64 << 20)
	return &wsClient{c: c, session: session}, nil
}

// execute sends an execute_request for code and reads until its reply and
// its status idle have come.
func (w *wsClient) execute(ctx context.Context, code string) error {
	id := uuid.NewString()
	msg := map[string]any{
		"header": map[string]string{"msg_id": id, "session": w.session, "username": "bench", "msg_type": "execute_request",
			"version": "5.3", "date": time.Now().UTC().Format(time.RFC3339Nano)},
		"parent_header": map[string]any{}, "metadata": map[string]any{}, "channel": "shell",
		"content": map[string]any{"code": code, "silent": false, "store_history": true, "user_expressions": map[string]any{},
			"allow_stdin": false, "stop_on_error": true},
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if err := w.c.Write(ctx, websocket.MessageText, data); err != nil {
		return err
	}
	var replied, idle bool
	for !replied || !idle {
		typ, data, err := w.c.Read(ctx)
		if err != nil {
			return err
		}
		if typ != websocket.MessageText {
			continue
		}
		var m struct {
			Channel      string `json:"channel"`
			MsgType      string `json:"msg_type"`
			ParentHeader struct {
				MsgID string `json:"msg_id"`
			} `json:"parent_header"`
			Content struct {
				ExecutionState string `json:"execution_state"`
			} `json:"content"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
		if m.ParentHeader.MsgID != id {
			continue
		}
		switch {
		case m.MsgType == wire.MsgExecuteReply:
			replied = true
		case m.MsgType == wire.MsgStatus && m.Content.ExecutionState == "idle":
			idle = true
		}
	}
	return nil
}

// benchGateway measures an empty execute (reply and idle) on one kernel of
// a Jupyter server, taking turns in rounds: through agentkernel (code mode,
// gateway backing) from a ZeroMQ client, and from a plain WebSocket client
// on the same server kernel.
func benchGateway(ak string, nexec, rounds int) error {
	if nexec < rounds {
		return errors.New("need -gwexec ≥ -rounds")
	}
	fmt.Fprintln(os.Stderr, "starting a Jupyter server ...")
	srv, err := startJupyterServer()
	if err != nil {
		return err
	}
	defer srv.stop()
	prefix, err := os.MkdirTemp("", "kernelbench-gw-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(prefix)
	ctx := context.Background()
	k, err := startGatewayKernel(ctx, ak, prefix, srv)
	if err != nil {
		return err
	}
	defer k.Shutdown(ctx)
	c := k.Client()
	for range 50 { // warm up; the first starts the server kernel
		if _, err := c.Execute(ctx, "", client.ExecuteOptions{}, client.Handlers{}); err != nil {
			return fmt.Errorf("agentkernel: %w", err)
		}
	}
	ids, err := srv.kernels()
	if err != nil {
		return err
	}
	if len(ids) != 1 {
		return fmt.Errorf("the server runs %d kernels, want agentkernel's one", len(ids))
	}
	// Two direct clients on the same kernel: one with Go's default
	// connections, one with the connections agentkernel's gateway backing
	// makes (backing.Gateway.HTTPClient: quick ACKs), the like-for-like
	// baseline.
	plain, err := dialKernel(ctx, srv, ids[0], nil)
	if err != nil {
		return err
	}
	defer plain.c.Close(websocket.StatusNormalClosure, "")
	same, err := dialKernel(ctx, srv, ids[0], backing.Gateway{URL: srv.url, ValidateCert: true}.HTTPClient())
	if err != nil {
		return err
	}
	defer same.c.Close(websocket.StatusNormalClosure, "")
	for range 50 {
		for _, ws := range []*wsClient{plain, same} {
			if err := ws.execute(ctx, ""); err != nil {
				return fmt.Errorf("websocket: %w", err)
			}
		}
	}
	runs := []*gatewayRun{
		{name: "direct WebSocket client, Go's default connection", run: func(ctx context.Context) error { return plain.execute(ctx, "") }},
		{name: "direct WebSocket client, agentkernel's connection (quick ACKs)", run: func(ctx context.Context) error { return same.execute(ctx, "") }},
		{name: "agentkernel code mode, gateway backing, from a ZeroMQ client", run: func(ctx context.Context) error {
			_, err := c.Execute(ctx, "", client.ExecuteOptions{}, client.Handlers{})
			return err
		}},
	}
	per := nexec / rounds
	if err := timeRuns(ctx, runs, per, rounds); err != nil {
		return err
	}
	printGateway(runs, srv.url, per*rounds)
	return nil
}

// startGatewayKernel installs agentkernel's kernelspec with gateway backing
// on srv into prefix, puts it first on JUPYTER_PATH, and starts it.
func startGatewayKernel(ctx context.Context, ak, prefix string, srv *jupyterServer) (*client.Kernel, error) {
	install := exec.Command(ak, "install", "--prefix", prefix, "--name", "agentkernel-bench-gw", "--gateway-url", srv.url)
	install.Env = append(os.Environ(), "JUPYTER_GATEWAY_AUTH_TOKEN="+srv.token)
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("install: %v: %s", err, out)
	}
	os.Setenv("JUPYTER_PATH", filepath.Join(prefix, "share", "jupyter")+string(os.PathListSeparator)+os.Getenv("JUPYTER_PATH"))
	spec, err := client.FindSpec("agentkernel-bench-gw")
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(os.Stderr, "starting agentkernel with gateway backing ...")
	return client.Start(ctx, spec, client.Options{Env: []string{"JUPYTER_GATEWAY_AUTH_TOKEN=" + srv.token}})
}

// gatewayRun is one client of the gateway benchmark: an empty execute
// through it, and its times.
type gatewayRun struct {
	name string
	run  func(context.Context) error
	d    []time.Duration
}

// timeRuns times per executes of each run in each of rounds rounds, the
// runs taking turns.
func timeRuns(ctx context.Context, runs []*gatewayRun, per, rounds int) error {
	for round := range rounds {
		fmt.Fprintf(os.Stderr, "\rgateway round %d/%d", round+1, rounds)
		for _, r := range runs {
			for range per {
				start := time.Now()
				if err := r.run(ctx); err != nil {
					return fmt.Errorf("%s: %w", r.name, err)
				}
				r.d = append(r.d, time.Since(start))
			}
		}
	}
	fmt.Fprintln(os.Stderr)
	return nil
}

// printGateway prints the runs' p50 and p99 on the server at url, n
// executes each, and agentkernel's (the last run) over the direct clients'.
func printGateway(runs []*gatewayRun, url string, n int) {
	fmt.Printf("\nempty execute (reply+idle) on one kernel of a Jupyter server (Notebook, %s), %d each, taking turns:\n", url, n)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "client\tp50\tp99\t")
	for _, r := range runs {
		fmt.Fprintf(w, "%s\t%s\t%s\t\n", r.name, us(pct(r.d, 0.5)), us(pct(r.d, 0.99)))
	}
	w.Flush()
	through := pct(runs[2].d, 0.5)
	fmt.Printf("agentkernel over the direct client with its connection: p50 %+d µs (the goal: at most +1000 µs); over Go's default connection: %+d µs\n",
		(through - pct(runs[1].d, 0.5)).Microseconds(), (through - pct(runs[0].d, 0.5)).Microseconds())
}
