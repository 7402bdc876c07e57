package bridge

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/models"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// promptKernel is agentkernel in prompt mode with a scripted model speaking
// the given API's real wire format.
func promptKernel(t *testing.T, api string, dataDir string, approve agent.ApprovalPolicy) (*harness, *scripted.Server) {
	t.Helper()
	srv := scripted.New(t)
	env := map[string]string{"OPENAI_API_KEY": "sk-test-key", "OPENAI_BASE_URL": srv.OpenAIURL(),
		"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": srv.AnthropicURL()}
	model := "openai:gpt-4.1"
	if api == "anthropic" {
		model = "anthropic:claude-sonnet-4-5"
	}
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	h := startWith(t, testConfig{Dir: t.TempDir(), Host: session.Config{Model: model, DataDir: dataDir, OpenModel: func(spec string) (provider.Provider, error) {
		return models.Open(spec, models.Options{Getenv: func(k string) string { return env[k] }})
	}}, Config: Config{Cells: PromptCells, Approve: approve}})
	return h, srv
}

// cell runs a prompt cell and returns its reply and iopub messages.
func (h *harness) cell(code string) (map[string]any, *outputs) {
	h.t.Helper()
	return h.exec(code, client.ExecuteOptions{}, nil)
}

func texts(o *outputs, msgType, mime string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, m := range o.msgs {
		if m.Header.MsgType != msgType {
			continue
		}
		var c struct {
			Data map[string]any `json:"data"`
			Text string         `json:"text"`
		}
		json.Unmarshal(m.Content, &c)
		if mime == "" {
			out = append(out, c.Text)
		} else if s, ok := c.Data[mime].(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// a 1x1 PNG.
var tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

func TestPromptMode(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			h, srv := promptKernel(t, api, "", agent.ApproveAll)

			// 1. A prompt streams text into one markdown display.
			srv.Enqueue(scripted.Reply(scripted.Text("Hello", ", ", "notebook!"), scripted.UsageStep(scripted.Usage{Input: 12, Output: 4})))
			rep, o := h.cell("Say hello")
			if rep["status"] != "ok" {
				t.Fatalf("reply %v", rep)
			}
			shown := append(texts(o, "display_data", "text/plain"), texts(o, "update_display_data", "text/plain")...)
			if !contains(shown, "Hello, notebook!") {
				t.Fatalf("displays %q (iopub %s)", shown, o.types())
			}
			if !strings.HasPrefix(o.types(), "busy,execute_input,display_data") || !strings.HasSuffix(o.types(), "idle") {
				t.Fatalf("iopub %s", o.types())
			}
			// The footer: the session's tokens and cost, and how full the
			// model's context window is.
			md := texts(o, "display_data", "text/markdown")
			if footer := md[len(md)-1]; !strings.Contains(footer, "12 in · 4 out tokens") || !strings.Contains(footer, "context 0% of ") {
				t.Errorf("footer %q", footer)
			}

			// 2. The agent runs code: its print and PNG land in the cell;
			// with no stdin the headless policy (all) approves, and the
			// decision is recorded; the turn ends with completion.
			code := fmt.Sprintf("from IPython.display import Image, display\nprint('from the agent')\ndisplay(Image(data=__import__('base64').b64decode(%q)))", tinyPNG)
			args, _ := json.Marshal(map[string]string{"code": code})
			srv.Enqueue(
				scripted.Reply(scripted.Text("Running it."), scripted.ToolCall("call_1", "execute_code", string(args[:10]), string(args[10:]))),
				scripted.Reply(scripted.ToolCall("call_2", "attempt_completion", `{"result":"Printed and plotted."}`)),
			)
			rep, o = h.cell("Print something and show an image")
			if rep["status"] != "ok" {
				t.Fatalf("reply %v", rep)
			}
			if !contains(texts(o, "stream", ""), "from the agent\n") {
				t.Fatalf("no agent stdout: %s", o.types())
			}
			if pngs := texts(o, "display_data", "image/png"); len(pngs) != 1 {
				t.Fatalf("png displays %d: %s", len(pngs), o.types())
			}
			last, _ := srv.Last()
			if !strings.Contains(string(last.Raw), "from the agent") {
				t.Fatalf("tool result not sent to the model: %s", last.Raw)
			}
			ui := h.b.host.Conversation().UI()
			var recorded bool
			for _, m := range ui {
				recorded = recorded || (strings.Contains(m.Text, "Allowed execute_code") && strings.Contains(m.Text, "policy:all"))
			}
			if !recorded {
				t.Fatal("the policy's decision is not in the UI history")
			}
			// The web panel shows the plot: the command output carries it.
			var shownPNG bool
			for _, m := range ui {
				for _, img := range m.Images {
					shownPNG = shownPNG || (m.Say == messages.SayCommandOutput && strings.HasPrefix(img, "data:image/png;base64,"))
				}
			}
			if !shownPNG {
				t.Fatal("the agent's PNG is not on its command_output message (the panel would not show it)")
			}

			// 3. %agent rewind removes messages from both histories and the
			// next request no longer contains them.
			hist, _ := h.b.runMagic(context.Background(), "history", nil)
			ref := ""
			for _, line := range strings.Split(hist, "\n") {
				if strings.Contains(line, "Print something") {
					ref = strings.Fields(line)[0]
				}
			}
			if ref == "" {
				t.Fatalf("prompt not in history:\n%s", hist)
			}
			rep, o = h.cell("%agent rewind " + ref)
			if rep["status"] != "ok" || !contains(texts(o, "stream", ""), "") && !strings.Contains(strings.Join(texts(o, "stream", ""), ""), "Rewound") {
				t.Fatalf("rewind %v %q", rep, texts(o, "stream", ""))
			}
			srv.Enqueue(scripted.Reply(scripted.Text("Fresh.")))
			h.cell("Another question")
			last, _ = srv.Last()
			if strings.Contains(string(last.Raw), "Print something") || strings.Contains(string(last.Raw), "from the agent") {
				t.Fatalf("rewound messages still sent: %s", last.Raw)
			}
			if !strings.Contains(string(last.Raw), "Say hello") {
				t.Fatalf("kept messages not sent: %s", last.Raw)
			}
		})
	}
}

// TestProposedCell: propose_cell's code comes back as the next cell, run
// as code: under %%code in prompt mode (a bare cell is a prompt there),
// bare in code mode.
func TestProposedCell(t *testing.T) {
	for _, mode := range []CellKind{PromptCells, CodeCells} {
		t.Run(string(mode), func(t *testing.T) {
			srv := scripted.New(t)
			h := startWith(t, testConfig{Dir: t.TempDir(), Host: session.Config{Model: "openai:gpt-4.1", DataDir: t.TempDir(), OpenModel: func(spec string) (provider.Provider, error) {
				env := map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.OpenAIURL()}
				return models.Open(spec, models.Options{Getenv: func(k string) string { return env[k] }})
			}}, Config: Config{Cells: mode, Approve: agent.ApproveAll}})
			srv.Enqueue(
				scripted.Reply(scripted.ToolCall("c1", "propose_cell", `{"code":"df.describe()"}`)),
				scripted.Reply(scripted.Text("There is a cell for you.")),
			)
			prompt := "Suggest a cell"
			if mode == CodeCells {
				prompt = "%%agent\n" + prompt
			}
			rep, _ := h.cell(prompt)
			payload, _ := rep["payload"].([]any)
			if rep["status"] != "ok" || len(payload) != 1 {
				t.Fatalf("reply %v", rep)
			}
			p := payload[0].(map[string]any)
			want := "df.describe()"
			if mode == PromptCells {
				want = "%%code\ndf.describe()"
			}
			if p["source"] != "set_next_input" || p["text"] != want {
				t.Fatalf("payload %v, want set_next_input %q", p, want)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestPromptErrorsAndInterrupt(t *testing.T) {
	h, srv := promptKernel(t, "openai", "", agent.ApproveNone)

	// A 429 is retried (Retry-After honoured) and then reported.
	for range 4 {
		srv.Enqueue(scripted.Fail(429, "0"))
	}
	rep, o := h.cell("Will fail")
	if rep["status"] != "error" || rep["ename"] != "ModelAPIError" {
		t.Fatalf("reply %v", rep)
	}
	if n := strings.Count(strings.Join(texts(o, "stream", ""), ""), "Retrying"); n != 3 {
		t.Fatalf("%d retry notices: %q", n, texts(o, "stream", ""))
	}
	// An empty prompt retries the failed request.
	srv.Enqueue(scripted.Reply(scripted.Text("Recovered.")))
	rep, o = h.cell("")
	if rep["status"] != "ok" || !contains(append(texts(o, "display_data", "text/plain"), texts(o, "update_display_data", "text/plain")...), "Recovered.") {
		t.Fatalf("retry: %v %s", rep, o.types())
	}

	// An interrupt during a slow stream ends the cell quickly.
	srv.Enqueue(scripted.Reply(scripted.Text("Thinking"), scripted.Stall()))
	done := h.execAsync("Take your time")
	deadline := time.Now().Add(10 * time.Second)
	for srv.Pending() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.c.Do(ctx, client.Request{Channel: "control", MsgType: "interrupt_request"}, client.Handlers{}); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-done:
		if c["ename"] != "KeyboardInterrupt" {
			t.Fatalf("reply %v", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("interrupt did not end the cell")
	}
	api := h.b.host.Conversation().API()
	if last := api[len(api)-1]; last.Role != "assistant" || !strings.Contains(last.PlainText(), "Thinking") {
		t.Fatalf("api history after interrupt ends with %+v", last)
	}

	// %%code runs in the backing kernel and is given to the model next.
	rep, o = h.cell("%%code\nanswer = 6 * 7\nprint(answer)")
	if rep["status"] != "ok" || !contains(texts(o, "stream", ""), "42\n") {
		t.Fatalf("%%%%code: %v %s", rep, o.types())
	}
	srv.Enqueue(scripted.Reply(scripted.Text("It is 42.")))
	h.cell("What did I compute?")
	last, _ := srv.Last()
	if !strings.Contains(string(last.Raw), "answer = 6 * 7") {
		t.Fatalf("%%%%code cell not given to the model: %s", last.Raw)
	}
}

func TestPromptNoModelAndResume(t *testing.T) {
	data := t.TempDir()
	h, srv := promptKernel(t, "anthropic", data, agent.ApproveNone)
	srv.Enqueue(scripted.Reply(scripted.Text("First answer.")))
	h.cell("Remember the word pineapple")
	info, err := h.b.host.Current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	id := info.ID

	// A "restarted kernel": a new bridge on the same data directory.
	h2, srv2 := promptKernel(t, "anthropic", data, agent.ApproveNone)
	rep, o := h2.cell("%agent resume " + id[:8])
	if rep["status"] != "ok" || !strings.Contains(strings.Join(texts(o, "stream", ""), ""), "Resumed") {
		t.Fatalf("resume %v %q", rep, texts(o, "stream", ""))
	}
	srv2.Enqueue(scripted.Reply(scripted.Text("Pineapple.")))
	h2.cell("What was the word?")
	last, _ := srv2.Last()
	if !strings.Contains(string(last.Raw), "pineapple") {
		t.Fatalf("resumed session not sent: %s", last.Raw)
	}

	// No model configured: a clear message; code still runs.
	h3 := startWith(t, testConfig{Dir: t.TempDir(), Host: session.Config{DataDir: t.TempDir()}, Config: Config{Cells: PromptCells}})
	rep, o = h3.cell("hello?")
	if rep["status"] != "error" || !strings.Contains(fmt.Sprint(rep["evalue"]), "AGENTKERNEL_MODEL") {
		t.Fatalf("no model: %v", rep)
	}
	// The message is shown once: as the cell's error (a frontend shows its
	// traceback), not also on stderr.
	o.mu.Lock()
	var shown strings.Builder
	for _, m := range o.msgs {
		var c struct {
			Text      string   `json:"text"`
			Traceback []string `json:"traceback"`
		}
		json.Unmarshal(m.Content, &c)
		shown.WriteString(c.Text + strings.Join(c.Traceback, "\n"))
	}
	o.mu.Unlock()
	if n := strings.Count(shown.String(), "No model is configured. Open Settings"); n != 1 {
		t.Errorf("no model: the message is shown %d times: %s", n, shown.String())
	}
	rep, o = h3.cell("%%code\nprint('still runs')")
	if rep["status"] != "ok" || !contains(texts(o, "stream", ""), "still runs\n") {
		t.Fatalf("code without a model: %v %s", rep, o.types())
	}
}

func TestPromptKernelInfoAndCompletion(t *testing.T) {
	h := startWith(t, testConfig{Dir: t.TempDir(), Host: session.Config{DataDir: t.TempDir()}, Config: Config{Cells: PromptCells}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rep, err := h.c.KernelInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ki struct {
		LanguageInfo struct{ Name string } `json:"language_info"`
	}
	rep.DecodeContent(&ki)
	if ki.LanguageInfo.Name != "markdown" {
		t.Fatalf("language %q", ki.LanguageInfo.Name)
	}
	c := h.do("complete_request", map[string]any{"code": "%agent re", "cursor_pos": 9})
	if m := jsonString(c["matches"]); !strings.Contains(m, "resume") || !strings.Contains(m, "rewind") {
		t.Fatalf("matches %s", m)
	}
}

var _ = base64.StdEncoding
var _ = wire.ProtocolVersion

// TestCodeModeAgentCells: in code mode, ordinary cells are backing-kernel
// code, %%agent cells talk to the agent (whose code runs in the same
// kernel, so it sees the user's variables), and %agent magics work.
func TestCodeModeAgentCells(t *testing.T) {
	srv := scripted.New(t)
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.OpenAIURL()}
	h := startWith(t, testConfig{Dir: t.TempDir(), Host: session.Config{Model: "openai:gpt-4.1", DataDir: t.TempDir(), OpenModel: func(spec string) (provider.Provider, error) {
		return models.Open(spec, models.Options{Getenv: func(k string) string { return env[k] }})
	}}, Config: Config{Cells: CodeCells, Approve: agent.ApproveAll}})
	rep, _ := h.cell("secret_number = 41")
	if rep["status"] != "ok" {
		t.Fatalf("code cell: %v", rep)
	}
	count := rep["execution_count"]
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("c1", "execute_code", `{"code":"print(secret_number + 1)"}`)),
		scripted.Reply(scripted.Text("It is 42.")),
	)
	rep, o := h.cell("%%agent\nWhat is secret_number plus one?")
	if rep["status"] != "ok" {
		t.Fatalf("%%%%agent cell: %v", rep)
	}
	if !contains(texts(o, "stream", ""), "42\n") {
		t.Fatalf("the agent's code did not run in the notebook's kernel: %s", o.types())
	}
	if rep["execution_count"] != count {
		t.Fatalf("%%%%agent cell count %v, want the backing kernel's %v", rep["execution_count"], count)
	}
	rep, o = h.cell("%agent history")
	if rep["status"] != "ok" || !strings.Contains(strings.Join(texts(o, "stream", ""), ""), "secret_number plus one") {
		t.Fatalf("history: %v %q", rep, texts(o, "stream", ""))
	}
	rep, _ = h.cell("secret_number")
	if rep["status"] != "ok" {
		t.Fatalf("code after the agent: %v", rep)
	}
}

// TestCodeModeMagicBeforeFirstCell: in code mode a %agent magic run before
// any code cell is numbered as ipykernel numbers its first cell, never 0
// (JupyterLab leaves a reply of 0 at [*]:, issue 41 item 8), in its
// execute_input and its execute_reply; the first code cell after it keeps
// the backing kernel's own count.
func TestCodeModeMagicBeforeFirstCell(t *testing.T) {
	h := start(t)
	rep, o := h.cell("%agent permissions")
	if rep["status"] != "ok" {
		t.Fatalf("%%agent permissions: %v", rep)
	}
	n, _ := rep["execution_count"].(float64)
	if n < 1 {
		t.Fatalf("execute_reply execution_count %v, want ≥ 1", rep["execution_count"])
	}
	var input struct {
		N float64 `json:"execution_count"`
	}
	for _, m := range o.msgs {
		if m.Header.MsgType == wire.MsgExecuteInput {
			json.Unmarshal(m.Content, &input)
		}
	}
	if input.N != n {
		t.Fatalf("execute_input execution_count %v, reply %v", input.N, n)
	}
	rep, _ = h.cell("1")
	if c, _ := rep["execution_count"].(float64); rep["status"] != "ok" || c < n {
		t.Fatalf("first code cell after the magic: %v", rep)
	}
}

// TestAttachMagic: %agent attach queues images from files for the next
// prompt only; a file that is no image, or too many, is refused and
// queues nothing.
func TestAttachMagic(t *testing.T) {
	h, srv := promptKernel(t, "openai", "", agent.ApproveAll)
	ws := h.b.host.Workspace()
	png, _ := base64.StdEncoding.DecodeString(tinyPNG)
	if err := os.WriteFile(filepath.Join(ws, "dot.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, _ := h.cell("%agent attach dot.png notes.txt"); rep["status"] != "error" || !strings.Contains(fmt.Sprint(rep["evalue"]), "notes.txt") {
		t.Fatalf("a text file was attached: %v", rep)
	}
	if rep, _ := h.cell("%agent attach dot.png dot.png dot.png dot.png dot.png"); rep["status"] != "error" || !strings.Contains(fmt.Sprint(rep["evalue"]), "at most 4") {
		t.Fatalf("five images were attached: %v", rep)
	}
	rep, o := h.cell("%agent attach dot.png")
	if rep["status"] != "ok" || !strings.Contains(strings.Join(texts(o, "stream", ""), ""), "dot.png [image/png 1x1") {
		t.Fatalf("attach: %v %q", rep, texts(o, "stream", ""))
	}
	srv.Enqueue(scripted.Reply(scripted.Text("A dot.")), scripted.Reply(scripted.Text("Still a dot.")))
	if rep, _ := h.cell("What is in the picture?"); rep["status"] != "ok" {
		t.Fatalf("prompt: %v", rep)
	}
	last, _ := srv.Last()
	if n := strings.Count(string(last.Raw), "data:image/png;base64,"+tinyPNG); n != 1 {
		t.Fatalf("the model got the image %d times: %s", n, last.Raw)
	}
	if rep, _ := h.cell("And now?"); rep["status"] != "ok" {
		t.Fatalf("prompt: %v", rep)
	}
	last, _ = srv.Last()
	msgs := last.Messages()
	lastUser, _ := json.Marshal(msgs[len(msgs)-1])
	if strings.Contains(string(lastUser), "image_url") {
		t.Fatalf("the image went with the second prompt too: %s", lastUser)
	}
	if _, o := h.cell("%agent attach"); !strings.Contains(strings.Join(texts(o, "stream", ""), ""), "No images attached") {
		t.Fatalf("the queue was not emptied: %q", texts(o, "stream", ""))
	}
}

// TestPromptEndNotHeldBack: the complete text of a message goes out as
// soon as the model's stream ends, then execute_reply, whatever the update
// interval: with an interval of a minute, a cell whose stream ends at once
// still ends at once (the old throttle held the last update, and the reply,
// until the interval was up), and its last update is the exact text.
func TestPromptEndNotHeldBack(t *testing.T) {
	srv := scripted.New(t)
	env := map[string]string{"OPENAI_API_KEY": "sk-test-key", "OPENAI_BASE_URL": srv.OpenAIURL()}
	h := startWith(t, testConfig{Dir: t.TempDir(), Host: session.Config{Model: "openai:gpt-4.1", DataDir: t.TempDir(),
		OpenModel: func(spec string) (provider.Provider, error) {
			return models.Open(spec, models.Options{Getenv: func(k string) string { return env[k] }})
		}}, Config: Config{Cells: PromptCells, UpdateInterval: time.Minute}})
	srv.Enqueue(scripted.Reply(scripted.Text("One, ", "two, ", "three", " and four.")))
	start := time.Now()
	rep, o := h.cell("Count to four")
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("the cell took %v: its end waited for the update interval", took)
	}
	if rep["status"] != "ok" {
		t.Fatalf("reply %v", rep)
	}
	shown := append(texts(o, "display_data", "text/plain"), texts(o, "update_display_data", "text/plain")...)
	if len(shown) < 2 || shown[len(shown)-1] != "One, two, three and four." {
		t.Fatalf("updates %q: want the first text, then the exact whole", shown)
	}
	// Between the first display and the last, the minute's interval
	// held every partial update back.
	if n := len(texts(o, "update_display_data", "text/plain")); n != 1 {
		t.Errorf("%d updates during the stream, want 1 (the complete text)", n)
	}
}

// TestPromptUpdateRate: a 3-second stream of many small pieces is shown
// in at most about 20 updates a second (the default interval), and the
// last update is exact.
func TestPromptUpdateRate(t *testing.T) {
	h, srv := promptKernel(t, "openai", "", agent.ApproveNone)
	var steps []scripted.Step
	var want strings.Builder
	for i := range 150 {
		piece := fmt.Sprintf("w%d ", i)
		want.WriteString(piece)
		steps = append(steps, scripted.Text(piece), scripted.Delay(20*time.Millisecond))
	}
	srv.Enqueue(scripted.Reply(steps...))
	start := time.Now()
	rep, o := h.cell("Talk for a while")
	took := time.Since(start)
	if rep["status"] != "ok" {
		t.Fatalf("reply %v", rep)
	}
	updates := texts(o, "update_display_data", "text/plain")
	if len(updates) == 0 || updates[len(updates)-1] != want.String() {
		t.Fatalf("the last update is not the exact text (%d updates)", len(updates))
	}
	// The first display, then at most one update per 50 ms of the stream,
	// and the final one.
	if limit := int(took/(50*time.Millisecond)) + 2; len(updates) > limit {
		t.Errorf("%d updates in %v: more than about 20 a second (limit %d)", len(updates), took, limit)
	}
	if len(updates) < 10 {
		t.Errorf("only %d updates in %v: the text did not grow while it streamed", len(updates), took)
	}
}
