package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentkernel/agentkernel/internal/kerneltest"
	"github.com/agentkernel/agentkernel/notebooks"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// updateExamples re-records the cassettes of notebooks/examples against the
// scripted model server: go test ./cmd/agentkernel -run TestExamples -update-examples
var updateExamples = flag.Bool("update-examples", false, "re-record notebooks/examples/*.cassette.jsonl")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		pos     []string
		out     string
		allow   bool
		wantErr bool
	}{
		{"flags first", []string{"-o", "x.ipynb", "nb.ipynb"}, []string{"nb.ipynb"}, "x.ipynb", false, false},
		{"flags after", []string{"nb.ipynb", "-o", "x.ipynb", "--allow-errors"}, []string{"nb.ipynb"}, "x.ipynb", true, false},
		{"interleaved", []string{"a", "--allow-errors", "b"}, []string{"a", "b"}, "", true, false},
		{"dash is positional", []string{"-", "-o", "y"}, []string{"-"}, "y", false, false},
		{"double dash", []string{"--", "-o", "y"}, []string{"-o", "y"}, "", false, false},
		{"unknown flag", []string{"nb", "--nope"}, nil, "", false, true},
		{"none", nil, nil, "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFlagSet("t", "t", &bytes.Buffer{})
			out := fs.String("o", "", "")
			allow := fs.Bool("allow-errors", false, "")
			pos, err := parseArgs(fs, tt.args)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if !reflect.DeepEqual(pos, tt.pos) || *out != tt.out || *allow != tt.allow {
				t.Errorf("pos %q out %q allow %v; want %q %q %v", pos, *out, *allow, tt.pos, tt.out, tt.allow)
			}
		})
	}
}

func TestDefaultOutput(t *testing.T) {
	for in, want := range map[string]string{
		"tour.ipynb":          "tour.out.ipynb",
		"dir/a.b.ipynb":       "dir/a.b.out.ipynb",
		"noext":               "noext.out.ipynb",
		"/abs/x.out.ipynb":    "/abs/x.out.out.ipynb",
		"weird.json":          "weird.out.ipynb",
		"./rel/../nb.ipynb":   "./rel/../nb.out.ipynb",
		"spaces in/n b.ipynb": "spaces in/n b.out.ipynb",
	} {
		if got := defaultOutput(in); got != want {
			t.Errorf("defaultOutput(%q) = %q, want %q", in, got, want)
		}
	}
}

// cli is the built binary with a private Jupyter path holding the
// kernelspecs the examples name (agent-prompt, agent) and a private store.
type cli struct {
	bin, prefix, data, config, runtime string
}

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// buildCLI builds agentkernel once per test binary run.
func buildCLI(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and starts kernels; skipped with -short")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentkernel-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildBin = filepath.Join(dir, "agentkernel")
		gobin := kerneltest.GoTool()
		out, err := exec.Command(gobin, "build", "-o", buildBin, ".").CombinedOutput()
		if err != nil {
			buildErr = &buildError{out: string(out), err: err}
		}
	})
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return buildBin
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

func newCLI(t *testing.T) *cli {
	t.Helper()
	c := &cli{bin: buildCLI(t)}
	tmp := t.TempDir()
	c.prefix, c.data, c.config, c.runtime = filepath.Join(tmp, "prefix"), filepath.Join(tmp, "data"),
		filepath.Join(tmp, "config"), filepath.Join(tmp, "runtime")
	for _, d := range []string{c.runtime, filepath.Join(c.config, "agentkernel")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Prices for the scripted model, so that costs are recorded and replayed.
	cfg := `{"prices": {"scripted-tour": {"input": 2, "output": 8}}}`
	if err := os.WriteFile(filepath.Join(c.config, "agentkernel", "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"install", "--prefix", c.prefix, "--name", "agent-prompt", "--mode", "prompt", "--probe=false"},
		{"install", "--prefix", c.prefix, "--name", "agent", "--mode", "code", "--probe=false"},
	} {
		if out, err := c.cmd(nil, args...).CombinedOutput(); err != nil {
			t.Fatalf("agentkernel %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return c
}

func (c *cli) env(extra []string) []string {
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "AGENTKERNEL_MODEL", "AGENTKERNEL_APPROVE", "AGENTKERNEL_RECORD", "AGENTKERNEL_CONFIG",
			"OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL":
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"JUPYTER_PATH="+filepath.Join(c.prefix, "share", "jupyter"),
		"JUPYTER_RUNTIME_DIR="+c.runtime,
		"AGENTKERNEL_DATA_DIR="+c.data,
		"XDG_CONFIG_HOME="+c.config,
		"PYDEVD_DISABLE_FILE_VALIDATION=1",
	)
	return append(env, extra...)
}

func (c *cli) cmd(extraEnv []string, args ...string) *exec.Cmd {
	cmd := exec.Command(c.bin, args...)
	cmd.Env = c.env(extraEnv)
	return cmd
}

// run runs the binary and returns stdout, stderr and the exit error.
func (c *cli) run(t *testing.T, extraEnv []string, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := c.cmd(extraEnv, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func examplesDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", "..", "notebooks", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// tourTurns is what the scripted model answers to tour.ipynb's prompts,
// in order.
func tourTurns() []scripted.Turn {
	usage := func(in, out int) scripted.Step { return scripted.UsageStep(scripted.Usage{Input: in, Output: out}) }
	code := func(s string) string {
		b, _ := json.Marshal(map[string]string{"code": s})
		return string(b)
	}
	result := func(s string) string {
		b, _ := json.Marshal(map[string]string{"result": s})
		return string(b)
	}
	plot := `import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(fib, marker="o", label="fib")
ax.plot(squares, marker="s", label="squares")
ax.set_yscale("symlog")
ax.set_xlabel("n")
ax.legend()
plt.show()`
	return []scripted.Turn{
		// "Compute the first ten Fibonacci numbers …"
		scripted.Reply(scripted.Text("I'll compute them ", "in the kernel."),
			scripted.ToolCall("call_fib", "execute_code", code("fib = [0, 1]\nwhile len(fib) < 10:\n    fib.append(fib[-1] + fib[-2])\nprint(fib)")),
			usage(1210, 64)),
		scripted.Reply(scripted.ToolCall("call_done_fib", "attempt_completion",
			result("The first ten Fibonacci numbers are 0, 1, 1, 2, 3, 5, 8, 13, 21 and 34; they are in `fib`.")),
			usage(1342, 41)),
		// "What is the sum of the squares I just computed?" (after %%code)
		scripted.Reply(scripted.Text("Summing the `squares` you computed."),
			scripted.ToolCall("call_sum", "execute_code", code("sum(squares)")), usage(1488, 30)),
		scripted.Reply(scripted.Text("The sum of the squares is **1870**, which is 34 × 55: the sum of the squares of the first ",
			"n Fibonacci numbers is the product of the n-th and the next one."), usage(1540, 52)),
		// "Plot fib and squares …": the plot and the result in one answer.
		scripted.Reply(scripted.Text("Here is the chart."),
			scripted.ToolCall("call_plot", "execute_code", code(plot)),
			scripted.ToolCall("call_done_plot", "attempt_completion", result("Plotted `fib` and `squares` on a symmetric log scale.")),
			usage(1630, 160)),
	}
}

// askTurns answer the ask example's prompt.
const askPrompt = "What is 6 times 7? Check it in the kernel."

func askTurns() []scripted.Turn {
	return []scripted.Turn{
		scripted.Reply(scripted.Text("Let me check."), scripted.ToolCall("call_1", "execute_code", `{"code": "6 * 7"}`),
			scripted.UsageStep(scripted.Usage{Input: 900, Output: 20})),
		scripted.Reply(scripted.ToolCall("call_2", "attempt_completion", `{"result": "6 × 7 = 42 (checked in the kernel)."}`),
			scripted.UsageStep(scripted.Usage{Input: 950, Output: 18})),
	}
}

func scriptedEnv(srv *scripted.Server) []string {
	return []string{"OPENAI_BASE_URL=" + srv.OpenAIURL(), "OPENAI_API_KEY=not-a-real-key"}
}

// answeredBy is who answered an approval, in the agent's decision
// messages: the policy when recording, the cassette when replaying.
var answeredBy = regexp.MustCompile(`allowed by the user \((policy:[a-z-]+|replay|stdin)\)`)

// outputsOf returns each code cell's outputs, normalised for comparing
// two runs: image data is masked, and so is who answered an approval.
func outputsOf(t *testing.T, path string) []string {
	t.Helper()
	nb, err := notebooks.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if err := nb.Validate(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, c := range nb.Cells {
		if c.CellType != notebooks.Code {
			continue
		}
		var parts []string
		for _, o := range c.Outputs {
			oc := o.Clone()
			for mime := range oc.Data {
				if strings.HasPrefix(mime, "image/") {
					oc.Data[mime] = json.RawMessage(`"<image>"`)
				}
			}
			b, err := json.Marshal(oc)
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, answeredBy.ReplaceAllString(string(b), "allowed by the user (…)"))
		}
		out = append(out, strings.Join(parts, "\n"))
	}
	return out
}

// TestExamplesRecordReplay records the tour against the scripted model,
// replays the cassette, and checks that both runs give the same outputs.
// With -update-examples the cassettes of notebooks/examples are rewritten.
func TestExamplesRecordReplay(t *testing.T) {
	c := newCLI(t)
	ex := examplesDir(t)
	tmp := t.TempDir()
	cassette := filepath.Join(tmp, "tour.cassette.jsonl")
	if *updateExamples {
		cassette = filepath.Join(ex, "tour.cassette.jsonl")
	}
	srv := scripted.New(t)
	srv.Enqueue(tourTurns()...)
	recorded := filepath.Join(tmp, "recorded.ipynb")
	_, stderr, err := c.run(t, scriptedEnv(srv), "run", filepath.Join(ex, "tour.ipynb"), "-o", recorded,
		"--record", cassette, "--model", "openai:scripted-tour", "--approve", "all")
	if err != nil {
		t.Fatalf("record: %v\n%s", err, stderr)
	}
	if n := srv.Pending(); n != 0 {
		t.Fatalf("%d scripted turns left unused", n)
	}
	replayed := filepath.Join(tmp, "replayed.ipynb")
	_, stderr, err = c.run(t, nil, "run", filepath.Join(ex, "tour.ipynb"), "-o", replayed, "--replay", cassette, "--approve", "all")
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	rec, rep := outputsOf(t, recorded), outputsOf(t, replayed)
	if !reflect.DeepEqual(rec, rep) {
		for i := range rec {
			if i < len(rep) && rec[i] != rep[i] {
				t.Errorf("code cell %d differs:\nrecorded: %s\nreplayed: %s", i, rec[i], rep[i])
			}
		}
		t.Fatalf("replayed outputs differ from the recorded run")
	}
	for _, want := range []string{"[0, 1, 1, 2, 3, 5, 8, 13, 21, 34]", "1870", "image/png", "Plotted"} {
		if !strings.Contains(strings.Join(rep, "\n"), want) {
			t.Errorf("replayed tour lacks %q", want)
		}
	}
	// The committed cassette replays too, as the README runs it: a change
	// of what the model is offered or told must re-record it
	// (go test ./cmd/agentkernel -run TestExamplesRecordReplay -args -update-examples).
	committed := filepath.Join(tmp, "committed.ipynb")
	if _, stderr, err := c.run(t, nil, "run", filepath.Join(ex, "tour.ipynb"), "-o", committed,
		"--replay", filepath.Join(ex, "tour.cassette.jsonl"), "--approve", "all"); err != nil {
		t.Fatalf("the committed tour cassette no longer replays: %v\n%s", err, stderr)
	}

	// The ask example.
	askCassette := filepath.Join(tmp, "ask.cassette.jsonl")
	if *updateExamples {
		askCassette = filepath.Join(ex, "ask.cassette.jsonl")
	}
	srv.Enqueue(askTurns()...)
	stdout, stderr, err := c.run(t, scriptedEnv(srv), "ask", askPrompt, "--record", askCassette,
		"--model", "openai:scripted-tour", "--approve", "all")
	if err != nil {
		t.Fatalf("ask --record: %v\n%s", err, stderr)
	}
	stdout2, stderr, err := c.run(t, nil, "ask", askPrompt, "--model", "replay:"+askCassette, "--approve", "all")
	if err != nil {
		t.Fatalf("ask replay: %v\n%s", err, stderr)
	}
	if stdout != stdout2 || !strings.Contains(stdout, "42") {
		t.Errorf("ask: recorded answer %q, replayed %q", stdout, stdout2)
	}
}

// TestRunBadInput: each bad input is a clear message, exit 1 and no file.
func TestRunBadInput(t *testing.T) {
	c := newCLI(t)
	ex := examplesDir(t)
	tmp := t.TempDir()
	corrupt := filepath.Join(tmp, "corrupt.ipynb")
	if err := os.WriteFile(corrupt, []byte(`{"cells": [{"cell_type": "code", "source": 7}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`), 0o644); err != nil {
		t.Fatal(err)
	}
	badCassette := filepath.Join(tmp, "bad.jsonl")
	if err := os.WriteFile(badCassette, []byte("{\"kind\":\"header\",\"version\":1}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"corrupt notebook", []string{"run", corrupt}, "cell 0"},
		{"missing notebook", []string{"run", filepath.Join(tmp, "nope.ipynb")}, "no such file"},
		{"unknown kernelspec", []string{"run", filepath.Join(ex, "tour.ipynb"), "--kernel", "no-such-kernel"}, `unknown kernelspec "no-such-kernel"`},
		{"missing cassette", []string{"run", filepath.Join(ex, "tour.ipynb"), "--replay", filepath.Join(tmp, "none.jsonl")}, "open cassette"},
		{"corrupt cassette", []string{"run", filepath.Join(ex, "tour.ipynb"), "--replay", badCassette}, "line 2"},
		{"bad approve", []string{"run", filepath.Join(ex, "tour.ipynb"), "--approve", "maybe"}, "approval policy"},
		{"record and replay", []string{"run", filepath.Join(ex, "tour.ipynb"), "--replay", badCassette, "--record", "x"}, "exclude"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(tmp, strings.ReplaceAll(tt.name, " ", "-")+".ipynb")
			_, stderr, err := c.run(t, nil, append(tt.args, "-o", out)...)
			if err == nil {
				t.Fatalf("exit 0; stderr:\n%s", stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}
