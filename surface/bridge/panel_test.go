package bridge

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/session"
)

// TestPanelFollowsMagics: an open web panel hears the mode set by
// %agent mode in the notebook; the event log tells the notebook's command
// from the panel's.
func TestPanelFollowsMagics(t *testing.T) {
	elog := eventlog.New(eventlog.Options{Dir: filepath.Join(t.TempDir(), "logs")})
	t.Cleanup(func() { elog.Close() })
	dir := t.TempDir()
	h := startWith(t, testConfig{Dir: dir, Host: session.Config{DataDir: t.TempDir(), EventLog: elog}, Config: Config{Cells: PromptCells}})
	rep, _ := h.cell("%agent webview")
	if rep["status"] != "ok" {
		t.Fatalf("webview: %v", rep)
	}
	p := h.b.currentPanel()
	if p == nil {
		t.Fatal("no panel after %agent webview")
	}
	url := "ws" + strings.TrimPrefix(strings.Replace(p.srv.URL(), "/?", "/ws?", 1), "http")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	read := func(want func(map[string]any) bool) {
		t.Helper()
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var frames []map[string]any
			if len(data) > 0 && data[0] == '[' {
				json.Unmarshal(data, &frames)
			} else {
				var f map[string]any
				json.Unmarshal(data, &f)
				frames = append(frames, f)
			}
			for _, f := range frames {
				if want(f) {
					return
				}
			}
		}
	}
	read(func(f map[string]any) bool { return f["type"] == "state" })
	if rep, _ := h.cell("%agent permissions plan"); rep["status"] != "ok" {
		t.Fatalf("permissions: %v", rep)
	}
	read(func(f map[string]any) bool { return f["type"] == "settings" && f["permissionMode"] == "plan" })
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"type":"setPermissionMode","permissionMode":"acceptEdits"}`)); err != nil {
		t.Fatal(err)
	}
	read(func(f map[string]any) bool { return f["type"] == "settings" && f["permissionMode"] == "acceptEdits" })
	// An agent mode named like a permission mode is the agent mode, from
	// the panel's select and from the magic alike.
	if err := os.MkdirAll(filepath.Join(dir, ".agentkernel", "modes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".agentkernel", "modes", "plan.md"), []byte("---\ndescription: plan the work first\n---\nPlan before you act.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"type":"setAgentMode","agentMode":"plan"}`)); err != nil {
		t.Fatal(err)
	}
	read(func(f map[string]any) bool {
		return f["type"] == "settings" && f["agentMode"] == "plan" && f["permissionMode"] == "acceptEdits"
	})
	if rep, out := h.cell("%agent permissions default"); rep["status"] != "ok" || !strings.Contains(stdout(out), "Permission mode: default") {
		t.Fatalf("permissions: %v %q", rep, stdout(out))
	}
	read(func(f map[string]any) bool {
		return f["type"] == "settings" && f["permissionMode"] == "default" && f["agentMode"] == "plan"
	})
	// An attached image that is not what its URL says is refused, naming
	// it; nothing is submitted and the panel goes on.
	bad := `{"type":"newTask","id":"img","text":"look","images":["data:image/png;base64,R0lGODlhAQABAAAAACw="]}`
	if err := ws.Write(ctx, websocket.MessageText, []byte(bad)); err != nil {
		t.Fatal(err)
	}
	read(func(f map[string]any) bool {
		if f["type"] != "error" {
			return false
		}
		if f["id"] != "img" || f["code"] != "failed" || !strings.Contains(f["text"].(string), "image 1") || !strings.Contains(f["text"].(string), "not a PNG") {
			t.Fatalf("bad image: %v", f)
		}
		return true
	})
	if ui := h.b.host.Conversation().UI(); len(ui) != 0 {
		t.Fatalf("a refused prompt reached the history: %+v", ui)
	}

	elog.Flush()
	files, err := eventlog.Files(elog.Dir())
	if err != nil || len(files) != 1 {
		t.Fatalf("log files %v %v", files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var modes []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e eventlog.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.Event == eventlog.EventCommand && (e.Kind == "permission_mode" || e.Kind == "agent_mode") {
			modes = append(modes, e.Kind+"/"+string(e.Source)+":"+e.Text)
		}
	}
	if got := strings.Join(modes, " "); got != "permission_mode/notebook:plan permission_mode/panel:acceptEdits agent_mode/panel:plan permission_mode/notebook:default" {
		t.Errorf("mode commands in the log: %s", got)
	}
}
