package bridge

import (
	"strings"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/models"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// codeKernel starts a code-mode kernel whose model is srv, the scripted
// OpenAI API, approving as approve.
func codeKernel(t *testing.T, approve agent.ApprovalPolicy) (*harness, *scripted.Server) {
	t.Helper()
	return codeKernelWith(t, testConfig{Config: Config{Approve: approve}})
}

// codeKernelWith is codeKernel with more of tc (its key).
func codeKernelWith(t *testing.T, tc testConfig) (*harness, *scripted.Server) {
	t.Helper()
	srv := scripted.New(t)
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.OpenAIURL()}
	tc.Dir, tc.Cells = t.TempDir(), CodeCells
	tc.Host = session.Config{Model: "openai:gpt-4.1", DataDir: t.TempDir(), OpenModel: func(spec string) (provider.Provider, error) {
		return models.Open(spec, models.Options{Getenv: func(k string) string { return env[k] }})
	}}
	return startWith(t, tc), srv
}

// TestContextBlockCarriesTheNamespace: in code mode, after the user made a
// table in a real kernel, the next %%agent prompt reaches the model with a
// <notebook_context> block naming it with its shape and columns, read
// silently: the execution counts of the user's cells go on as if nothing
// else had run. A prompt after cells that changed nothing repeats nothing;
// one after a change names only what changed.
func TestContextBlockCarriesTheNamespace(t *testing.T) {
	h, srv := codeKernel(t, agent.ApproveAll)
	rep, _ := h.cell("class Table:\n    columns = ['city', 'sales']\n    dtypes = ['object', 'float64']\n    shape = (120, 2)\ndf = Table()\nimport json as js")
	if rep["status"] != "ok" {
		t.Fatalf("setup cell: %v", rep)
	}
	first := rep["execution_count"]
	lastUser := srv.LastUserText
	srv.Enqueue(scripted.Reply(scripted.Text("A table.")))
	if rep, _ := h.cell("%%agent\nWhat is df?"); rep["status"] != "ok" {
		t.Fatalf("prompt: %v", rep)
	}
	got := lastUser()
	for _, want := range []string{"<notebook_context>", "df: Table (120, 2) [city: object, sales: float64]", "Modules: js (json)", "</notebook_context>\n\nWhat is df?"} {
		if !strings.Contains(got, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, got)
		}
	}
	rep, _ = h.cell("n = 3")
	if rep["execution_count"] != first.(float64)+1 {
		t.Errorf("the next cell's count is %v after %v: the namespace read was counted", rep["execution_count"], first)
	}
	srv.Enqueue(scripted.Reply(scripted.Text("Three.")))
	h.cell("%%agent\nAnd n?")
	got = lastUser()
	if !strings.Contains(got, "new or changed since the last message:\nn: int = 3") || strings.Contains(got, "df: Table") {
		t.Errorf("the second prompt does not give only what changed:\n%s", got)
	}
	srv.Enqueue(scripted.Reply(scripted.Text("Same.")))
	h.cell("%%agent\nAnything new?")
	if got = lastUser(); strings.Contains(got, "Variables in the kernel") {
		t.Errorf("nothing ran, yet the namespace was told again:\n%s", got)
	}
}

// TestInspectVariableInPlanMode: in plan mode (read-only), the agent still
// looks at the user's table with inspect_variable — no cell runs, nobody
// is asked — and gets its columns, dtypes and nulls.
func TestInspectVariableInPlanMode(t *testing.T) {
	h, srv := codeKernel(t, agent.ApproveNone)
	if rep, _ := h.cell("import pandas as pd\ndf = pd.DataFrame({'city': ['Oslo', None], 'sales': [1.5, 2.0]})"); rep["status"] != "ok" {
		t.Skipf("pandas: %v", rep)
	}
	if rep, _ := h.cell("%agent permissions plan"); rep["status"] != "ok" {
		t.Fatalf("plan mode: %v", rep)
	}
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("c1", "inspect_variable", `{"name":"df"}`)),
		scripted.Reply(scripted.Text("Two columns.")),
	)
	if rep, _ := h.cell("%%agent\nDescribe df."); rep["status"] != "ok" {
		t.Fatalf("prompt: %v", rep)
	}
	reqs := srv.Requests()
	last := string(reqs[len(reqs)-1].Raw)
	for _, want := range []string{"shape: (2, 2)", "city: object, 1 null", "sales: float64, 0 null"} {
		if !strings.Contains(last, want) {
			t.Errorf("the tool's result lacks %q: %s", want, last)
		}
	}
	if strings.Contains(last, "Permission denied") {
		t.Errorf("inspect_variable was refused in plan mode: %s", last)
	}
}

// TestMentionedVariable: a %%agent prompt that mentions @sales gives the
// model the table's description from the real kernel, and the prompt as
// typed.
func TestMentionedVariable(t *testing.T) {
	h, srv := codeKernel(t, agent.ApproveNone)
	if rep, _ := h.cell("import pandas as pd\nsales = pd.DataFrame({'city': ['Oslo', None], 'total': [1.5, 2.0]})"); rep["status"] != "ok" {
		t.Skipf("pandas: %v", rep)
	}
	srv.Enqueue(scripted.Reply(scripted.Text("Two rows.")))
	if rep, _ := h.cell("%%agent\nHow many rows has @sales?"); rep["status"] != "ok" {
		t.Fatalf("prompt: %v", rep)
	}
	req, _ := srv.Last()
	raw := string(req.Raw)
	for _, want := range []string{`@sales (a variable of the kernel):\nsales: pandas.core.frame.DataFrame\nshape: (2, 2)`, `How many rows has @sales?`} {
		if !strings.Contains(raw, want) {
			t.Errorf("the request lacks %q: %s", want, raw)
		}
	}
}

// TestEmptyNamespaceIsNoBaseline: a prompt while the kernel's namespace
// is empty tells the model no variables, so the first variables it is told
// of later come whole, not as "new or changed" since a list it never saw
// (agentkernel run's replay depended on whether the kernel was up at the
// first prompt).
func TestEmptyNamespaceIsNoBaseline(t *testing.T) {
	h, srv := codeKernel(t, agent.ApproveAll)
	if rep, _ := h.cell("pass"); rep["status"] != "ok" {
		t.Fatalf("setup cell: %v", rep)
	}
	srv.Enqueue(scripted.Reply(scripted.Text("Nothing yet.")))
	if rep, _ := h.cell("%%agent\nWhat is there?"); rep["status"] != "ok" {
		t.Fatalf("prompt: %v", rep)
	}
	if got := srv.LastUserText(); strings.Contains(got, "Variables in the kernel") {
		t.Fatalf("an empty namespace was told:\n%s", got)
	}
	h.cell("x = 1")
	srv.Enqueue(scripted.Reply(scripted.Text("One.")))
	h.cell("%%agent\nAnd now?")
	if got := srv.LastUserText(); !strings.Contains(got, "Variables in the kernel (name: type, shape, columns, value):\nx: int = 1") {
		t.Errorf("the first variables are not told whole:\n%s", got)
	}
}

// TestProxiedCellsReachTheModel: in code mode the user's own cells go
// through the proxy whole to the frontend, and their code and output, cut
// to its head and tail, reach the model with the next %%agent prompt: a
// cell run before the first prompt and one run between prompts, a
// 200,000-character print among them and an error.
func TestProxiedCellsReachTheModel(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(map[bool]string{false: "the frontend's key", true: "a key of its own"}[own], func(t *testing.T) {
			proxiedCellsReachTheModel(t, own)
		})
	}
}

// proxiedCellsReachTheModel is TestProxiedCellsReachTheModel with a
// backing kernel that has the frontend's signing key, whose big output
// goes on to the frontend as the backing kernel signed it, or (ownKey) a
// key of its own, whose output the kernel checks and signs anew. The
// frontend's client checks every signature either way.
func proxiedCellsReachTheModel(t *testing.T, ownKey bool) {
	h, srv := codeKernelWith(t, testConfig{Config: Config{Approve: agent.ApproveAll}, OwnKey: ownKey})
	const big = "print('head-' + 'x' * 200000 + '-tail')"
	rep, out := h.cell(big)
	if rep["status"] != "ok" {
		t.Fatalf("big cell: %v", rep)
	}
	if got := strings.Join(texts(out, "stream", ""), ""); len(got) != 200011 || !strings.HasPrefix(got, "head-x") || !strings.HasSuffix(got, "x-tail\n") {
		t.Fatalf("the frontend got %d characters of stream (%.20q…), want the print whole", len(got), got)
	}
	// The client gave the cell's handler only what names the cell as its
	// parent and is signed with the frontend's key.
	for _, m := range out.msgs {
		if m.Header.MsgType != "stream" {
			continue
		}
		if mine := m.Header.Session == h.srv.Session(); mine != ownKey {
			t.Errorf("the stream's session is %s, the kernel's %s: with ownKey %v it should be the %s", m.Header.Session, h.srv.Session(),
				ownKey, map[bool]string{false: "backing kernel's (sent on as signed)", true: "kernel's (signed anew)"}[ownKey])
		}
	}
	srv.Enqueue(scripted.Reply(scripted.Text("Long.")))
	if rep, _ := h.cell("%%agent\nWhat did I print?"); rep["status"] != "ok" {
		t.Fatalf("prompt: %v", rep)
	}
	got := srv.LastUserText()
	for _, want := range []string{big, "Output:\n```\nhead-xxx", "bytes cut", "xxx-tail\n```"} {
		if !strings.Contains(got, want) {
			t.Errorf("the first prompt lacks %q:\n%.3000s", want, got)
		}
	}
	if len(got) > 10000 {
		t.Errorf("the first prompt is %d bytes: the output was not cut", len(got))
	}
	if rep, _ := h.cell("print('between')\n1/0"); rep["status"] != "error" {
		t.Fatalf("error cell: %v", rep)
	}
	srv.Enqueue(scripted.Reply(scripted.Text("An error.")))
	h.cell("%%agent\nAnd then?")
	got = srv.LastUserText()
	for _, want := range []string{"1/0", "between", "ZeroDivisionError: division by zero"} {
		if !strings.Contains(got, want) {
			t.Errorf("the second prompt lacks %q:\n%.3000s", want, got)
		}
	}
	if strings.Contains(got, "head-x") {
		t.Errorf("the second prompt repeats the first one's cell:\n%.3000s", got)
	}
	// Outputs over holdOutputs are decoded soon after the cell, and let go
	// of; the model gets them all the same.
	const huge = "print('huge-' + 'y' * (3 << 20) + '-end')"
	if rep, _ := h.cell(huge); rep["status"] != "ok" {
		t.Fatalf("huge cell: %v", rep)
	}
	time.Sleep(50 * time.Millisecond) // past the decode's 20 ms, so that it, not the prompt, makes the text
	srv.Enqueue(scripted.Reply(scripted.Text("Huge.")))
	h.cell("%%agent\nAnd now?")
	got = srv.LastUserText()
	for _, want := range []string{huge, "huge-yyy", "yyy-end"} {
		if !strings.Contains(got, want) {
			t.Errorf("the third prompt lacks %q:\n%.3000s", want, got)
		}
	}
}
