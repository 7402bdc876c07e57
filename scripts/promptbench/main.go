// Command promptbench measures what prompt mode costs while a model streams:
// the scripted model sends N text tokens as fast as it can into a real
// agentkernel kernel (prompt mode, started like Jupyter starts it); a Go
// client runs the prompt cell and counts the display updates. It reports the
// kernel process's CPU (from /proc), the update rate, the wall time against
// the same stream read directly through the provider, and checks that the
// last update holds every token.
//
//	go run ./scripts/promptbench -agentkernel bin/agentkernel
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
	"github.com/agentkernel/agentkernel/agent/provider/scripted"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/messages"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "promptbench:", err)
		os.Exit(1)
	}
}

func run() error {
	bin := flag.String("agentkernel", "bin/agentkernel", "agentkernel binary")
	tokens := flag.Int("tokens", 10000, "tokens to stream")
	api := flag.String("api", "openai", "wire format: openai or anthropic")
	flag.Parse()

	srv := scripted.New(nil)
	defer srv.Close()
	pieces := make([]string, *tokens)
	for i := range pieces {
		pieces[i] = "t" + strconv.Itoa(i) + " "
	}
	want := strings.Join(pieces, "")
	model := "openai:gpt-4.1"
	if *api == "anthropic" {
		model = "anthropic:claude-sonnet-4-5"
	}
	env := map[string]string{"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": srv.OpenAIURL(),
		"ANTHROPIC_API_KEY": "sk-ant-bench", "ANTHROPIC_BASE_URL": srv.AnthropicURL()}

	// The stream alone, through the provider, for comparison.
	p, err := models.Open(model, models.Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		return err
	}
	srv.Enqueue(scripted.Reply(scripted.Text(pieces...)))
	t0 := time.Now()
	s, err := p.Stream(context.Background(), provider.Request{Messages: []messages.APIMessage{{Role: "user",
		Content: []messages.ContentBlock{{Type: "text", Text: "go"}}}}})
	if err != nil {
		return err
	}
	for {
		if _, err := s.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
	}
	direct := time.Since(t0)

	// The same stream through the kernel.
	tmp, err := os.MkdirTemp("", "promptbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for k, v := range env {
		os.Setenv(k, v)
	}
	os.Setenv("AGENTKERNEL_DATA_DIR", filepath.Join(tmp, "data"))
	out, err := exec.Command(*bin, "install", "--prefix", tmp, "--name", "promptbench", "--mode", "prompt",
		"--model", model, "--approve", "all", "--probe=false").CombinedOutput()
	if err != nil {
		return fmt.Errorf("install: %v: %s", err, out)
	}
	os.Setenv("JUPYTER_PATH", filepath.Join(tmp, "share", "jupyter"))
	spec, err := client.FindSpec("promptbench")
	if err != nil {
		return err
	}
	ctx := context.Background()
	// An empty workspace: what is measured is the stream, not the learning
	// of whatever directory the benchmark runs in (scripts/ckptbench).
	work := filepath.Join(tmp, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		return err
	}
	k, err := client.Start(ctx, spec, client.Options{Dir: work})
	if err != nil {
		return err
	}
	defer k.Shutdown(ctx)
	// Warm up: the session store and the first request path.
	srv.Enqueue(scripted.Reply(scripted.Text("ready")))
	if _, err := k.Client().Execute(ctx, "warm up", client.ExecuteOptions{}, client.Handlers{}); err != nil {
		return err
	}

	srv.Enqueue(scripted.Reply(scripted.Text(pieces...)))
	cpu0 := cpuTime(k.Pid())
	var creates, updates int
	var last string
	var stamps []time.Time
	t1 := time.Now()
	rep, err := k.Client().Execute(ctx, "stream please", client.ExecuteOptions{}, client.Handlers{IOPub: func(m *wire.Message) {
		switch m.Header.MsgType {
		case wire.MsgDisplayData, wire.MsgUpdateDisplayData:
			var c struct {
				Data map[string]string `json:"data"`
			}
			if json.Unmarshal(m.Content, &c) == nil && strings.HasPrefix(c.Data["text/plain"], "t0 ") {
				last = c.Data["text/plain"]
				if ts, err := time.Parse(time.RFC3339Nano, m.Header.Date); err == nil {
					stamps = append(stamps, ts) // the kernel's send time
				}
				if os.Getenv("PROMPTBENCH_TRACE") != "" {
					fmt.Fprintln(os.Stderr, m.Header.Date, m.Header.MsgType, len(last))
				}
				if m.Header.MsgType == wire.MsgDisplayData {
					creates++
				} else {
					updates++
				}
			}
		}
	}})
	elapsed := time.Since(t1)
	replied := time.Now()
	cpu := cpuTime(k.Pid()) - cpu0
	if err != nil {
		return err
	}
	var st struct {
		Status string `json:"status"`
	}
	rep.DecodeContent(&st)
	n := creates + updates
	fmt.Printf("format            %s\n", *api)
	fmt.Printf("tokens            %d\n", *tokens)
	fmt.Printf("stream alone      %s (provider, in process)\n", direct.Round(time.Millisecond))
	fmt.Printf("through kernel    %s (cell status %s)\n", elapsed.Round(time.Millisecond), st.Status)
	minGap, perSecond := time.Hour, 0
	for i := 1; i < len(stamps)-1; i++ { // the final, exact update is not throttled
		minGap = min(minGap, stamps[i].Sub(stamps[i-1]))
	}
	for i := range stamps {
		j := i
		for j < len(stamps) && stamps[j].Sub(stamps[i]) < time.Second {
			j++
		}
		perSecond = max(perSecond, j-i)
	}
	fmt.Printf("display messages  %d (1 display_data + %d updates); at most %d in any second; closest throttled pair %s apart\n",
		n, updates, perSecond, minGap.Round(100*time.Microsecond))
	fmt.Printf("kernel CPU        %s = %.1f µs per token, %.2f ms per display message\n", cpu.Round(time.Millisecond),
		float64(cpu.Microseconds())/float64(*tokens), float64(cpu.Microseconds())/1000/float64(max(n, 1)))
	fmt.Printf("added wall time   %.2f ms per display message\n", float64((elapsed-direct).Microseconds())/1000/float64(max(n, 1)))
	if len(stamps) > 0 {
		// The kernel's clock and ours are the same machine's.
		fmt.Printf("phases            first display %s after the request, reply %s after the last update\n",
			stamps[0].Sub(t1).Round(100*time.Microsecond), replied.Sub(stamps[len(stamps)-1]).Round(100*time.Microsecond))
	}
	if last != want {
		return fmt.Errorf("the last update lost tokens: %d of %d bytes", len(last), len(want))
	}
	fmt.Println("nothing lost      the last update holds every token")
	return nil
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
