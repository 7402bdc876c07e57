package acpagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/acpagent"
	"github.com/agentkernel/agentkernel/agent/provider/models"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/internal/kerneltest"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/surface/mcpserve"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// outer is a session host whose model is an external ACP agent, over a
// real ipykernel, with the live kernel served to the agent as an MCP
// server (as the kernel command wires it).
type outer struct {
	host   *session.Host
	runner backing.Runner
	asks   []messages.UIMessage
	mu     sync.Mutex
}

func newOuter(t *testing.T, spec string, env []string) *outer {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	r := backing.NewLocal(backing.LocalOptions{Kernel: "python3", Dir: ws})
	o := &outer{runner: r}
	var closeTools func() error
	var tools func(context.Context) ([]acpagent.ToolServer, error)
	o.host = session.New(session.Config{Store: st, Runner: r, Workspace: ws, Kind: "prompt", Model: spec,
		OpenModel: func(spec string) (provider.Provider, error) {
			return models.Open(spec, models.Options{ACP: acpagent.Options{Dir: ws, Env: env, Tools: tools}})
		}})
	tools, closeTools = mcpserve.AgentTools(mcpserve.Options{Host: o.host, Runner: r, Approve: agent.ApproveAll})
	t.Cleanup(func() {
		o.host.Close()
		closeTools()
		r.Close()
		st.Close()
	})
	return o
}

// submit sends a prompt and answers every ask yes.
func (o *outer) submit(t *testing.T, text string) (session.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return o.host.Submit(ctx, text, session.Follow{Approve: func(_ context.Context, ask messages.UIMessage) (agent.Response, bool) {
		o.mu.Lock()
		o.asks = append(o.asks, ask)
		o.mu.Unlock()
		return agent.Response{Kind: agent.ResponseYes, By: "test"}, true
	}})
}

// build builds the agentkernel binary once per test.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agentkernel")
	if out, err := exec.Command(kerneltest.GoTool(), "build", "-o", bin, "../../../cmd/agentkernel").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func needKernel(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and starts kernels")
	}
	if _, err := client.FindSpec("python3"); err != nil {
		t.Skipf("no python3 kernelspec: %v", err)
	}
}

// TestAgentDrivesLiveKernel: a real ACP agent — agentkernel's own `acp`,
// a separate process with its own (scripted) model — answers the
// notebook's prompts. Its permission request is an ask of the notebook's
// session; its call of the MCP tool it was given runs in the notebook's
// live kernel (the user's variable is set there); its words and its tool
// call are stored in the notebook's session. A rewind of the conversation
// gives the next prompt to a new session of the agent, told the
// conversation up to there.
func TestAgentDrivesLiveKernel(t *testing.T) {
	needKernel(t)
	bin := build(t)
	srv := scripted.New(t)
	srv.Enqueue(
		scripted.Reply(scripted.Text("I will set df."), scripted.ToolCall("c1", "mcp__agentkernel__execute_code", `{"code":"df = 6*7\nprint(df)"}`)),
		scripted.Reply(scripted.Text("df is 42 in your kernel.")),
		scripted.Reply(scripted.Text("Second answer.")),
		scripted.Reply(scripted.Text("After the rewind.")),
	)
	tmp := t.TempDir()
	env := []string{"AGENTKERNEL_MODEL=openai:gpt-4.1", "OPENAI_BASE_URL=" + srv.OpenAIURL(), "OPENAI_API_KEY=sk-inner",
		"AGENTKERNEL_DATA_DIR=" + filepath.Join(tmp, "inner"), "AGENTKERNEL_CONFIG=" + filepath.Join(tmp, "none.json"),
		"AGENTKERNEL_APPROVE="}
	o := newOuter(t, "acp:"+bin+" acp", env)

	res, err := o.submit(t, "Set df to 6*7 in my kernel")
	if err != nil {
		t.Fatalf("the agent's turn: %v", err)
	}
	if !strings.Contains(res.Text, "df is 42 in your kernel.") {
		t.Errorf("the turn's answer %q", res.Text)
	}
	// The agent was offered one execute_code: the notebook's kernel's. Its
	// own, which would run in a kernel of its own, stepped aside.
	var offered []string
	for _, tl := range srv.Requests()[0].Body["tools"].([]any) {
		offered = append(offered, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	if !slices.Contains(offered, "mcp__agentkernel__execute_code") || slices.Contains(offered, "execute_code") {
		t.Errorf("the agent was offered %v: want the notebook kernel's execute_code only", offered)
	}
	// The agent's permission request was the session's ask.
	if len(o.asks) != 1 || o.asks[0].Ask != messages.AskTool || !strings.Contains(o.asks[0].Text, "execute_code") {
		t.Errorf("asks %+v, want the agent's one for the MCP tool", o.asks)
	}
	// The code ran in the live kernel.
	out, err := o.runner.Execute(context.Background(), backing.Exec{Code: "print(df + 1)"})
	if err != nil || !strings.Contains(out.Stdout, "43") {
		t.Fatalf("df in the live kernel: %q %v", out.Stdout, err)
	}
	// The session holds the agent's words and its tool call, and the call
	// our MCP server ran (its decision and output).
	all := texts(o.host.Conversation().UI())
	for _, want := range []string{"I will set df.", "df is 42 in your kernel.", `"serverName":"agentkernel"`, "execute_code", "[stdout]\n42"} {
		if !strings.Contains(all, want) {
			t.Errorf("the history lacks %q:\n%s", want, all)
		}
	}

	if res, err := o.submit(t, "And again"); err != nil || !strings.Contains(res.Text, "Second answer.") {
		t.Fatalf("second prompt: %q %v", res.Text, err)
	}
	// Rewind to before the second prompt: the agent's next session is
	// told the first exchange, not the second.
	ui := o.host.Conversation().UI()
	var second int64
	for _, m := range ui {
		if m.Say == messages.SayUserFeedback && m.Text == "And again" {
			second = m.TS
		}
	}
	if _, err := o.host.World().Rewind(context.Background(), second, session.RewindOptions{ConversationOnly: true}); err != nil {
		t.Fatal(err)
	}
	if res, err := o.submit(t, "After"); err != nil || !strings.Contains(res.Text, "After the rewind.") {
		t.Fatalf("after the rewind: %q %v", res.Text, err)
	}
	reqs := srv.Requests()
	b, _ := json.Marshal(reqs[len(reqs)-1].Body)
	last := string(b)
	if !strings.Contains(last, "Set df to 6*7") || strings.Contains(last, "And again") || !strings.Contains(last, "df is 42 in your kernel.") {
		t.Errorf("the agent's request after the rewind: want the first exchange, not the rewound one:\n%s", last)
	}
}

// TestClaudeCode: Claude Code itself — npm's @zed-industries/claude-agent-acp
// over @anthropic-ai/claude-code's own binary, pointed at the scripted
// Anthropic server, offline — answers the notebook's prompt, asks (through
// ACP) to call the live kernel's execute_code tool it was given, and the
// user's variable changes in the live kernel.
func TestClaudeCode(t *testing.T) {
	needKernel(t)
	mods, err := filepath.Abs("../../../tests/acp/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	agentJS := filepath.Join(mods, "@zed-industries", "claude-agent-acp", "dist", "index.js")
	claude := filepath.Join(mods, "@anthropic-ai", "claude-code", "bin", "claude.exe")
	for _, f := range []string{agentJS, claude} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("%s is not installed: run make acp-client", f)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	srv := scripted.New(t)
	srv.Enqueue(
		scripted.Reply(scripted.Text("Setting df in your kernel."),
			scripted.ToolCall("toolu_1", "mcp__agentkernel__execute_code", `{"code":"df = [1, 2, 3]\nprint(len(df))"}`), scripted.Stop("tool_use")),
		scripted.Reply(scripted.Text("df has 3 rows."), scripted.Stop("end_turn")),
	)
	home := t.TempDir()
	env := []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL=" + srv.AnthropicURL(), "ANTHROPIC_API_KEY=sk-ant-test", "CLAUDE_CODE_EXECUTABLE=" + claude,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "IS_SANDBOX=1"}
	o := newOuter(t, "acp:"+node+" "+agentJS, env)
	res, err := o.submit(t, "Make df in my kernel")
	if err != nil {
		t.Fatalf("Claude Code's turn: %v", err)
	}
	if !strings.Contains(res.Text, "df has 3 rows.") {
		t.Errorf("the turn's answer %q", res.Text)
	}
	if len(o.asks) != 1 || !strings.Contains(o.asks[0].Text, "mcp__agentkernel__execute_code") {
		t.Errorf("asks %+v, want Claude Code's one for the kernel's tool", o.asks)
	}
	out, err := o.runner.Execute(context.Background(), backing.Exec{Code: "print(sum(df))"})
	if err != nil || !strings.Contains(out.Stdout, "6") {
		t.Fatalf("df in the live kernel: %q %v; the history:\n%s", out.Stdout, err, texts(o.host.Conversation().UI()))
	}
	// Claude Code was sent the tool's result from our kernel.
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("Claude Code made %d model requests, want 2", len(reqs))
	}
	b, _ := json.Marshal(reqs[1].Body)
	if !strings.Contains(string(b), `[stdout]\n3`) {
		t.Errorf("the tool result Claude Code sent back lacks the kernel's output: %s", b)
	}
	all := texts(o.host.Conversation().UI())
	for _, want := range []string{"Setting df in your kernel.", "df has 3 rows.", `"serverName":"claude-agent-acp"`, "mcp__agentkernel__execute_code"} {
		if !strings.Contains(all, want) {
			t.Errorf("the history lacks %q:\n%s", want, all)
		}
	}
}

// TestAgentDiesMidTurn: an agent process killed while it streams fails
// the turn (what it said so far is kept); the next prompt starts a new
// one, which is told the conversation and answers.
func TestAgentDiesMidTurn(t *testing.T) {
	needKernel(t)
	bin := build(t)
	srv := scripted.New(t)
	srv.Enqueue(scripted.Reply(scripted.Text("Working on it"), scripted.Stall()),
		scripted.Reply(scripted.Text("Back again.")))
	tmp := t.TempDir()
	env := []string{"AGENTKERNEL_MODEL=openai:gpt-4.1", "OPENAI_BASE_URL=" + srv.OpenAIURL(), "OPENAI_API_KEY=sk-inner",
		"AGENTKERNEL_DATA_DIR=" + filepath.Join(tmp, "inner"), "AGENTKERNEL_CONFIG=" + filepath.Join(tmp, "none.json")}
	o := newOuter(t, "acp:"+bin+" acp", env)
	done := make(chan error, 1)
	go func() {
		_, err := o.submit(t, "A long task")
		done <- err
	}()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(texts(o.host.Conversation().UI()), "Working on it") {
		if time.Now().After(deadline) {
			t.Fatal("the agent never streamed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Kill the agent: the process whose command line is this test's
	// binary's `acp`.
	if n := killAll(bin + "\x00acp\x00"); n != 1 {
		t.Fatalf("killed %d agent processes, want 1", n)
	}
	err := <-done
	if !errors.Is(err, agent.ErrAPIFailed) || !strings.Contains(err.Error(), "exited during the turn") {
		t.Fatalf("the turn of a killed agent: %v", err)
	}
	if !strings.Contains(texts(o.host.Conversation().UI()), "Working on it") {
		t.Error("what the agent said before it died is gone")
	}
	res, err := o.submit(t, "Try again")
	if err != nil || !strings.Contains(res.Text, "Back again.") {
		t.Fatalf("the next prompt: %q %v", res.Text, err)
	}
	b, _ := json.Marshal(srv.Requests()[1].Body)
	if !strings.Contains(string(b), "A long task") {
		t.Errorf("the new agent was not told the conversation: %s", b)
	}
}

// TestAgentThatFails: an agent that is not installed, and one that dies
// before it answers, fail the turn with a clear error; the session goes on
// and a working model answers the next prompt.
func TestAgentThatFails(t *testing.T) {
	needKernel(t)
	o := newOuter(t, "acp:no-such-agent-here", nil)
	_, err := o.submit(t, "hello")
	if !errors.Is(err, agent.ErrAPIFailed) || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("a missing agent: %v", err)
	}
	broken := filepath.Join(t.TempDir(), "broken-agent")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho the agent broke >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := o.host.Models().Set(context.Background(), "acp:"+broken); err != nil {
		t.Fatal(err)
	}
	_, err = o.submit(t, "hello again")
	if !errors.Is(err, agent.ErrAPIFailed) || !strings.Contains(err.Error(), "the agent broke") {
		t.Errorf("an agent that dies: %v", err)
	}
	if n := len(o.host.Conversation().UI()); n == 0 {
		t.Error("the failed turns left no history")
	}
}

// killAll kills with SIGKILL the processes whose command line (NUL
// separated) begins with prefix, and returns how many.
func killAll(prefix string) int {
	n := 0
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(cmdline), prefix) && syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

func texts(ui []messages.UIMessage) string {
	var b strings.Builder
	for _, m := range ui {
		fmt.Fprintf(&b, "%s %s: %s\n", m.Type, m.Say+messages.Say(m.Ask), m.Text)
	}
	return b.String()
}

func TestMain(m *testing.M) { os.Exit(kerneltest.Run(m, nil)) }

func TestLabelAndCommand(t *testing.T) {
	for cmd, want := range map[string]string{
		"claude-agent-acp": "claude-agent-acp",
		"node /opt/x/node_modules/@zed-industries/claude-agent-acp/dist/index.js": "claude-agent-acp",
		"npx -y @zed-industries/claude-agent-acp":                                 "claude-agent-acp",
		"/usr/local/bin/agentkernel acp":                                          "agentkernel",
		"gemini --experimental-acp":                                               "gemini",
	} {
		if got := acpagent.Label(strings.Fields(cmd)); got != want {
			t.Errorf("Label(%q) = %q, want %q", cmd, got, want)
		}
	}
	if got := acpagent.Command("claude"); strings.Join(got, " ") != "claude-agent-acp" {
		t.Errorf("the claude alias: %q", got)
	}
	if got := acpagent.Command("my-agent --flag x"); len(got) != 3 {
		t.Errorf("a command line: %q", got)
	}
}
