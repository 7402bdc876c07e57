// Command promptbench measures prompt mode against a scripted model that
// answers at once, in a real agentkernel kernel (started as Jupyter starts
// it) driven by a Go client:
//
//   - a stream of -tokens text tokens as fast as the model can send them:
//     the kernel process's CPU (from /proc), the display update rate, the
//     wall time against the same stream read directly through the
//     provider, and that the last update holds every token;
//
//   - -rounds rounds of a short answer and a -words-word answer: the first
//     output after the model's first content byte, execute_reply, the long
//     answer fully shown against the model's own stream time (a plain
//     HTTP client reading the same answer), and the kernel's CPU per
//     streamed chunk (p50 figures);
//
//   - with -jupyter-ai PYTHON (a Python with jupyter-ai-magics and
//     ipykernel: scripts/modern-venv.sh aimagics), the same cells side by
//     side with Jupyter AI's %%ai magic (openai-chat-custom:MODEL pointed at
//     the same model through OPENAI_API_BASE) in that Python's ipykernel,
//     taking turns, as a table of p50 figures and ratios.
//
//     go run ./scripts/promptbench -agentkernel bin/agentkernel [-jupyter-ai $(scripts/modern-venv.sh aimagics)]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/models"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "promptbench:", err)
		os.Exit(1)
	}
}

// bench is what the parts share: the model, the environment, our kernel.
type bench struct {
	srv   *scripted.Server
	model string            // ours, e.g. "openai:gpt-4.1"
	env   map[string]string // the model's URLs and keys
	tmp   string
	work  string // the kernels' working directory: empty
	ours  *client.Kernel
}

func run() error {
	bin := flag.String("agentkernel", "bin/agentkernel", "agentkernel binary")
	tokens := flag.Int("tokens", 10000, "tokens of the throughput stream (0: skip it)")
	api := flag.String("api", "openai", "wire format: openai or anthropic")
	rounds := flag.Int("rounds", 20, "rounds of the latency cells (0: skip them)")
	words := flag.Int("words", 2000, "words of the long answer")
	jai := flag.String("jupyter-ai", "", "a `PYTHON` with jupyter-ai-magics 2.31 and ipykernel: its %%ai cells are measured side by side (OpenAI format only)")
	baseline := flag.String("baseline", "", "another agentkernel `BINARY` (an older build): its cells are measured beside -agentkernel's, in the same rounds")
	flag.Parse()
	if *jai != "" && *api != "openai" {
		return errors.New("-jupyter-ai compares the OpenAI format only")
	}

	b := &bench{srv: scripted.New(nil), model: "openai:gpt-4.1"}
	defer b.srv.Close()
	if *api == "anthropic" {
		b.model = "anthropic:claude-sonnet-4-5"
	}
	b.env = map[string]string{"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": b.srv.OpenAIURL(),
		"ANTHROPIC_API_KEY": "sk-ant-bench", "ANTHROPIC_BASE_URL": b.srv.AnthropicURL(),
		// Jupyter AI's openai-chat-custom provider reads these.
		"OPENAI_API_BASE": b.srv.OpenAIURL()}
	var err error
	if b.tmp, err = os.MkdirTemp("", "promptbench-"); err != nil {
		return err
	}
	defer os.RemoveAll(b.tmp)
	for k, v := range b.env {
		os.Setenv(k, v)
	}
	os.Setenv("AGENTKERNEL_DATA_DIR", filepath.Join(b.tmp, "data"))
	install := func(bin, name string) error {
		out, err := exec.Command(bin, "install", "--prefix", b.tmp, "--name", name, "--mode", "prompt",
			"--model", b.model, "--approve", "all", "--probe=false").CombinedOutput()
		if err != nil {
			return fmt.Errorf("install %s: %v: %s", bin, err, out)
		}
		return nil
	}
	if err := install(*bin, "promptbench"); err != nil {
		return err
	}
	if *baseline != "" {
		if err := install(*baseline, "promptbench-baseline"); err != nil {
			return err
		}
	}
	os.Setenv("JUPYTER_PATH", filepath.Join(b.tmp, "share", "jupyter")+string(os.PathListSeparator)+os.Getenv("JUPYTER_PATH"))
	// An empty workspace: what is measured is the stream, not the learning
	// of whatever directory the benchmark runs in (scripts/ckptbench).
	b.work = filepath.Join(b.tmp, "work")
	if err := os.Mkdir(b.work, 0o755); err != nil {
		return err
	}
	ctx := context.Background()
	if b.ours, err = b.start(ctx, "promptbench"); err != nil {
		return err
	}
	defer b.ours.Shutdown(ctx)
	// Warm up: the session store and the first request path.
	b.srv.Enqueue(scripted.Reply(scripted.Text("ready")))
	if _, err := b.ours.Client().Execute(ctx, "warm up", client.ExecuteOptions{}, client.Handlers{}); err != nil {
		return err
	}
	if *tokens > 0 {
		if err := b.throughput(ctx, *api, *tokens); err != nil {
			return err
		}
	}
	if *rounds > 0 {
		return b.latency(ctx, *rounds, *words, *jai, *baseline != "")
	}
	return nil
}

// start starts the kernelspec name over TCP, as Jupyter does.
func (b *bench) start(ctx context.Context, name string) (*client.Kernel, error) {
	spec, err := client.FindSpec(name)
	if err != nil {
		return nil, err
	}
	return client.Start(ctx, spec, client.Options{Dir: b.work, Transport: client.TransportTCP})
}

// throughput streams tokens text tokens through the kernel: its CPU, the
// display update rate, the wall time against the provider alone.
func (b *bench) throughput(ctx context.Context, api string, tokens int) error {
	pieces := make([]string, tokens)
	for i := range pieces {
		pieces[i] = "t" + strconv.Itoa(i) + " "
	}
	want := strings.Join(pieces, "")
	direct, err := b.streamAlone(ctx, pieces)
	if err != nil {
		return err
	}

	b.srv.Enqueue(scripted.Reply(scripted.Text(pieces...)))
	cpu0 := cpuTime(b.ours.Pid())
	var d displays
	t1 := time.Now()
	rep, err := b.ours.Client().Execute(ctx, "stream please", client.ExecuteOptions{}, client.Handlers{IOPub: d.observe})
	elapsed := time.Since(t1)
	replied := time.Now()
	cpu := cpuTime(b.ours.Pid()) - cpu0
	if err != nil {
		return err
	}
	var st struct {
		Status string `json:"status"`
	}
	rep.DecodeContent(&st)
	n := d.creates + d.updates
	fmt.Printf("format            %s\n", api)
	fmt.Printf("tokens            %d\n", tokens)
	fmt.Printf("stream alone      %s (provider, in process)\n", direct.Round(time.Millisecond))
	fmt.Printf("through kernel    %s (cell status %s)\n", elapsed.Round(time.Millisecond), st.Status)
	minGap, perSecond := d.rate()
	fmt.Printf("display messages  %d (1 display_data + %d updates); at most %d in any second; closest throttled pair %s apart\n",
		n, d.updates, perSecond, minGap.Round(100*time.Microsecond))
	fmt.Printf("kernel CPU        %s = %.1f µs per token, %.2f ms per display message\n", cpu.Round(time.Millisecond),
		float64(cpu.Microseconds())/float64(tokens), float64(cpu.Microseconds())/1000/float64(max(n, 1)))
	fmt.Printf("added wall time   %.2f ms per display message\n", float64((elapsed-direct).Microseconds())/1000/float64(max(n, 1)))
	if len(d.stamps) > 0 {
		// The kernel's clock and ours are the same machine's.
		fmt.Printf("phases            first display %s after the request, reply %s after the last update\n",
			d.stamps[0].Sub(t1).Round(100*time.Microsecond), replied.Sub(d.stamps[len(d.stamps)-1]).Round(100*time.Microsecond))
	}
	if d.last != want {
		return fmt.Errorf("the last update lost tokens: %d of %d bytes", len(d.last), len(want))
	}
	fmt.Println("nothing lost      the last update holds every token")
	fmt.Println()
	return nil
}

// streamAlone reads a stream of pieces through the provider, in process:
// the wall time the kernel's stream is compared with.
func (b *bench) streamAlone(ctx context.Context, pieces []string) (time.Duration, error) {
	p, err := models.Open(b.model, models.Options{Getenv: func(k string) string { return b.env[k] }})
	if err != nil {
		return 0, err
	}
	b.srv.Enqueue(scripted.Reply(scripted.Text(pieces...)))
	t0 := time.Now()
	s, err := p.Stream(ctx, provider.Request{Messages: []messages.APIMessage{{Role: "user",
		Content: []messages.ContentBlock{{Type: "text", Text: "go"}}}}})
	if err != nil {
		return 0, err
	}
	for {
		if _, err := s.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return 0, err
		}
	}
	return time.Since(t0), nil
}

// displays counts the streamed answer's display messages (those whose text
// begins the stream) as a cell's IOPub handler sees them: the display_data
// that creates the display, its updates, the last text shown, and the
// kernel's send time of each.
type displays struct {
	creates, updates int
	last             string
	stamps           []time.Time
}

// observe is the IOPub handler.
func (d *displays) observe(m *wire.Message) {
	switch m.Header.MsgType {
	case wire.MsgDisplayData, wire.MsgUpdateDisplayData:
	default:
		return
	}
	var c struct {
		Data map[string]string `json:"data"`
	}
	if json.Unmarshal(m.Content, &c) != nil || !strings.HasPrefix(c.Data["text/plain"], "t0 ") {
		return
	}
	d.last = c.Data["text/plain"]
	if ts, err := time.Parse(time.RFC3339Nano, m.Header.Date); err == nil {
		d.stamps = append(d.stamps, ts) // the kernel's send time
	}
	if os.Getenv("PROMPTBENCH_TRACE") != "" {
		fmt.Fprintln(os.Stderr, m.Header.Date, m.Header.MsgType, len(d.last))
	}
	if m.Header.MsgType == wire.MsgDisplayData {
		d.creates++
	} else {
		d.updates++
	}
}

// rate is the closest pair of throttled updates (the final, exact update is
// not throttled) and the most display messages sent in any second.
func (d *displays) rate() (minGap time.Duration, perSecond int) {
	stamps := d.stamps
	minGap = time.Hour
	for i := 1; i < len(stamps)-1; i++ {
		minGap = min(minGap, stamps[i].Sub(stamps[i-1]))
	}
	for i := range stamps {
		j := i
		for j < len(stamps) && stamps[j].Sub(stamps[i]) < time.Second {
			j++
		}
		perSecond = max(perSecond, j-i)
	}
	return minGap, perSecond
}

// cpuTime is the user+system CPU of pid so far.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}
