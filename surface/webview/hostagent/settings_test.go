package hostagent_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/internal/keys"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/surface/webview"
	"github.com/agentkernel/agentkernel/surface/webview/hostagent"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestSettingsView: the panel's settings view over a real host and the
// panel's WebSocket: getSettings lists the models and the providers;
// setKey saves a key (the file is 0600), answered with a mask, and the
// next prompt uses it; setBaseURL saves a base URL beside it, shown as it
// is, and the next prompt goes to that server; setEffort sets the effort;
// bad input gets an error frame. No frame the panel sends back holds the
// key.
func TestSettingsView(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := scripted.New(t)
	st, err := store.Open(ctx, store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	kf := &keys.File{Path: filepath.Join(t.TempDir(), "agentkernel", keys.FileName)}
	h := session.New(session.Config{Store: st, Runner: &surfacetest.Runner{}, Workspace: t.TempDir(), Kind: "test",
		Model: "openai:m", Keys: kf, Models: []string{"openai:m", "anthropic:claude-sonnet-4-5"},
		OpenModel: func(spec string) (provider.Provider, error) {
			key, err := kf.Lookup("OPENAI_API_KEY")
			if err != nil {
				return nil, err
			}
			base, err := kf.Lookup("OPENAI_BASE_URL")
			if err != nil {
				return nil, err
			}
			if base == "" {
				base = srv.OpenAIURL()
			}
			_, name, _ := strings.Cut(spec, ":")
			return openai.New(openai.Config{APIKey: key, BaseURL: base, Model: name})
		}})
	defer h.Close()
	panel, err := webview.Start(hostagent.New(h), webview.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer panel.Close()
	url := "ws" + strings.TrimPrefix(strings.Replace(panel.URL(), "/?", "/ws?", 1), "http")
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(64 << 20)

	const key = "sk-panel-secret-0123456789abcd"
	var received []string // every message of the panel's
	send := func(f map[string]any) {
		t.Helper()
		f["v"] = webview.ProtocolVersion
		b, _ := json.Marshal(f)
		if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	// until reads frames until one of type typ with id, and returns it.
	until := func(typ, id string) map[string]any {
		t.Helper()
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				t.Fatalf("no %s frame (%s): %v", typ, id, err)
			}
			received = append(received, string(b))
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

	send(map[string]any{"type": "getSettings", "id": "g1"})
	f := until("modelSettings", "g1")
	if f["model"] != "openai:m" || len(f["models"].([]any)) != 2 || f["keysFile"] != kf.Path {
		t.Errorf("settings %v", f)
	}
	providers := f["providers"].([]any)
	if p := providers[0].(map[string]any); p["name"] != "openai" || p["env"] != "OPENAI_API_KEY" || p["source"] != "" {
		t.Errorf("openai before a key: %v", p)
	}

	send(map[string]any{"type": "setKey", "id": "k1", "provider": "openai", "key": key})
	f = until("modelSettings", "k1")
	if p := f["providers"].([]any)[0].(map[string]any); p["source"] != "file" || p["mask"] != "set, ends in abcd" {
		t.Errorf("openai after its key: %v", p)
	}
	if got, err := kf.Lookup("OPENAI_API_KEY"); err != nil || got != key {
		t.Errorf("saved %q %v", got, err)
	}
	srv.Enqueue(scripted.Reply(scripted.Text("Keyed.")))
	send(map[string]any{"type": "newTask", "id": "p1", "text": "hello"})
	until("ack", "p1")
	for i := 0; ; i++ {
		if n := len(srv.Requests()); n > 0 {
			if got := srv.Requests()[0].Header.Get("Authorization"); got != "Bearer "+key {
				t.Errorf("the prompt's request carried %q", got)
			}
			break
		}
		if i > 500 {
			t.Fatal("the prompt never reached the model")
		}
		time.Sleep(10 * time.Millisecond)
	}

	local := scripted.New(t) // a local OpenAI-compatible server
	send(map[string]any{"type": "setBaseURL", "id": "u1", "provider": "openai", "url": local.OpenAIURL()})
	f = until("modelSettings", "u1")
	if p := f["providers"].([]any)[0].(map[string]any); p["url"] != local.OpenAIURL() || p["urlSource"] != "file" || p["urlEnv"] != "OPENAI_BASE_URL" {
		t.Errorf("openai after its base URL: %v", p)
	}
	local.Enqueue(scripted.Reply(scripted.Text("Local.")))
	send(map[string]any{"type": "newTask", "id": "p2", "text": "hello, local"})
	until("ack", "p2")
	for i := 0; len(local.Requests()) == 0; i++ {
		if i > 500 {
			t.Fatal("the prompt never reached the server at the saved base URL")
		}
		time.Sleep(10 * time.Millisecond)
	}

	send(map[string]any{"type": "setEffort", "id": "e1", "effort": "high"})
	if f = until("modelSettings", "e1"); f["effort"] != "high" {
		t.Errorf("effort %v", f["effort"])
	}
	for _, bad := range []struct {
		frame map[string]any
		want  string
	}{
		{map[string]any{"type": "setKey", "id": "b1", "provider": "openai", "key": "sk-with space-0123456789"}, "space"},
		{map[string]any{"type": "setKey", "id": "b2", "provider": "ollama", "key": key}, "unknown provider"},
		{map[string]any{"type": "setKey", "id": "b3", "key": key}, "needs a provider"},
		{map[string]any{"type": "setKey", "id": "b4", "provider": "openai", "key": strings.Repeat("k", 5000)}, "longer than"},
		{map[string]any{"type": "setEffort", "id": "b5", "effort": "extreme"}, "unknown effort"},
		{map[string]any{"type": "setBaseURL", "id": "b6", "provider": "openai", "url": "http://me:panel-secret@host/v1"}, "user name or password"},
		{map[string]any{"type": "setBaseURL", "id": "b7", "url": "http://host/v1"}, "needs a provider"},
	} {
		send(bad.frame)
		id, _ := bad.frame["id"].(string)
		if f := until("error", id); !strings.Contains(f["text"].(string), bad.want) {
			t.Errorf("%v: %v", bad.frame, f)
		}
	}
	send(map[string]any{"type": "getSettings", "id": "g2"})
	until("modelSettings", "g2")
	for _, m := range received {
		if strings.Contains(m, "panel-secret") {
			t.Fatalf("a frame back holds the key: %s", m)
		}
	}
}
