package bridge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent"
)

// runMagic runs the %agent subcommand sub with args as a cell would,
// without the cell: what it prints, or why it failed.
func (b *Bridge) runMagic(ctx context.Context, sub string, args []string) (string, error) {
	m, ok := lookupMagic(sub)
	if !ok {
		panic("no magic " + sub)
	}
	return m.run(b, ctx, magicCall{name: sub, args: args})
}

// TestModeTakesAgentModesOnly: %agent mode given a permission mode's name
// is an error that says where permission modes are set, and changes
// nothing; an agent mode of that name is the agent mode.
func TestModeTakesAgentModesOnly(t *testing.T) {
	dir := t.TempDir()
	h := startWith(t, testConfig{Dir: dir})
	rep, _ := h.cell("%agent mode plan")
	if e := fmt.Sprint(rep["evalue"]); rep["status"] != "error" || !strings.Contains(e, "plan is not an agent mode") ||
		!strings.Contains(e, "%agent permissions plan") {
		t.Fatalf("%%agent mode plan: %v", rep)
	}
	if pm := h.b.host.Modes().Permission(); pm != agent.PermissionDefault {
		t.Errorf("permission mode %s after the refused %%agent mode plan", pm)
	}
	if rep, out := h.cell("%agent permissions plan"); rep["status"] != "ok" || !strings.Contains(stdout(out), "Permission mode: plan") {
		t.Fatalf("%%agent permissions plan: %v %q", rep, stdout(out))
	}
	if err := os.MkdirAll(filepath.Join(dir, ".agentkernel", "modes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".agentkernel", "modes", "plan.md"), []byte("---\ndescription: plan the work first\n---\nPlan before you act.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, out := h.cell("%agent mode plan"); rep["status"] != "ok" || !strings.Contains(stdout(out), "Mode: plan") {
		t.Fatalf("%%agent mode plan with an agent mode plan: %v %q", rep, stdout(out))
	}
	if a := h.b.host.Modes().Agent().Name; a != "plan" {
		t.Errorf("agent mode %s, want plan", a)
	}
}
