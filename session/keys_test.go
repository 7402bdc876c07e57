package session

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/internal/keys"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestSetKeyTakesEffect: a host started without a key (its model cannot be
// opened: a prompt says no model is there) gets one through SetKey, and the
// next prompt and the next completion use it without a restart; a new key
// replaces the old one at the next request. What a settings view is shown
// holds masks, never the key, and the settings event goes out.
func TestSetKeyTakesEffect(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	srv := scripted.New(t)
	kf := &keys.File{Path: filepath.Join(t.TempDir(), keys.FileName)}
	open := func(spec string) (provider.Provider, error) {
		key, err := kf.Lookup("OPENAI_API_KEY")
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, errors.New("needs OPENAI_API_KEY")
		}
		_, name, _ := strings.Cut(spec, ":")
		return openai.New(openai.Config{APIKey: key, BaseURL: srv.OpenAIURL(), Model: name})
	}
	h := newHost(t, Config{Store: openStore(t), Model: "openai:m", OpenModel: open, Keys: kf,
		Models: []string{"openai:m", "openai:gpt-4.1"}})
	ctx := context.Background()
	var settings int
	defer h.Subscribe(func(e agent.Event) {
		if e.Kind == EventSettingsChanged {
			settings++
		}
	})()

	if _, err := h.Submit(ctx, "hello", Follow{}); err == nil {
		t.Fatal("a prompt without a key worked")
	}
	if _, err := h.Models().Complete(ctx, agent.CompletionRequest{Prefix: "x = "}); err == nil {
		t.Fatal("a completion without a key worked")
	}

	const first, second = "sk-first-key-0123456789abcd", "sk-second-key-0123456789wxyz"
	if err := h.Models().SetKey(ctx, "openai", first); err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(scripted.Reply(scripted.Text("Hello with a key.")))
	res, err := h.Submit(ctx, "hello again", Follow{})
	if err != nil || !strings.Contains(res.Text, "Hello with a key.") {
		t.Fatalf("after SetKey: %+v %v", res, err)
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "Bearer "+first {
		t.Errorf("the request carried %q", got)
	}
	srv.Enqueue(scripted.Reply(scripted.Text("1")))
	if text, err := h.Models().Complete(ctx, agent.CompletionRequest{Prefix: "x = "}); err != nil || text != "1" {
		t.Errorf("completion after SetKey: %q %v", text, err)
	}

	if err := h.Models().SetKey(ctx, "openai", " "+second+"\n"); err != nil { // pasted with blanks around it
		t.Fatal(err)
	}
	srv.Enqueue(scripted.Reply(scripted.Text("Rotated.")))
	if _, err := h.Submit(ctx, "once more", Follow{}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if got := reqs[len(reqs)-1].Header.Get("Authorization"); got != "Bearer "+second {
		t.Errorf("after a new key the request carried %q", got)
	}
	if settings < 2 {
		t.Errorf("%d settings events for two saved keys", settings)
	}

	ms := h.Models().Settings()
	b, _ := json.Marshal(ms)
	if strings.Contains(string(b), "second-key") || strings.Contains(string(b), "first-key") {
		t.Fatalf("the settings hold a key: %s", b)
	}
	if len(ms.Keys) == 0 || ms.Keys[0].Source != keys.SourceFile || ms.Keys[0].Mask != "set, ends in wxyz" || ms.KeysFile != kf.Path {
		t.Errorf("settings %+v", ms)
	}
	for _, m := range h.Conversation().UI() {
		if strings.Contains(m.Text, "-key-") {
			t.Errorf("a key in the history: %q", m.Text)
		}
	}

	if err := h.Models().SetKey(ctx, "openai", "two words"); err == nil || strings.Contains(err.Error(), "two words") {
		t.Errorf("a broken key: %v", err)
	}
	if err := newHost(t, Config{Store: openStore(t)}).Models().SetKey(ctx, "openai", first); err == nil {
		t.Error("a host without a keys file saved a key")
	}
}
