// Command ckptbench measures what checkpointing (the workspace tracking
// that rewinds restore files from) costs in a data workspace, side by side
// with an empty directory, in one run. It generates a workspace like a
// data scientist's (a 500 MB CSV, four 20 MB binaries, 2,000 small source
// files: 588 MB; -large: 1 GB and 10,000 files) and measures, in each
// directory, against the scripted model:
//
//   - the first prompt's first output: a fresh agentkernel kernel (prompt
//     mode, started as Jupyter starts it) in the directory, its first
//     prompt sent at once; with a new store (the first time in this
//     workspace) and with the store of earlier runs;
//
//   - the checkpoint overhead of a step: the scans around an execute_code
//     call (took_ms of stream-json's checkpoint event), for the first
//     prompt's step (which waits for the baseline) and a later prompt's;
//
//   - later prompts in a running kernel: each runs code that writes a file
//     (a step, checkpointed) and answers; execute to reply, the two
//     directories' kernels taking turns;
//
//   - a repeated `ask` (text only): wall time and peak RSS.
//
//     go run ./scripts/ckptbench -agentkernel bin/agentkernel
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentkernel/agentkernel/internal/workspacegen"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ckptbench:", err)
		os.Exit(1)
	}
}

type bench struct {
	bin  string
	srv  *scripted.Server
	tmp  string
	runs int
}

// figures are one directory's measurements.
type figures struct {
	firstCold, firstWarm time.Duration // first output of a fresh kernel's first prompt
	stepFirst, stepLater float64       // ms of checkpointing around a step
	askCold, askWarm     time.Duration // text-only ask: the first, then the median of the repeats
	later                time.Duration // a later prompt with a step, execute to reply: the median
	rssCold, rssWarm     int64         // peak RSS, KiB: the first ask, the largest repeat
}

func run() error {
	bin := flag.String("agentkernel", "bin/agentkernel", "agentkernel binary")
	large := flag.Bool("large", false, "a 1 GB workspace of 10,000 files instead of 588 MB and 2,000")
	runs := flag.Int("runs", 7, "repeats of each warm measurement (the median is shown)")
	keep := flag.String("dir", "", "generate the workspace here and keep it (default: a temporary directory, removed)")
	flag.Parse()
	abs, err := filepath.Abs(*bin)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "ckptbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b := &bench{bin: abs, srv: scripted.New(nil), tmp: tmp, runs: *runs}
	os.Setenv("JUPYTER_PATH", filepath.Join(tmp, "share", "jupyter"))
	defer b.srv.Close()

	spec, name := workspacegen.DataScience, "588 MB: a 500 MB CSV, 4 × 20 MB binaries, 2,000 small files"
	if *large {
		spec = workspacegen.Spec{CSVBytes: 800 << 20, Binaries: 5, BinaryBytes: 40 << 20, SmallFiles: 10000}
		name = "1 GB: an 800 MB CSV, 5 × 40 MB binaries, 10,000 small files"
	}
	empty := filepath.Join(tmp, "empty")
	ws := *keep
	if ws == "" {
		ws = filepath.Join(tmp, "workspace")
	}
	for _, d := range []string{empty, ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "src")); err != nil {
		fmt.Fprintf(os.Stderr, "generating the workspace (%s)…\n", name)
		if err := workspacegen.Write(ws, spec); err != nil {
			return err
		}
	}
	res, err := b.measure([2]string{empty, ws})
	if err != nil {
		return err
	}
	e, w := res[0], res[1]
	fmt.Printf("workspace: %s\n\n", name)
	fmt.Printf("%-46s %12s %12s %8s  %s\n", "", "empty dir", "workspace", "ratio", "target")
	ratio := func(label string, a, b time.Duration, target string) {
		fmt.Printf("%-46s %12s %12s %7.2f×  %s\n", label, ms(a), ms(b), float64(b)/float64(max(a, 1)), target)
	}
	ratio("first prompt's first output, new store", e.firstCold, w.firstCold, "")
	ratio("first prompt's first output", e.firstWarm, w.firstWarm, "≤ 1.2×")
	fmt.Printf("%-46s %12s %12s %8s  %s\n", "checkpoint around the first prompt's step", fmtMS(e.stepFirst), fmtMS(w.stepFirst), "", "")
	fmt.Printf("%-46s %12s %12s %8s  %s\n", "checkpoint around a later prompt's step", fmtMS(e.stepLater), fmtMS(w.stepLater), "", "≤ 5 ms")
	ratio("later prompt with a step, execute to reply", e.later, w.later, "≤ 1.2×")
	ratio("first ask (text), new store", e.askCold, w.askCold, "")
	ratio("repeated ask (text)", e.askWarm, w.askWarm, "≤ 1.5×")
	fmt.Printf("%-46s %9d MiB %9d MiB %+7d MiB\n", "peak RSS, first ask", e.rssCold>>10, w.rssCold>>10, (w.rssCold-e.rssCold)>>10)
	fmt.Printf("%-46s %9d MiB %9d MiB %+7d MiB  ≤ +64 MiB\n", "peak RSS, repeated ask", e.rssWarm>>10, w.rssWarm>>10, (w.rssWarm-e.rssWarm)>>10)
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
func fmtMS(v float64) string    { return fmt.Sprintf("%.2f ms", v) }

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// measure takes both directories' figures, each directory with data
// directories of its own. Repeated measurements alternate between the two,
// so that the machine's drift weighs on both alike.
func (b *bench) measure(dirs [2]string) ([2]figures, error) {
	var f [2]figures
	var kenv, aenv [2][]string
	for i, dir := range dirs {
		kenv[i] = b.env(filepath.Join(b.tmp, fmt.Sprint("kernel-data-", i)))
		aenv[i] = b.env(filepath.Join(b.tmp, fmt.Sprint("ask-data-", i)))
		if err := b.install(kenv[i]); err != nil {
			return f, err
		}
		var err error
		fmt.Fprintf(os.Stderr, "first prompt, new store, in %s…\n", dir)
		if f[i].firstCold, err = b.firstOutput(dir, kenv[i]); err != nil {
			return f, err
		}
		fmt.Fprintf(os.Stderr, "checkpoints around steps in %s…\n", dir)
		if f[i].stepFirst, f[i].stepLater, err = b.steps(dir, b.env(filepath.Join(b.tmp, fmt.Sprint("steps-data-", i)))); err != nil {
			return f, err
		}
		fmt.Fprintf(os.Stderr, "first ask, new store, in %s…\n", dir)
		if f[i].askCold, f[i].rssCold, err = b.ask(dir, aenv[i]); err != nil {
			return f, err
		}
	}
	fmt.Fprintf(os.Stderr, "%d first prompts and asks in each, alternating…\n", b.runs)
	var first, asks [2][]time.Duration
	for range b.runs {
		for i, dir := range dirs {
			d, err := b.firstOutput(dir, kenv[i])
			if err != nil {
				return f, err
			}
			first[i] = append(first[i], d)
			d, rss, err := b.ask(dir, aenv[i])
			if err != nil {
				return f, err
			}
			asks[i] = append(asks[i], d)
			f[i].rssWarm = max(f[i].rssWarm, rss)
		}
	}
	for i := range dirs {
		f[i].firstWarm, f[i].askWarm = median(first[i]), median(asks[i])
	}
	fmt.Fprintf(os.Stderr, "%d later prompts in each directory's kernel, alternating…\n", 3*b.runs)
	later, err := b.laterPrompts(dirs, kenv)
	if err != nil {
		return f, err
	}
	for i := range dirs {
		f[i].later = median(later[i])
	}
	return f, nil
}

// laterPrompts starts a kernel in each directory, runs a first prompt in
// each, then 3×runs later prompts in each, taking turns: each prompt runs
// code that writes a file (one step, checkpointed) and then answers. It
// returns each directory's execute-to-reply times.
func (b *bench) laterPrompts(dirs [2]string, env [2][]string) ([2][]time.Duration, error) {
	var took [2][]time.Duration
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	spec, err := client.FindSpec("ckptbench")
	if err != nil {
		return took, err
	}
	var ks [2]*client.Kernel
	for i, dir := range dirs {
		k, err := client.Start(ctx, spec, client.Options{Dir: dir, Env: env[i]})
		if err != nil {
			return took, err
		}
		defer k.Shutdown(context.Background())
		if _, err := k.Client().KernelInfo(ctx); err != nil {
			return took, err
		}
		ks[i] = k
	}
	prompt := func(i, n int) (time.Duration, error) {
		code, _ := json.Marshal(map[string]string{"code": fmt.Sprintf("open('later%d.txt', 'w').write('prompt %d')", n%4, n)})
		b.srv.Enqueue(scripted.Reply(scripted.ToolCall(fmt.Sprintf("l%d", n), "execute_code", string(code))),
			scripted.Reply(scripted.Text("Written.")))
		start := time.Now()
		rep, err := ks[i].Client().Execute(ctx, fmt.Sprintf("Write later%d.txt.", n%4), client.ExecuteOptions{}, client.Handlers{})
		if err != nil {
			return 0, err
		}
		var c struct {
			Status string `json:"status"`
		}
		if err := rep.DecodeContent(&c); err != nil || c.Status != "ok" {
			return 0, fmt.Errorf("later prompt %d in %s: %s", n, dirs[i], rep.Content)
		}
		return time.Since(start), nil
	}
	for i := range dirs {
		if _, err := prompt(i, 0); err != nil {
			return took, err
		}
	}
	for n := 1; n <= 3*b.runs; n++ {
		for i := range dirs {
			d, err := prompt(i, n)
			if err != nil {
				return took, err
			}
			took[i] = append(took[i], d)
		}
	}
	return took, nil
}

// env is what a process measured in data's store gets besides ours.
func (b *bench) env(data string) []string {
	return []string{"OPENAI_API_KEY=sk-bench", "OPENAI_BASE_URL=" + b.srv.OpenAIURL(),
		"AGENTKERNEL_DATA_DIR=" + data, "AGENTKERNEL_CONFIG=" + filepath.Join(b.tmp, "no-config.json")}
}

func (b *bench) command(dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(b.bin, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	return cmd
}

func (b *bench) install(env []string) error {
	cmd := b.command("", env, "install", "--prefix", b.tmp, "--name", "ckptbench", "--mode", "prompt",
		"--model", "openai:gpt-4.1", "--approve", "all", "--probe=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("install: %v: %s", err, out)
	}
	return nil
}

// firstOutput starts a kernel in dir and times its first prompt's first
// output.
func (b *bench) firstOutput(dir string, env []string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec, err := client.FindSpec("ckptbench")
	if err != nil {
		return 0, err
	}
	k, err := client.Start(ctx, spec, client.Options{Dir: dir, Env: env})
	if err != nil {
		return 0, err
	}
	defer k.Shutdown(context.Background())
	if _, err := k.Client().KernelInfo(ctx); err != nil {
		return 0, err
	}
	b.srv.Enqueue(scripted.Reply(scripted.Text("Hello", " there.")))
	var first time.Duration
	start := time.Now()
	_, err = k.Client().Execute(ctx, "Say hello.", client.ExecuteOptions{}, client.Handlers{IOPub: func(m *wire.Message) {
		switch m.Header.MsgType {
		case wire.MsgStream, wire.MsgDisplayData, wire.MsgUpdateDisplayData, wire.MsgExecuteResult:
			if first == 0 {
				first = time.Since(start)
			}
		}
	}})
	if err != nil {
		return 0, err
	}
	if first == 0 {
		return 0, fmt.Errorf("the first prompt showed no output")
	}
	return first, nil
}

// steps runs one ask with two prompts, each running code that writes a
// file, and returns the checkpoint time around each step.
func (b *bench) steps(dir string, env []string) (first, later float64, err error) {
	for i := range 2 {
		code, _ := json.Marshal(map[string]string{"code": fmt.Sprintf("open('out%d.txt', 'w').write('step %d')", i, i)})
		b.srv.Enqueue(scripted.Reply(scripted.ToolCall(fmt.Sprintf("c%d", i), "execute_code", string(code))),
			scripted.Reply(scripted.Text("Written.")))
	}
	cmd := b.command(dir, env, "ask", "--model", "openai:gpt-4.1", "--approve", "all",
		"--input-format", "stream-json", "--output-format", "stream-json")
	in, err := cmd.StdinPipe()
	if err != nil {
		return 0, 0, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer cmd.Process.Kill()
	send := func(text string) {
		line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
		in.Write(append(line, '\n'))
	}
	send("Write out0.txt.")
	var took []float64
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev struct {
			Type    string  `json:"type"`
			Subtype string  `json:"subtype"`
			Took    float64 `json:"took_ms"`
			Tool    string  `json:"tool"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch {
		case ev.Type == "system" && ev.Subtype == "checkpoint" && ev.Tool == "execute_code":
			took = append(took, ev.Took)
		case ev.Type == "result" && len(took) == 1:
			send("Write out1.txt.")
		case ev.Type == "result":
			in.Close()
		}
	}
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return 0, 0, fmt.Errorf("ask (steps): %v\n%s", err, stderr.String())
	}
	if len(took) != 2 {
		return 0, 0, fmt.Errorf("ask (steps): %d checkpoint events, want 2\n%s", len(took), stderr.String())
	}
	return took[0], took[1], nil
}

// ask runs a text-only ask in dir and returns its wall time and peak RSS.
func (b *bench) ask(dir string, env []string) (time.Duration, int64, error) {
	b.srv.Enqueue(scripted.Reply(scripted.Text("The answer is 42.")))
	cmd := b.command(dir, env, "ask", "--model", "openai:gpt-4.1", "--approve", "all", "What is six times seven?")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("ask: %v\n%s", err, out)
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if ru == nil {
		return took, 0, nil
	}
	return took, ru.Maxrss, nil
}
