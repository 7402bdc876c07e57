package acp

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/internal/kerneltest"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestRealClient: the protocol's own TypeScript SDK (npm's
// @agentclientprotocol/sdk, tests/acp) drives the built binary's `acp` over
// stdio: initialize, a prompt answered, code that asks permission (allowed
// once) and runs in a real backing kernel, a cancel, then a second process
// that loads, lists and forks the stored session.
func TestRealClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts a kernel")
	}
	script, err := filepath.Abs("../../tests/acp/client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		t.Skip("@agentclientprotocol/sdk is not installed: run make acp-client")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import ipykernel").Run(); err != nil {
		t.Skip("Debian's python3-ipykernel is not installed")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "agentkernel")
	if out, err := exec.Command(kerneltest.GoTool(), "build", "-o", bin, "../../cmd/agentkernel").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work, data := filepath.Join(tmp, "work"), filepath.Join(tmp, "data")
	for _, d := range []string{work, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv := scripted.New(t)
	usage := scripted.UsageStep(scripted.Usage{Input: 100, Output: 10})
	srv.Enqueue(
		scripted.Reply(scripted.Text("Hello ", "from agentkernel."), usage),
		scripted.Reply(scripted.ToolCall("call_x", "execute_code", `{"code":"x = 6*7\nprint(x)"}`), usage),
		scripted.Reply(scripted.Text("x is 42."), usage),
		scripted.Reply(scripted.Text("Thinking it over"), scripted.Stall()),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = filepath.Dir(script)
	cmd.Env = append(os.Environ(), "AGENTKERNEL_BIN="+bin, "ACP_WORKDIR="+work,
		"AGENTKERNEL_MODEL=openai:gpt-4.1", "OPENAI_BASE_URL="+srv.OpenAIURL(), "OPENAI_API_KEY=sk-acp-test",
		"AGENTKERNEL_DATA_DIR="+data, "AGENTKERNEL_CONFIG="+filepath.Join(tmp, "none.json"),
		"XDG_CACHE_HOME="+filepath.Join(tmp, "cache"), "JUPYTER_RUNTIME_DIR="+filepath.Join(tmp, "runtime"),
		"PYDEVD_DISABLE_FILE_VALIDATION=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client.mjs: %v\n%s", err, out)
	}
	var got struct {
		SessionID       string
		ForkID          string
		Stops           map[string]string
		Chunks          map[string]string
		Permissions     []struct{ Title, Kind string }
		ToolUpdates     []json.RawMessage
		ReplayedPrompts []string
		Listed          []string
		Usage           struct{ InputTokens, OutputTokens int }
		UsageUpdates    []struct {
			Used, Size int
			Cost       struct {
				Amount   float64
				Currency string
			}
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("summary %s: %v", out, err)
	}
	if !strings.Contains(got.Chunks["hello"], "Hello from agentkernel.") {
		t.Errorf("the first prompt streamed %q", got.Chunks["hello"])
	}
	if got.Stops["code"] != "end_turn" || !strings.Contains(got.Chunks["code"], "x is 42.") {
		t.Errorf("the code turn: stop %q, text %q", got.Stops["code"], got.Chunks["code"])
	}
	if len(got.Permissions) != 1 || got.Permissions[0].Kind != "execute" || !strings.Contains(got.Permissions[0].Title, "x = 6*7") {
		t.Errorf("permission requests %+v, want one for the code", got.Permissions)
	}
	if got.Usage.InputTokens != 200 || got.Usage.OutputTokens != 20 {
		t.Errorf("the code turn's usage %+v, want its two requests'", got.Usage)
	}
	// The code ran in the real kernel: its print reached the tool call.
	updates := string(mustJSON(got.ToolUpdates))
	if !strings.Contains(updates, `"42\n"`) || !strings.Contains(updates, `"completed"`) {
		t.Errorf("the tool call's updates lack the kernel's output or its end: %s", updates)
	}
	// usage_update after each model request: the context's fill (the
	// request's 100 tokens in and 10 out) and the session's cost.
	if n := len(got.UsageUpdates); n < 3 || got.UsageUpdates[n-1].Used != 110 || got.UsageUpdates[n-1].Cost.Currency != "USD" ||
		got.UsageUpdates[n-1].Cost.Amount <= 0 || got.UsageUpdates[n-1].Size <= 0 {
		t.Errorf("usage updates %+v", got.UsageUpdates)
	}
	if got.Stops["cancelled"] != "cancelled" {
		t.Errorf("the cancelled prompt answered %q", got.Stops["cancelled"])
	}
	if want := []string{"Say hello", "Set x", "Take your time"}; !slices.Equal(got.ReplayedPrompts, want) {
		t.Errorf("session/load replayed the prompts %q, want %q", got.ReplayedPrompts, want)
	}
	if !slices.Contains(got.Listed, got.SessionID) || got.ForkID == "" || got.ForkID == got.SessionID {
		t.Errorf("listed %q, fork %q of %q", got.Listed, got.ForkID, got.SessionID)
	}
	// The sessions are agentkernel's: stored in its data directory, the
	// fork linked to its parent with the whole history.
	st, err := store.Open(ctx, store.Options{Dir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fork, err := st.GetSession(ctx, got.ForkID)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := st.GetSession(ctx, got.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if fork.ParentID != got.SessionID || fork.MessageCount != orig.MessageCount || orig.Workspace != session.CanonicalWorkspace(work) {
		t.Errorf("fork %+v of %+v", fork, orig)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
