// Command kernelbench measures Jupyter protocol latency from a Go client,
// side by side, for each kernelspec it is given in the same run: the
// kernel_info round trip (p50/p99), an empty execute (reply and idle,
// p50/p90/p99) and the kernel process's CPU time and context switches per
// execute (and its backing kernel's), an execute that prints 1 MB (one
// stream message; -big, p50/p90), and
// start-up to the first kernel_info_reply. The client connects over TCP, as
// jupyter_client and JupyterLab do (-transport ipc: Unix sockets, for
// every kernel alike). With -agentkernel BIN it installs
// BIN's kernelspec (code mode over python3) into a temporary prefix first.
// All kernels run at once and take turns in rounds, so that a change in the
// machine's speed during the run does not favour one of them.
//
// With -gateway (and -agentkernel) it also starts Debian's Notebook server
// (127.0.0.1, a random port and token) and measures an empty execute on one
// of its kernels through agentkernel with gateway backing, from a ZeroMQ
// client, side by side with a plain WebSocket client on the same server
// kernel; -local=false measures only that.
//
//	go run ./scripts/kernelbench -agentkernel bin/agentkernel -gateway
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kernelbench:", err)
		os.Exit(1)
	}
}

type result struct {
	spec               string
	rtP50, rtP99       time.Duration // kernel_info request → reply
	infoP50, infoP99   time.Duration // kernel_info reply and idle, through kernel/client
	execP50, execP90   time.Duration
	execP99            time.Duration
	bigP50, bigP90     time.Duration // an execute that prints 1 MB
	startP50, startMin time.Duration
	rssKiB             int
	cpuPerExec         time.Duration
	switchesPerExec    float64
}

// target is one running kernel and what was measured on it.
type target struct {
	name            string
	spec            *client.Spec
	k               *client.Kernel
	rt, info, execs []time.Duration
	bigs            []time.Duration // executes that print bigOutput
	execCPU         time.Duration   // the kernel process's CPU time during execs
	execSwitches    int             // its threads' context switches during execs
	kidsCPU         time.Duration   // the same for its child processes (a backing kernel)
	kidsSwitches    int
}

func run() error {
	specs := flag.String("specs", "python3", "comma-separated kernelspecs to measure")
	newer := flag.String("ipykernel-python", "", "a `PYTHON` with another ipykernel (the PyPI stack's 7.4: scripts/modern-venv.sh): its kernel is measured beside -specs as \"ipykernel-pypi\", with agentkernel over it")
	ak := flag.String("agentkernel", "", "agentkernel binary: install its kernelspec and measure it too")
	baseline := flag.String("baseline", "", "another agentkernel `BINARY` (an older build): measured over python3 beside -agentkernel, in the same rounds, as \"agentkernel-baseline\"")
	n := flag.Int("n", 2000, "kernel_info round trips")
	nexec := flag.Int("exec", 2000, "empty executes")
	nbig := flag.Int("big", 200, "executes that print 1 MB (0: none; else ≥ -rounds)")
	rounds := flag.Int("rounds", 100, "the measurements are split into this many rounds, the kernels taking turns, so that drift in the machine's speed falls on all alike")
	starts := flag.Int("starts", 10, "cold starts to the first kernel_info_reply")
	local := flag.Bool("local", true, "measure the local kernels: -specs, and agentkernel over python3")
	gateway := flag.Bool("gateway", false, "measure agentkernel with gateway backing against a direct WebSocket client on a Jupyter server (needs -agentkernel)")
	gwexec := flag.Int("gwexec", 2000, "empty executes with gateway backing, for each client")
	flag.StringVar(&transport, "transport", client.TransportTCP, "how the client connects to every kernel measured: tcp, as jupyter_client and JupyterLab do, or ipc (Unix sockets); agentkernel's own backing kernel is reached over ipc either way")
	flag.Parse()
	if transport != client.TransportTCP && transport != client.TransportIPC {
		return fmt.Errorf("-transport %q: want tcp or ipc", transport)
	}
	if *rounds < 1 || *n < *rounds || *nexec < *rounds || *starts < 1 || (*nbig != 0 && *nbig < *rounds) {
		return errors.New("need -rounds ≥ 1, -n and -exec ≥ -rounds, -big 0 or ≥ -rounds, -starts ≥ 1")
	}
	if *gateway && *ak == "" {
		return errors.New("-gateway needs -agentkernel")
	}
	if *baseline != "" && *ak == "" {
		return errors.New("-baseline needs -agentkernel")
	}
	if *local {
		all := *specs
		if *newer != "" {
			dir, err := installIPyKernel(*newer)
			if err != nil {
				fmt.Fprintln(os.Stderr, "kernelbench:", err)
				os.Exit(1)
			}
			defer os.RemoveAll(dir)
			all += ",ipykernel-pypi"
		}
		if err := benchLocal(all, *ak, *baseline, *n, *nexec, *nbig, *rounds, *starts); err != nil {
			return err
		}
	}
	if *gateway {
		return benchGateway(*ak, *gwexec, *rounds)
	}
	return nil
}

// benchLocal measures the kernels that run on this machine: -specs, and
// with -agentkernel, agentkernel over each of them (and the baseline over
// python3).
func benchLocal(specs, ak, baseline string, n, nexec, nbig, rounds, starts int) error {
	names := strings.Split(specs, ",")
	// over maps agentkernel's kernelspec over each backing to it: the pairs
	// whose ratios are printed.
	over := map[string]string{}
	if ak != "" {
		prefix, ours, err := installOurs(ak, baseline, names, over)
		if prefix != "" {
			defer os.RemoveAll(prefix)
		}
		if err != nil {
			return err
		}
		names = append(names, ours...)
	}
	results, err := measureRunning(names, n, nexec, nbig, rounds)
	if err != nil {
		return err
	}
	if err := coldStarts(results, starts); err != nil {
		return err
	}
	printLocal(results, over)
	return nil
}

// installOurs installs agentkernel's kernelspec over each backing of names
// (and the baseline's over python3) into a temporary prefix put first on
// JUPYTER_PATH, recording in over what each is over. It returns the prefix
// (to remove, also with an error; "" when it was not made) and the names of
// the kernelspecs installed.
func installOurs(ak, baseline string, names []string, over map[string]string) (prefix string, ours []string, err error) {
	prefix, err = os.MkdirTemp("", "kernelbench-")
	if err != nil {
		return "", nil, err
	}
	for _, backing := range names {
		name := "agentkernel-bench"
		if backing != "python3" {
			name = "agentkernel-over-" + backing
		}
		out, err := exec.Command(ak, "install", "--prefix", prefix, "--name", name, "--mode", "code", "--backing", backing).CombinedOutput()
		if err != nil {
			return prefix, nil, fmt.Errorf("install: %v: %s", err, out)
		}
		over[name] = backing
		ours = append(ours, name)
	}
	if baseline != "" {
		out, err := exec.Command(baseline, "install", "--prefix", prefix, "--name", "agentkernel-baseline", "--mode", "code", "--backing", "python3").CombinedOutput()
		if err != nil {
			return prefix, nil, fmt.Errorf("install the baseline: %v: %s", err, out)
		}
		over["agentkernel-baseline"] = "python3"
		ours = append(ours, "agentkernel-baseline")
	}
	os.Setenv("JUPYTER_PATH", filepath.Join(prefix, "share", "jupyter")+string(os.PathListSeparator)+os.Getenv("JUPYTER_PATH"))
	return prefix, ours, nil
}

// measureRunning starts the kernelspecs names, all at once, measures them
// in rounds, taking turns, and shuts them down. It prints the CPU time and
// context switches of their child processes (a backing kernel) per execute.
func measureRunning(names []string, n, nexec, nbig, rounds int) ([]result, error) {
	ctx := context.Background()
	var targets []*target
	defer func() {
		for _, t := range targets {
			t.k.Shutdown(ctx)
		}
	}()
	for _, name := range names {
		t, err := startTarget(ctx, name)
		if t != nil {
			targets = append(targets, t)
		}
		if err != nil {
			return nil, err
		}
	}
	for round := range rounds {
		fmt.Fprintf(os.Stderr, "\rround %d/%d", round+1, rounds)
		for _, t := range targets {
			if err := t.measure(ctx, n/rounds, nexec/rounds); err != nil {
				return nil, fmt.Errorf("%s: %w", t.name, err)
			}
			if err := t.measureBig(ctx, nbig/rounds); err != nil {
				return nil, fmt.Errorf("%s: %w", t.name, err)
			}
		}
	}
	fmt.Fprintln(os.Stderr)
	var results []result
	for _, t := range targets {
		if t.kidsCPU > 0 {
			fmt.Printf("%s's child processes (its backing kernel) per execute: CPU %s, context switches %.1f\n", t.name,
				us(t.kidsCPU/time.Duration(len(t.execs))), float64(t.kidsSwitches)/float64(len(t.execs)))
		}
		results = append(results, t.result())
	}
	return results, nil
}

// startTarget starts the kernelspec name and warms it up (which lets a
// backing kernel finish starting). A target whose warm-up failed is
// returned with the error, to be shut down.
// transport is how the client connects to the kernels measured (-transport).
var transport string

func startTarget(ctx context.Context, name string) (*target, error) {
	fmt.Fprintf(os.Stderr, "starting %s ...\n", name)
	spec, err := client.FindSpec(name)
	if err != nil {
		return nil, err
	}
	k, err := client.Start(ctx, spec, client.Options{Transport: transport})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t := &target{name: name, spec: spec, k: k}
	for range 50 {
		if _, err := k.Client().KernelInfo(ctx); err != nil {
			return t, fmt.Errorf("%s: %w", name, err)
		}
		if _, err := k.Client().Execute(ctx, "", client.ExecuteOptions{}, client.Handlers{}); err != nil {
			return t, fmt.Errorf("%s: %w", name, err)
		}
	}
	return t, nil
}

// result is what was measured on t, with its resident set now; the
// start-up times are measured later, by coldStarts.
func (t *target) result() result {
	r := result{spec: t.name, rssKiB: rss(t.k.Pid())}
	r.rtP50, r.rtP99 = pct(t.rt, 0.5), pct(t.rt, 0.99)
	r.infoP50, r.infoP99 = pct(t.info, 0.5), pct(t.info, 0.99)
	r.execP50, r.execP90, r.execP99 = pct(t.execs, 0.5), pct(t.execs, 0.9), pct(t.execs, 0.99)
	if len(t.bigs) > 0 {
		r.bigP50, r.bigP90 = pct(t.bigs, 0.5), pct(t.bigs, 0.9)
	}
	r.cpuPerExec = t.execCPU / time.Duration(len(t.execs))
	r.switchesPerExec = float64(t.execSwitches) / float64(len(t.execs))
	return r
}

// coldStarts measures starts cold starts of each result's kernelspec, one
// kernel at a time.
func coldStarts(results []result, starts int) error {
	for i := range results {
		fmt.Fprintf(os.Stderr, "cold starts of %s ...\n", results[i].spec)
		spec, err := client.FindSpec(results[i].spec)
		if err != nil {
			return err
		}
		var d []time.Duration
		for range starts {
			t, err := coldStart(spec)
			if err != nil {
				return fmt.Errorf("%s: %w", results[i].spec, err)
			}
			d = append(d, t)
		}
		results[i].startP50, results[i].startMin = pct(d, 0.5), slices.Min(d)
	}
	return nil
}

// printLocal prints the table of results, then the ratios of each
// agentkernel kernelspec to the one it is over.
func printLocal(results []result, over map[string]string) {
	fmt.Printf("the client connects to each kernel over %s (-transport)\n", transport)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "kernelspec\tkernel_info round trip p50\tp99\twith idle p50\tp99\texecute (reply+idle) p50\tp90\tp99\t1 MB output p50\tp90\tCPU/execute\tswitches/execute\tstart-up p50\tmin\tRSS MiB\t")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%.1f\t\n", r.spec, us(r.rtP50), us(r.rtP99), us(r.infoP50), us(r.infoP99),
			us(r.execP50), us(r.execP90), us(r.execP99), us(r.bigP50), us(r.bigP90), us(r.cpuPerExec), r.switchesPerExec, ms(r.startP50), ms(r.startMin), float64(r.rssKiB)/1024)
	}
	w.Flush()
	byName := map[string]result{}
	for _, r := range results {
		byName[r.spec] = r
	}
	fmt.Println()
	for _, r := range results {
		if b, ok := over[r.spec]; ok {
			base := byName[b]
			fmt.Printf("%s vs %s: kernel_info round trip p50 %.2fx, execute p50 %.3fx p90 %.3fx", r.spec, base.spec,
				float64(r.rtP50)/float64(base.rtP50), ratio(r.execP50, base.execP50), ratio(r.execP90, base.execP90))
			if r.bigP50 > 0 {
				fmt.Printf(", 1 MB output p50 %.3fx p90 %.3fx", ratio(r.bigP50, base.bigP50), ratio(r.bigP90, base.bigP90))
			}
			fmt.Println()
		}
	}
}

// installIPyKernel installs python's ipykernel as the kernelspec
// "ipykernel-pypi" in a temporary prefix put first on JUPYTER_PATH, and
// returns the prefix.
func installIPyKernel(python string) (string, error) {
	prefix, err := os.MkdirTemp("", "kernelbench-ipykernel-")
	if err != nil {
		return "", err
	}
	out, err := exec.Command(python, "-m", "ipykernel", "install", "--prefix", prefix, "--name", "ipykernel-pypi",
		"--display-name", "ipykernel (PyPI)").CombinedOutput()
	if err != nil {
		os.RemoveAll(prefix)
		return "", fmt.Errorf("%s -m ipykernel install: %v: %s", python, err, out)
	}
	os.Setenv("JUPYTER_PATH", filepath.Join(prefix, "share", "jupyter")+string(os.PathListSeparator)+os.Getenv("JUPYTER_PATH"))
	return prefix, nil
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/1e3) }
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

func pct(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// bigOutput is the cell of the 1 MB output execute: one stream message of
// a million characters (and its newline).
const bigOutput = "print('x' * 1_000_000)"

// measure runs one round on t: n kernel_info calls through kernel/client,
// n raw round trips, nexec empty executes (the CPU time and context
// switches counted are theirs).
func (t *target) measure(ctx context.Context, n, nexec int) error {
	c := t.k.Client()
	for range n {
		start := time.Now()
		if _, err := c.KernelInfo(ctx); err != nil {
			return err
		}
		t.info = append(t.info, time.Since(start))
	}
	d, err := roundTrips(t.k.ConnectionInfo(), n)
	if err != nil {
		return err
	}
	t.rt = append(t.rt, d...)
	kids := descendants(t.k.Pid())
	cpu0, sw0 := cpuTime(t.k.Pid()), switches(t.k.Pid())
	var kcpu0 time.Duration
	var ksw0 int
	for _, k := range kids {
		kcpu0 += cpuTime(k)
		ksw0 += switches(k)
	}
	defer func() {
		t.execCPU += cpuTime(t.k.Pid()) - cpu0
		t.execSwitches += switches(t.k.Pid()) - sw0
		for _, k := range kids {
			t.kidsCPU += cpuTime(k)
			t.kidsSwitches += switches(k)
		}
		t.kidsCPU -= kcpu0
		t.kidsSwitches -= ksw0
	}()
	for range nexec {
		start := time.Now()
		if _, err := c.Execute(ctx, "", client.ExecuteOptions{}, client.Handlers{}); err != nil {
			return err
		}
		t.execs = append(t.execs, time.Since(start))
	}
	return nil
}

// measureBig runs n executes of bigOutput, checking that all of it came.
func (t *target) measureBig(ctx context.Context, n int) error {
	c := t.k.Client()
	for range n {
		got := 0
		start := time.Now()
		_, err := c.Execute(ctx, bigOutput, client.ExecuteOptions{}, client.Handlers{IOPub: func(m *wire.Message) {
			if m.Header.MsgType == wire.MsgStream {
				if s, err := m.DecodeStream(); err == nil {
					got += len(s.Text)
				}
			}
		}})
		if err != nil {
			return err
		}
		d := time.Since(start)
		if got != 1_000_001 {
			return fmt.Errorf("1 MB output: got %d characters of stream", got)
		}
		t.bigs = append(t.bigs, d)
	}
	return nil
}

// coldStart launches the kernel and measures the time from exec to the
// first kernel_info_reply on a DEALER that keeps asking.
func coldStart(spec *client.Spec) (time.Duration, error) {
	conn, err := wire.NewConnectionInfo("127.0.0.1")
	if err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "kernelbench-conn-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "kernel.json")
	if err := wire.WriteConnectionFile(file, conn); err != nil {
		return 0, err
	}
	argv := make([]string, len(spec.Argv))
	for i, a := range spec.Argv {
		argv[i] = strings.ReplaceAll(a, "{connection_file}", file)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), "AGENTKERNEL_LOG_LEVEL=error")
	signer, _ := wire.NewSigner("", []byte(conn.Key), wire.Limits{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sock := zmq4.NewDealer(ctx, zmq4.WithDialerRetry(time.Millisecond), zmq4.WithDialerMaxRetries(-1))
	defer sock.Close()

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		// Children in groups of their own (agentkernel's backing
		// kernel) would live on, still starting, and slow the next run.
		for _, pid := range descendants(cmd.Process.Pid) {
			syscall.Kill(-pid, syscall.SIGKILL)
			syscall.Kill(pid, syscall.SIGKILL)
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	if err := sock.Dial(conn.Addr(conn.ShellPort)); err != nil {
		return 0, err
	}
	m := &wire.Message{Header: wire.NewHeader("bench", "bench", wire.MsgKernelInfoRequest)}
	frames, _ := signer.Encode(m)
	if err := sock.SendMulti(zmq4.NewMsgFrom(frames...)); err != nil {
		return 0, err
	}
	for {
		msg, err := sock.Recv()
		if err != nil {
			return 0, err
		}
		rep, err := signer.Decode(msg.Frames)
		if err == nil && rep.Header.MsgType == wire.MsgKernelInfoReply {
			return time.Since(start), nil
		}
		if ctx.Err() != nil {
			return 0, errors.New("no kernel_info_reply within 30s")
		}
	}
}

// descendants returns the processes below pid.
func descendants(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(b)) {
			var child int
			if _, err := fmt.Sscan(f, &child); err == nil {
				out = append(out, child)
				out = append(out, descendants(child)...)
			}
		}
	}
	return out
}

// cpuTime returns the user and system CPU time pid has used so far (not
// its children's: for agentkernel, the backing kernel is not counted).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces) in parentheses;
	// utime and stime are the 14th and 15th, in clock ticks (100 Hz).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// switches returns the context switches of pid's threads so far: how often
// they slept and were woken, or were preempted.
func switches(pid int) int {
	n := 0
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				var x int
				fmt.Sscan(strings.TrimSpace(v), &x)
				n += x
			}
		}
	}
	return n
}

// rss returns the resident set of pid in KiB (0 if unknown).
func rss(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			var kb int
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmRSS:")), "%d", &kb)
			return kb
		}
	}
	return 0
}

// roundTrips measures n kernel_info request → reply round trips on a plain
// DEALER: the kernel's own answer time, the same way for every kernel.
func roundTrips(conn *wire.ConnectionInfo, n int) ([]time.Duration, error) {
	signer, err := wire.NewSigner(conn.SignatureScheme, []byte(conn.Key), wire.Limits{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sock := zmq4.NewDealer(ctx)
	defer sock.Close()
	if err := sock.Dial(conn.Addr(conn.ShellPort)); err != nil {
		return nil, err
	}
	d := make([]time.Duration, 0, n)
	const warm = 5
	for i := range n + warm {
		m := &wire.Message{Header: wire.NewHeader("bench", "bench", wire.MsgKernelInfoRequest)}
		frames, _ := signer.Encode(m)
		t := time.Now()
		if err := sock.SendMulti(zmq4.NewMsgFrom(frames...)); err != nil {
			return nil, err
		}
		for {
			msg, err := sock.Recv()
			if err != nil {
				return nil, err
			}
			rep, err := signer.Decode(msg.Frames)
			if err == nil && rep.Header.MsgType == wire.MsgKernelInfoReply {
				if p, _ := rep.Parent(); p.MsgID == m.Header.MsgID {
					break
				}
			}
		}
		if i >= warm { // after a warm-up
			d = append(d, time.Since(t))
		}
	}
	return d, nil
}
