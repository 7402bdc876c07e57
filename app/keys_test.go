package app

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/models"
	"github.com/agentkernel/agentkernel/internal/keys"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestOpenModelKeys: a model is opened with the key the user saved when the
// environment has none, and with the environment's when it has one (the
// environment wins); a missing key's error says where to give one, and a
// keys file others can read is not used and says so.
func TestOpenModelKeys(t *testing.T) {
	srv := scripted.New(t)
	kf := &keys.File{Path: filepath.Join(t.TempDir(), keys.FileName)}
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")

	_, err := openModel("openai:gpt-4.1", kf, models.Options{})
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") || !strings.Contains(err.Error(), "Agent sidebar's settings") {
		t.Fatalf("no key: %v", err)
	}

	if err := kf.Set("anthropic", "sk-ant-saved-0123456789"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ANTHROPIC_BASE_URL", srv.AnthropicURL())
	p, err := openModel("anthropic:claude-sonnet-4-5", kf, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ask(t, srv, p)
	if got := srv.Requests()[0].Header.Get("X-Api-Key"); got != "sk-ant-saved-0123456789" {
		t.Errorf("saved key: the request carried %q", got)
	}

	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env-0123456789")
	if p, err = openModel("anthropic:claude-sonnet-4-5", kf, models.Options{}); err != nil {
		t.Fatal(err)
	}
	ask(t, srv, p)
	reqs := srv.Requests()
	if got := reqs[len(reqs)-1].Header.Get("X-Api-Key"); got != "sk-ant-from-env-0123456789" {
		t.Errorf("the environment did not win: %q", got)
	}

	t.Setenv("ANTHROPIC_API_KEY", "")
	if err := os.Chmod(kf.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ANTHROPIC_BASE_URL", "")
	if _, err := openModel("anthropic:claude-sonnet-4-5", kf, models.Options{}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("an exposed keys file: %v", err)
	}
}

// TestOpenModelBaseURLs: a base URL saved in the settings (an
// OpenAI-compatible server's, Anthropic's, an Ollama host) is where the
// provider sends its requests, with no variable set: a local server
// needs no key; the environment's URL wins over the saved one.
func TestOpenModelBaseURLs(t *testing.T) {
	for _, v := range []string{"OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "OLLAMA_HOST"} {
		t.Setenv(v, "")
	}
	saved, other := scripted.New(t), scripted.New(t)
	kf := &keys.File{Path: filepath.Join(t.TempDir(), keys.FileName)}
	for _, tt := range []struct{ provider, url, spec string }{
		{"openai", saved.OpenAIURL(), "openai:qwen2.5-coder-7b"}, // vLLM, llama.cpp, LM Studio: no key
		{"ollama", saved.URL(), "ollama:qwen2.5-coder"},
		{"anthropic", saved.AnthropicURL(), "anthropic:claude-sonnet-4-5"}, // a proxy
	} {
		if err := kf.SetURL(tt.provider, tt.url); err != nil {
			t.Fatal(err)
		}
		p, err := openModel(tt.spec, kf, models.Options{})
		if err != nil {
			t.Fatalf("%s with a saved base URL: %v", tt.spec, err)
		}
		n := len(saved.Requests())
		ask(t, saved, p)
		if len(saved.Requests()) != n+1 {
			t.Errorf("%s: the request did not reach the saved base URL", tt.spec)
		}
	}
	t.Setenv("OPENAI_BASE_URL", other.OpenAIURL())
	p, err := openModel("openai:qwen2.5-coder-7b", kf, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ask(t, other, p)
	if len(other.Requests()) != 1 {
		t.Error("the environment's base URL did not win over the saved one")
	}
}

// TestModelChoices: the picker offers the configured models first, each
// once and with its provider, then the tables' models.
func TestModelChoices(t *testing.T) {
	t.Setenv(EnvCompletionModel, "")
	c := Config{Model: "anthropic:claude-sonnet-4-5", File: File{Model: "claude-sonnet-4-5", CompletionModel: "openai:gpt-4.1-mini",
		Models: map[string]ModelEntry{"gpt-4.1": {}, "llava:13b": {}}}}
	got := c.modelChoices()
	if len(got) < 3 || got[0] != "anthropic:claude-sonnet-4-5" || got[1] != "openai:gpt-4.1-mini" || got[2] != "openai:gpt-4.1" {
		t.Errorf("choices %v", got)
	}
	for _, want := range []string{"openai:o3", "anthropic:claude-haiku-4-5"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s is not offered: %v", want, got)
		}
	}
	if slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "llava") }) {
		t.Errorf("a model of no known provider is offered: %v", got)
	}
}

// ask makes one request of p, answered by srv, and reads it to its end.
func ask(t *testing.T, srv *scripted.Server, p provider.Provider) {
	t.Helper()
	srv.Enqueue(scripted.Reply(scripted.Text("ok")))
	s, err := p.Stream(context.Background(), provider.Request{MaxTokens: 10, Messages: []messages.APIMessage{{Role: messages.RoleUser,
		Content: []messages.ContentBlock{{Type: messages.BlockText, Text: "hi"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for {
		if _, err := s.Next(); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatal(err)
		}
	}
}
