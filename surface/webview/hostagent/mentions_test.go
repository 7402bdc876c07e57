package hostagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/surface/webview"
	"github.com/agentkernel/agentkernel/surface/webview/hostagent"
)

// TestCompleteMentionFrame: the prompt box's completion list over a real
// host, a real kernel and the panel's WebSocket: after the user made df,
// completeMention with the prefix "d" is answered, to that client, with a
// mentionCompletions frame offering df (its type and shape beside it)
// before the workspace's files; a name the kernel holds that no mention
// can spell is not offered; a prefix too long gets an error frame.
func TestCompleteMentionFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kernel")
	}
	if _, err := client.FindSpec("python3"); err != nil {
		t.Skipf("no python3 kernelspec: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "data.csv"), []byte("a,b\n1,2\n"), 0o644)
	r := backing.NewLocal(backing.LocalOptions{Kernel: "python3", Dir: ws})
	defer r.Close()
	h := session.New(session.Config{Store: st, Runner: r, Workspace: ws, Kind: "prompt"})
	defer h.Close()
	code := "class Frame:\n    columns = ['city']\n    dtypes = ['object']\n    shape = (3, 1)\n" +
		"df = Frame()\nglobals()['d<img src=x onerror=alert(1)>'] = 1"
	if res, err := h.CodeLog().RunCell(ctx, backing.Exec{Code: code}); err != nil || res.Status != "ok" {
		t.Fatalf("setup cell: %v %+v", err, res)
	}
	panel, err := webview.Start(hostagent.New(h), webview.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer panel.Close()
	url := "ws" + strings.TrimPrefix(strings.Replace(panel.URL(), "/?", "/ws?", 1), "http")
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 20)
	send := func(f map[string]any) {
		t.Helper()
		f["v"] = webview.ProtocolVersion
		b, _ := json.Marshal(f)
		if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	until := func(typ, id string) map[string]any {
		t.Helper()
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("no %s frame (%s): %v", typ, id, err)
			}
			var frames []map[string]any
			if b[0] == '[' {
				_ = json.Unmarshal(b, &frames)
			} else {
				var f map[string]any
				_ = json.Unmarshal(b, &f)
				frames = append(frames, f)
			}
			for _, f := range frames {
				if f["type"] == typ && (id == "" || f["id"] == id) {
					return f
				}
			}
		}
	}
	until("state", "")

	// The namespace is read within a second: a kernel slow to answer (a
	// loaded machine) offers no variables that time, and the next key
	// typed asks again.
	var f map[string]any
	var got []string
	for i := range 20 {
		id := fmt.Sprintf("m%d", i)
		send(map[string]any{"type": "completeMention", "id": id, "prefix": "d"})
		f = until("mentionCompletions", id)
		got = got[:0]
		for _, c := range f["completions"].([]any) {
			c := c.(map[string]any)
			got = append(got, c["kind"].(string)+":"+c["mention"].(string)+"="+c["detail"].(string))
		}
		if len(got) > 1 {
			break
		}
	}
	if want := "variable:df=Frame (3, 1) file:data.csv=8 B"; strings.Join(got, " ") != want || f["prefix"] != "d" {
		t.Errorf("completeMention d: %q, want %q (%v)", strings.Join(got, " "), want, f)
	}

	send(map[string]any{"type": "completeMention", "id": "m2", "prefix": strings.Repeat("d", 300)})
	if f := until("error", "m2"); !strings.Contains(f["text"].(string), "prefix is longer than") {
		t.Errorf("a long prefix: %v", f)
	}
}
