package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestPanelFollowsMagics: an open web panel hears the mode set by
// %agent mode in the notebook.
func TestPanelFollowsMagics(t *testing.T) {
	h := startWith(t, Config{Mode: ModePrompt, DataDir: t.TempDir(), Dir: t.TempDir()})
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
	if rep, _ := h.cell("%agent mode plan"); rep["status"] != "ok" {
		t.Fatalf("mode: %v", rep)
	}
	read(func(f map[string]any) bool { return f["type"] == "settings" && f["mode"] == "plan" })
}
