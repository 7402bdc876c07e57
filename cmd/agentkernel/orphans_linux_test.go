package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestChildrenDieWithKilledKernel: every process a kernel starts — the
// backing kernel, an external ACP agent, a hook, an MCP stdio server — and
// what they start in turn is gone within 5 s of a SIGKILL of the kernel
// (what shutdown_kernel(now=True), a gateway's cull and the OOM killer
// give it). Each case starts a real kernel from the built binary, drives
// a cell through the scripted model until its children run, records the
// kernel's process tree, kills the kernel and watches the tree in /proc.
//
// Each kernel runs in a PID namespace of its own where unshare can make
// one (not as the namespace's init, whose end would kill everything: a
// sleep is), so that whatever happens nothing outlives the test.
func TestChildrenDieWithKilledKernel(t *testing.T) {
	c := newCLI(t)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	if _, err := client.FindSpec("python3"); err != nil {
		t.Skipf("no python3 kernelspec: %v", err)
	}
	prompt := []string{"--mode", "prompt", "--model", askModel}
	cases := []struct {
		name string
		// setup writes the workspace's files and returns the kernel's
		// flags and extra environment; it skips when what it needs is
		// missing.
		setup func(t *testing.T, ws string) (args, env []string)
		turns []scripted.Turn
		// cells run to their reply; then last is sent and left running.
		cells []string
		last  string
		// want are pieces of the command lines that must be running in
		// the kernel's tree before it is killed.
		want []string
	}{
		{
			name:  "backing kernel",
			setup: func(*testing.T, string) ([]string, []string) { return prompt, nil },
			cells: []string{"%%code\nimport subprocess\np = subprocess.Popen(['sleep', '1003'])"},
			want:  []string{"ipykernel", "sleep 1003"},
		},
		{
			name: "hook",
			setup: func(t *testing.T, ws string) ([]string, []string) {
				writeJSON(t, filepath.Join(ws, ".agentkernel", "settings.json"), map[string]any{"hooks": map[string]any{
					"PreToolUse": []any{map[string]any{"matcher": "execute_code", "hooks": []any{
						map[string]any{"type": "command", "command": "sleep 1004; echo done", "timeout": 600}}}}}})
				return prompt, []string{"AGENTKERNEL_APPROVE=all"}
			},
			turns: []scripted.Turn{scripted.Reply(scripted.ToolCall("c1", "execute_code", `{"code": "1 + 1"}`))},
			last:  "Work out 1 + 1 in the kernel",
			want:  []string{"sleep 1004"},
		},
		{
			name: "MCP stdio server",
			setup: func(t *testing.T, ws string) ([]string, []string) {
				writeJSON(t, filepath.Join(ws, ".mcp.json"), map[string]any{"mcpServers": map[string]any{
					"guarded": map[string]any{"command": "/bin/sh",
						"args": []string{"-c", "sleep 1002 & exec " + c.bin + " mcp serve --dir " + ws}}}})
				return prompt, nil
			},
			turns: []scripted.Turn{scripted.Reply(scripted.Text("Hello."))},
			cells: []string{"Say hello"},
			want:  []string{"mcp serve", "sleep 1002"},
		},
		{
			// agentkernel's own acp as the external agent, behind a script
			// that leaves a grandchild.
			name: "ACP agent",
			setup: func(t *testing.T, ws string) ([]string, []string) {
				script := filepath.Join(ws, "agent.sh")
				body := "#!/bin/sh\nsleep 1001 &\nAGENTKERNEL_DATA_DIR=\"$AGENTKERNEL_DATA_DIR/inner\" exec " + c.bin + " acp\n"
				if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
				return []string{"--mode", "prompt", "--agent", "acp:" + script}, []string{"AGENTKERNEL_MODEL=" + askModel}
			},
			turns: []scripted.Turn{scripted.Reply(scripted.Text("Hello from the agent."))},
			cells: []string{"Say hello"},
			want:  []string{c.bin + " acp", "sleep 1001"},
		},
		{
			// npm's claude-agent-acp (node), which starts Claude Code.
			name: "Claude Code",
			setup: func(t *testing.T, ws string) ([]string, []string) {
				mods, err := filepath.Abs("../../tests/acp/node_modules")
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
				home := filepath.Join(ws, "home")
				return []string{"--mode", "prompt", "--agent", "acp:" + node + " " + agentJS},
					[]string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"), "CLAUDE_CODE_EXECUTABLE=" + claude,
						"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "IS_SANDBOX=1"}
			},
			turns: []scripted.Turn{scripted.Reply(scripted.Text("Hello from Claude Code."), scripted.Stop("end_turn"))},
			cells: []string{"Say hello"},
			want:  []string{"claude-agent-acp", "claude.exe"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			args, env := tc.setup(t, ws)
			srv := scripted.New(t)
			srv.Enqueue(tc.turns...)
			env = append(env, "OPENAI_BASE_URL="+srv.OpenAIURL(), "OPENAI_API_KEY=sk-test",
				"ANTHROPIC_BASE_URL="+srv.AnthropicURL(), "ANTHROPIC_API_KEY=sk-ant-test")
			k := startKilledKernel(t, c, ws, args, env)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			for _, cell := range tc.cells {
				reply, err := k.kc.Execute(ctx, cell, client.ExecuteOptions{}, client.Handlers{})
				if err != nil {
					t.Fatalf("cell %q: %v", cell, err)
				}
				var content struct {
					Status string `json:"status"`
				}
				if err := reply.DecodeContent(&content); err != nil || content.Status != "ok" {
					t.Fatalf("cell %q: %s %v", cell, reply.Content, err)
				}
			}
			if tc.last != "" {
				if err := k.kc.Send(ctx, client.Request{MsgType: wire.MsgExecuteRequest, Content: map[string]any{
					"code": tc.last, "silent": false, "store_history": true, "user_expressions": map[string]any{},
					"allow_stdin": false, "stop_on_error": true}}); err != nil {
					t.Fatal(err)
				}
			}
			tree := k.waitFor(t, tc.want)
			killed := time.Now()
			if err := syscall.Kill(k.pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if left := waitGone(tree, 5*time.Second); len(left) > 0 {
				t.Fatalf("alive 5 s after the kernel was killed:%s\n(the tree was:%s)", describe(left), describe(tree))
			}
			t.Logf("%d processes gone %v after the kernel was killed:%s", len(tree), time.Since(killed).Round(time.Millisecond), describe(tree))
			if k.root != k.pid {
				if left := alive(k.descendants()); len(left) > 0 {
					t.Fatalf("processes of the kernel's namespace it did not have when killed are alive:%s", describe(left))
				}
			}
		})
	}
}

// killedKernel is a kernel started to be killed.
type killedKernel struct {
	kc *client.Client
	// pid is the kernel's process; root is that of unshare, whose
	// namespace holds the kernel (pid without a namespace).
	pid, root int
}

// startKilledKernel starts `agentkernel kernel` in ws with args, connects
// to it, and cleans everything up at the end of the test.
func startKilledKernel(t *testing.T, c *cli, ws string, args, env []string) *killedKernel {
	t.Helper()
	ci, err := wire.NewConnectionInfo("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	connFile := filepath.Join(t.TempDir(), "kernel.json")
	if err := wire.WriteConnectionFile(connFile, ci); err != nil {
		t.Fatal(err)
	}
	argv := append([]string{c.bin, "kernel", "-f", connFile}, args...)
	var cmd *exec.Cmd
	ns := pidNamespaces()
	if ns {
		// The namespace's init is a sleep: orphans are reparented to it,
		// and it ends the namespace only when the test kills unshare.
		cmd = exec.Command("unshare", append([]string{"--pid", "--fork", "--kill-child", "/bin/sh", "-c",
			`"$@" & exec sleep 100000`, "sh"}, argv...)...)
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
	}
	cmd.Dir, cmd.Env = ws, c.env(env)
	logf, err := os.Create(filepath.Join(t.TempDir(), "kernel.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// The test's own end takes unshare, and with it the namespace.
	// It is forked from a goroutine locked to its thread until the test
	// ends: the parent-death signal follows the forking thread, and Go
	// ends a thread when any goroutine locked to it returns.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started, release := make(chan error, 1), make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the test
		started <- cmd.Start()
		<-release
	}()
	if err := <-started; err != nil {
		close(release)
		t.Fatal(err)
	}
	t.Cleanup(func() { close(release) })
	k := &killedKernel{root: cmd.Process.Pid, pid: cmd.Process.Pid}
	t.Cleanup(func() {
		// Without a namespace, what is left of the tree goes first.
		if !ns {
			for _, p := range alive(k.descendants()) {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logf.Name()); err == nil {
				t.Logf("the kernel's log:\n%s", b)
			}
		}
	})
	if ns {
		// The kernel is the child of the namespace's init (unshare's
		// child). A child the kernel is starting shows the kernel's
		// command line too, between its fork and its exec: it is one
		// level further down.
		prefix := c.bin + " kernel "
		deadline := time.Now().Add(10 * time.Second)
		for k.pid = 0; k.pid == 0; {
			for _, p := range k.descendants() {
				if !strings.HasPrefix(p.cmd, prefix) {
					continue
				}
				if _, ppid, _, ok := stat(p.pid); ok {
					if _, grand, _, ok := stat(ppid); ok && grand == k.root {
						k.pid = p.pid
					}
				}
			}
			if time.Now().After(deadline) {
				t.Fatal("the kernel did not start in its namespace")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc, err := client.Dial(ctx, ci, client.Options{Logger: hclog.NewNullLogger(), HeartbeatInterval: -1})
	if err != nil {
		t.Fatalf("dial the kernel: %v", err)
	}
	t.Cleanup(func() { kc.Close() })
	k.kc = kc
	return k
}

// waitFor waits until the kernel's tree holds a process for each of want
// (pieces of command lines) and returns the tree, the kernel excluded.
func (k *killedKernel) waitFor(t *testing.T, want []string) []proc {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		tree := descendantsOf(k.pid)
		missing := slices.DeleteFunc(slices.Clone(want), func(w string) bool {
			return slices.ContainsFunc(tree, func(p proc) bool { return strings.Contains(p.cmd, w) })
		})
		if len(missing) == 0 {
			return tree
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kernel's tree has no %q:%s", missing, describe(tree))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// descendants are the processes under root (unshare, or the kernel).
func (k *killedKernel) descendants() []proc {
	all := descendantsOf(k.root)
	if k.root == k.pid {
		return all
	}
	// The namespace's init (unshare's child) is not one of them.
	return slices.DeleteFunc(all, func(p proc) bool {
		_, ppid, _, _ := stat(p.pid)
		return ppid == k.root
	})
}

// pidNamespaces reports whether unshare can run a command in a PID
// namespace of its own.
func pidNamespaces() bool {
	return exec.Command("unshare", "--pid", "--fork", "--kill-child", "true").Run() == nil
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// proc is a process: its pid and its start time, as a pid can be reused,
// and its command line when it was seen.
type proc struct {
	pid   int
	start string
	cmd   string
}

// stat is what /proc/PID/stat says of a process: its state, parent and
// start time.
func stat(pid int) (state byte, ppid int, start string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, "", false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, "", false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, 0, "", false
	}
	ppid, err = strconv.Atoi(f[1])
	return f[0][0], ppid, f[19], err == nil
}

// descendantsOf returns the processes below root, by their parents.
func descendantsOf(root int) []proc {
	children := map[int][]proc{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, start, ok := stat(pid); ok {
			children[ppid] = append(children[ppid], proc{pid, start, cmdline(pid)})
		}
	}
	var out []proc
	for todo := children[root]; len(todo) > 0; {
		p := todo[len(todo)-1]
		todo = append(todo[:len(todo)-1], children[p.pid]...)
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b proc) int { return a.pid - b.pid })
	return out
}

// alive returns the processes that still run (zombies do not).
func alive(ps []proc) []proc {
	return slices.DeleteFunc(slices.Clone(ps), func(p proc) bool {
		st, _, start, ok := stat(p.pid)
		return !ok || start != p.start || st == 'Z' || st == 'X'
	})
}

// waitGone waits up to d for ps to end and returns those still alive.
func waitGone(ps []proc, d time.Duration) []proc {
	deadline := time.Now().Add(d)
	for {
		left := alive(ps)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cmdline is a process's command line, its arguments joined by spaces,
// up to its first line break.
func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	s, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(strings.ReplaceAll(s, "\x00", " "))
}

func describe(ps []proc) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "\n  %d: %s", p.pid, p.cmd)
	}
	return b.String()
}
