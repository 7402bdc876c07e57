package backing

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The reaper deletes a runner's kernels from the server when the process
// that started them dies without deleting them: SIGKILL (jupyter_client's
// forced shutdown, the OOM killer), a crash. Left alone such a kernel would
// stay on the server for good; on Kubernetes it is a leaked pod.
//
// The runner starts the reaper (its own executable, ReaperCommand) in a
// session of its own, so that a signal to the runner's process group does
// not reach it, and holds the write end of a pipe that is the reaper's
// stdin. Through it go the server's settings (the token included: never on
// a command line or in an environment) and the ids of the kernels started
// and deleted. The reaper blocks reading it; when the runner exits, however
// it exits, the pipe ends. After a clean close ("q") the reaper exits; else
// it deletes the kernels still listed, retrying for up to ReapWindow, and
// exits. A killed runner's kernel thus outlives it by one DELETE request:
// milliseconds on a reachable server, ReapWindow at most.

// ReapWindow bounds how long the reaper tries to delete the kernels of a
// runner that died.
const ReapWindow = 30 * time.Second

// reaper is the runner's end of the pipe.
type reaper struct {
	mu  sync.Mutex
	w   *os.File
	cmd *exec.Cmd
}

// startReaper starts the reaper for the kernels of gw: command is its
// command line (the agentkernel executable and its reaper subcommand).
func startReaper(command []string, gw Gateway) (*reaper, error) {
	r, w, err := os.Pipe() // close-on-exec: no other child holds the write end
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin, cmd.Stderr = r, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start the gateway reaper: %w", err)
	}
	r.Close()
	go cmd.Wait() //nolint:errcheck // reaps the child: its exit tells nothing more than the pipe
	rp := &reaper{w: w, cmd: cmd}
	settings, _ := json.Marshal(gw)
	if err := rp.send(string(settings)); err != nil {
		rp.w.Close()
		return nil, fmt.Errorf("start the gateway reaper: %w", err)
	}
	return rp, nil
}

func (rp *reaper) send(line string) error {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.w == nil {
		return os.ErrClosed
	}
	_, err := io.WriteString(rp.w, line+"\n")
	return err
}

// started and deleted tell the reaper of a kernel.
func (rp *reaper) started(id string) { rp.send("+" + id) }
func (rp *reaper) deleted(id string) { rp.send("-" + id) }

// close ends the pipe: with clean, the reaper exits at once; without, it
// deletes the kernels it still lists.
func (rp *reaper) close(clean bool) {
	if clean {
		rp.send("q")
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.w != nil {
		rp.w.Close()
		rp.w = nil
	}
}

// RunReaper is the reaper process: it reads the runner's pipe from in
// until it ends, then deletes the kernels still listed (unless told "q").
// Logs go to errw. It returns the process's exit code. The process should
// ignore SIGTERM, SIGINT, SIGHUP and SIGPIPE first (IgnoreStopSignals).
func RunReaper(in io.Reader, errw io.Writer) int {
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() {
		return 0 // the runner went before it said anything: no kernel
	}
	var gw Gateway
	if err := json.Unmarshal(sc.Bytes(), &gw); err != nil {
		fmt.Fprintln(errw, "agentkernel gateway-reaper: bad settings:", err)
		return 2
	}
	gw = gw.withDefaults()
	kernels := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "q":
			return 0
		case strings.HasPrefix(line, "+"):
			kernels[line[1:]] = true
		case strings.HasPrefix(line, "-"):
			delete(kernels, line[1:])
		}
	}
	// The runner is gone without closing: its kernels are orphans.
	ctx, cancel := context.WithTimeout(context.Background(), ReapWindow)
	defer cancel()
	httpc := gw.HTTPClient()
	code := 0
	for id := range kernels {
		if err := reap(ctx, httpc, gw, id); err != nil {
			fmt.Fprintf(errw, "agentkernel gateway-reaper: kernel %s stays on %s: %v\n", id, gw.URL, err)
			code = 1
		}
	}
	return code
}

// reap deletes the kernel, retrying while the server cannot be reached.
func reap(ctx context.Context, httpc *http.Client, gw Gateway, id string) error {
	for wait := 200 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, gw.endpoint("/api/kernels/"+id), nil)
		if err != nil {
			return err
		}
		req.Header = gw.header()
		resp, err := httpc.Do(req)
		if err == nil {
			resp.Body.Close()
			switch {
			case resp.StatusCode < 300, resp.StatusCode == http.StatusNotFound:
				return nil
			case resp.StatusCode < 500:
				return fmt.Errorf("HTTP %d", resp.StatusCode)
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// IgnoreStopSignals makes the reaper process deaf to what stops processes
// wholesale: a "stop everything" SIGTERM (or a hangup, an interrupt) must
// not end it before the process it watches, and a closed stderr must not
// kill it mid-delete. It ends when the pipe says so, or by SIGKILL.
func IgnoreStopSignals() {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
}
