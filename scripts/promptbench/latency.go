package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// answer is a scripted answer: its pieces, one streamed chunk each.
type answer struct {
	pieces []string
	text   string
}

func newAnswer(pieces []string) answer { return answer{pieces: pieces, text: strings.Join(pieces, "")} }

// longAnswer is n words of prose-like text, one chunk a word.
func longAnswer(n int) answer {
	vocab := strings.Fields("the kernel streams each word of the answer into the cell while the model " +
		"writes it and a notebook shows what it has so far with markdown tables code and lists")
	pieces := make([]string, n)
	for i := range pieces {
		w := vocab[i%len(vocab)]
		switch {
		case i == 0:
			w = "Alpha"
		case i == n-1:
			w = "Omega."
		case i%17 == 16:
			w += "."
		case i%97 == 96:
			w += "\n\n"
		}
		if i < n-1 && !strings.HasSuffix(w, "\n") {
			w += " "
		}
		pieces[i] = w
	}
	return newAnswer(pieces)
}

// timing is one cell, from the moment its execute_request was written.
type timing struct {
	sent    time.Time
	firstAt time.Time     // the answer's first output arrived
	firstBy time.Time     // … and was sent, by the kernel's header date
	first   time.Duration // … after sent
	shownAt time.Time     // the whole answer shown
	shown   time.Duration // … after sent
	reply   time.Duration // execute_reply
	replyAt time.Time     // … when it arrived
}

// timeCell runs code on k and times a's first output, a shown whole, and
// the reply. An output is a display_data, update_display_data or
// execute_result whose markdown begins the answer (ours: the streaming
// display; Jupyter AI's: its Markdown result).
func timeCell(ctx context.Context, k *client.Kernel, code string, a answer) (timing, error) {
	var t timing
	first := strings.TrimSpace(a.pieces[0])
	whole := strings.TrimSpace(a.text)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rep, err := k.Client().Execute(ctx, code, client.ExecuteOptions{}, client.Handlers{
		Sent: func() { t.sent = time.Now() },
		IOPub: func(m *wire.Message) {
			now := time.Now()
			switch m.Header.MsgType {
			case wire.MsgDisplayData, wire.MsgUpdateDisplayData, wire.MsgExecuteResult:
			default:
				return
			}
			var c struct {
				Data map[string]any `json:"data"`
			}
			if json.Unmarshal(m.Content, &c) != nil {
				return
			}
			md, _ := c.Data["text/markdown"].(string)
			md = strings.TrimSpace(md)
			if t.firstAt.IsZero() && strings.HasPrefix(md, first) {
				t.firstAt, t.first = now, now.Sub(t.sent)
				t.firstBy, _ = time.Parse(time.RFC3339Nano, m.Header.Date)
			}
			if t.shown == 0 && md == whole {
				t.shownAt, t.shown = now, now.Sub(t.sent)
			}
		},
		Reply: func(*wire.Message) { t.replyAt = time.Now(); t.reply = t.replyAt.Sub(t.sent) },
	})
	if err != nil {
		return t, err
	}
	var st struct {
		Status string `json:"status"`
		EValue string `json:"evalue"`
	}
	rep.DecodeContent(&st)
	if st.Status != "ok" {
		return t, fmt.Errorf("cell %q: status %s %s", firstLine(code), st.Status, st.EValue)
	}
	if t.shown == 0 {
		return t, fmt.Errorf("cell %q: the answer was never shown whole", firstLine(code))
	}
	return t, nil
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// contender is a kernel whose cells are timed.
type contender struct {
	name string
	k    *client.Kernel
	cell func(prompt string) string // the code of a prompt cell
	// before runs untimed before each round's cells (our %agent new).
	before string

	short, long []timing
	cpuShort    time.Duration // the kernel process's CPU in those cells
	cpuLong     time.Duration
	// An agentkernel's (ours, the baseline): the first output after the
	// model's first content byte, the reply after its last, and the long
	// answer fully shown against the model's own stream time (both from
	// the moment the model got the request).
	agent         bool
	afterModel    []time.Duration // received by the client
	sentAfter     []time.Duration // sent by the kernel
	replyAfter    []time.Duration // the short answer's execute_reply after the model's last byte
	shownVsStream []float64
}

// latency runs rounds of a short and a long answer on our kernel, on the
// baseline's (another agentkernel build) when there is one, and on Jupyter
// AI's when python is set, taking turns; the model alone is timed in the
// same rounds.
func (b *bench) latency(ctx context.Context, rounds, words int, python string, baseline bool) error {
	short := newAnswer([]string{"Hello", ", ", "this ", "is ", "a ", "short ", "answer", "."})
	long := longAnswer(words)
	ours := &contender{name: "agentkernel", k: b.ours, cell: promptCell, before: "%agent new", agent: true}
	all := []*contender{ours}
	if baseline {
		c, err := b.startBaseline(ctx)
		if err != nil {
			return err
		}
		defer c.k.Shutdown(ctx)
		all = append(all, c)
	}
	if python != "" {
		k, version, err := b.startJupyterAI(ctx, python)
		if err != nil {
			return err
		}
		defer k.Shutdown(ctx)
		model := strings.TrimPrefix(b.model, "openai:")
		all = append(all, &contender{name: "Jupyter AI " + version + " (%%ai)", k: k,
			cell: func(p string) string { return "%%ai openai-chat-custom:" + model + "\n" + p }})
	}
	var aloneFirst, aloneLong []time.Duration
	for r := range rounds {
		fmt.Fprintf(os.Stderr, "\rround %d/%d", r+1, rounds)
		order := slices.Clone(all)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, c := range order {
			if err := b.round(ctx, c, short, long); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
		}
		f, l, err := b.modelAlone(ctx, long)
		if err != nil {
			return err
		}
		aloneFirst, aloneLong = append(aloneFirst, f), append(aloneLong, l)
	}
	fmt.Fprintln(os.Stderr)
	b.printLatency(all, rounds, words, short)

	chunks := float64(rounds * (len(long.pieces) - len(short.pieces)))
	fmt.Printf("\nthe model alone, read by a plain HTTP client: first content after %s, %d words in %s\n",
		ms(median(aloneFirst)), words, ms(median(aloneLong)))
	for _, c := range all {
		if !c.agent {
			continue
		}
		slices.Sort(c.shownVsStream)
		fmt.Printf("%s: first output %s after the model's first content byte (sent by the kernel after %s), execute_reply %s after its last (targets ≤ 2 ms); %d words fully shown in %.2f× the model's own stream time, from the model's receipt of the request (target ≤ 1.2×)\n",
			c.name, ms(median(c.afterModel)), ms(median(c.sentAfter)), ms(median(c.replyAfter)), words, c.shownVsStream[len(c.shownVsStream)/2])
	}
	fmt.Printf("agentkernel's CPU per streamed chunk: %.1f µs (the long cells less the short ones, per extra chunk; target ≤ 3 µs), %.1f µs (the long cells whole, per chunk)\n",
		float64((ours.cpuLong-ours.cpuShort).Nanoseconds())/1e3/chunks, float64(ours.cpuLong.Nanoseconds())/1e3/float64(rounds*len(long.pieces)))
	return nil
}

// promptCell is the code of an agentkernel prompt cell: the prompt itself.
func promptCell(p string) string { return p }

// startBaseline starts the baseline's kernel, with a store of its own (an
// older build does not share a newer one's), warmed by one cell.
func (b *bench) startBaseline(ctx context.Context) (*contender, error) {
	data := os.Getenv("AGENTKERNEL_DATA_DIR")
	os.Setenv("AGENTKERNEL_DATA_DIR", data+"-baseline")
	k, err := b.start(ctx, "promptbench-baseline")
	os.Setenv("AGENTKERNEL_DATA_DIR", data)
	if err != nil {
		return nil, err
	}
	b.srv.Enqueue(scripted.Reply(scripted.Text("ready")))
	if _, err := k.Client().Execute(ctx, "warm up", client.ExecuteOptions{}, client.Handlers{}); err != nil {
		k.Shutdown(ctx)
		return nil, err
	}
	return &contender{name: "agentkernel (baseline)", k: k, cell: promptCell, before: "%agent new", agent: true}, nil
}

// printLatency prints the table of the contenders' p50 figures, with their
// ratio when there are two.
func (b *bench) printLatency(all []*contender, rounds, words int, short answer) {
	api := "OpenAI"
	if strings.HasPrefix(b.model, "anthropic:") {
		api = "Anthropic"
	}
	fmt.Printf("latency, p50 of %d rounds: an instant scripted model (%s format), a short answer (%d chunks) and a %d-word one (a chunk a word)\n\n",
		rounds, api, len(short.pieces), words)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	head := "|"
	for _, c := range all {
		head += "\t" + c.name + "\t|"
	}
	if len(all) == 2 {
		head += "\tratio\t|"
	}
	fmt.Fprintln(w, "| "+head)
	cols := len(all)
	if len(all) == 2 {
		cols++ // the ratio
	}
	fmt.Fprintln(w, "|---|"+strings.Repeat("---|", cols))
	row := func(what string, get func(timing) time.Duration, long bool) {
		line := "| " + what + "\t|"
		var v []time.Duration
		for _, c := range all {
			ts := c.short
			if long {
				ts = c.long
			}
			d := p50(ts, get)
			v = append(v, d)
			line += "\t" + ms(d) + "\t|"
		}
		if len(v) == 2 {
			line += fmt.Sprintf("\t%.2f×\t|", float64(v[0])/float64(v[1]))
		}
		fmt.Fprintln(w, line)
	}
	row("first output, short answer", func(t timing) time.Duration { return t.first }, false)
	row("execute_reply, short answer", func(t timing) time.Duration { return t.reply }, false)
	row(fmt.Sprintf("%d-word answer fully shown", words), func(t timing) time.Duration { return t.shown }, true)
	row(fmt.Sprintf("execute_reply, %d words", words), func(t timing) time.Duration { return t.reply }, true)
	w.Flush()
}

// round runs c's short and long cells.
func (b *bench) round(ctx context.Context, c *contender, short, long answer) error {
	if c.before != "" {
		if _, err := c.k.Client().Execute(ctx, c.before, client.ExecuteOptions{}, client.Handlers{}); err != nil {
			return err
		}
	}
	for _, a := range []answer{short, long} {
		b.srv.Enqueue(scripted.Reply(scripted.Text(a.pieces...), scripted.UsageStep(scripted.Usage{Input: 20, Output: len(a.pieces)})))
		cpu0 := cpuTime(c.k.Pid())
		t, err := timeCell(ctx, c.k, c.cell("Write the answer."), a)
		cpu := cpuTime(c.k.Pid()) - cpu0
		if err != nil {
			return err
		}
		if len(a.pieces) == len(short.pieces) {
			c.short, c.cpuShort = append(c.short, t), c.cpuShort+cpu
		} else {
			c.long, c.cpuLong = append(c.long, t), c.cpuLong+cpu
		}
		// The model's side of an agentkernel's cell: its request is the
		// last one.
		if req, ok := b.srv.Last(); c.agent && ok && !req.FirstContent.IsZero() {
			if len(a.pieces) == len(short.pieces) {
				c.afterModel = append(c.afterModel, t.firstAt.Sub(req.FirstContent))
				c.sentAfter = append(c.sentAfter, t.firstBy.Sub(req.FirstContent))
				c.replyAfter = append(c.replyAfter, t.replyAt.Sub(req.Done))
			} else {
				c.shownVsStream = append(c.shownVsStream, float64(t.shownAt.Sub(req.Received))/float64(req.Done.Sub(req.Received)))
			}
		}
	}
	return nil
}

// modelAlone reads a answer from the model with a plain HTTP client, as
// fast as it comes: the time to its first content and to its end.
func (b *bench) modelAlone(ctx context.Context, a answer) (first, total time.Duration, err error) {
	url, body := b.srv.OpenAIURL()+"/chat/completions",
		`{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Write the answer."}]}`
	if strings.HasPrefix(b.model, "anthropic:") {
		url, body = b.srv.AnthropicURL()+"/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":"Write the answer."}]}`
	}
	b.srv.Enqueue(scripted.Reply(scripted.Text(a.pieces...), scripted.UsageStep(scripted.Usage{Input: 20, Output: len(a.pieces)})))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	marker := []byte(strings.TrimSpace(a.pieces[0]))
	buf := make([]byte, 64<<10)
	var seen []byte
	for {
		n, rerr := resp.Body.Read(buf)
		if first == 0 {
			seen = append(seen, buf[:n]...)
			if strings.Contains(string(seen), string(marker)) {
				first = time.Since(start)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return 0, 0, rerr
		}
	}
	return first, time.Since(start), nil
}

// startJupyterAI starts python's ipykernel with jupyter_ai_magics loaded,
// warmed by one %%ai cell, and returns its version of jupyter-ai-magics.
func (b *bench) startJupyterAI(ctx context.Context, python string) (*client.Kernel, string, error) {
	v, err := exec.Command(python, "-c", "import importlib.metadata as m; print(m.version('jupyter-ai-magics'))").Output()
	if err != nil {
		return nil, "", fmt.Errorf("%s has no jupyter-ai-magics: %w", python, err)
	}
	prefix := filepath.Join(b.tmp, "jupyterai")
	out, err := exec.Command(python, "-m", "ipykernel", "install", "--prefix", prefix, "--name", "promptbench-jupyterai").CombinedOutput()
	if err != nil {
		return nil, "", fmt.Errorf("%s -m ipykernel install: %v: %s", python, err, out)
	}
	os.Setenv("JUPYTER_PATH", filepath.Join(prefix, "share", "jupyter")+string(os.PathListSeparator)+os.Getenv("JUPYTER_PATH"))
	k, err := b.start(ctx, "promptbench-jupyterai")
	if err != nil {
		return nil, "", err
	}
	model := strings.TrimPrefix(b.model, "openai:")
	b.srv.Enqueue(scripted.Reply(scripted.Text("ready")))
	for _, code := range []string{"%load_ext jupyter_ai_magics", "%%ai openai-chat-custom:" + model + "\nwarm up"} {
		rep, err := k.Client().Execute(ctx, code, client.ExecuteOptions{}, client.Handlers{})
		if err == nil {
			var st struct{ Status, Evalue string }
			rep.DecodeContent(&st)
			if st.Status != "ok" {
				err = fmt.Errorf("%s: %s", st.Status, st.Evalue)
			}
		}
		if err != nil {
			k.Shutdown(ctx)
			return nil, "", fmt.Errorf("jupyter ai: %q: %w", firstLine(code), err)
		}
	}
	return k, strings.TrimSpace(string(v)), nil
}

func p50(ts []timing, get func(timing) time.Duration) time.Duration {
	d := make([]time.Duration, len(ts))
	for i, t := range ts {
		d[i] = get(t)
	}
	return median(d)
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
