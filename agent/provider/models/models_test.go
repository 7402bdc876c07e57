package models

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent/provider"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParse(t *testing.T) {
	for _, tc := range []struct{ in, name, model, err string }{
		{"openai:gpt-4.1", "openai", "gpt-4.1", ""},
		{"Anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5", ""},
		{"ollama:qwen2.5-coder:7b", "ollama", "qwen2.5-coder:7b", ""},
		{"replay:/tmp/run.cassette", "replay", "/tmp/run.cassette", ""},
		{"gpt-4.1", "openai", "gpt-4.1", ""},
		{"claude-opus-9", "anthropic", "claude-opus-9", ""},
		{"mystery", "", "", "PROVIDER:MODEL"},
		{"", "", "", "no model configured"},
	} {
		n, m, err := Parse(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || n != tc.name || m != tc.model {
			t.Errorf("Parse(%q) = %q, %q, %v", tc.in, n, m, err)
		}
	}
	if _, _, err := Parse(""); !errors.Is(err, provider.ErrNotConfigured) {
		t.Errorf("empty: %v", err)
	}
}

func TestOpen(t *testing.T) {
	p, err := Open("openai:gpt-4.1", Options{Getenv: env(map[string]string{"OPENAI_API_KEY": "sk-test"})})
	if err != nil || p.Name() != "openai" || p.Model().ID != "gpt-4.1" || p.Model().InputPrice == 0 {
		t.Fatalf("openai: %v %+v", err, p)
	}
	p, err = Open("ollama:qwen2.5-coder", Options{Getenv: env(map[string]string{"OLLAMA_HOST": "127.0.0.1:11434"})})
	if err != nil || p.Name() != "ollama" || p.Model().InputPrice != 0 {
		t.Fatalf("ollama: %v", err)
	}
	p, err = Open("anthropic:claude-sonnet-4-5", Options{Getenv: env(map[string]string{"ANTHROPIC_API_KEY": "k"}),
		Prices: map[string]provider.ModelInfo{"claude-sonnet-4-5": {ID: "claude-sonnet-4-5", InputPrice: 42}}})
	if err != nil || p.Model().InputPrice != 42 {
		t.Fatalf("anthropic with price override: %v %+v", err, p.Model())
	}
	if _, err := Open("openai:gpt-4.1", Options{Getenv: env(nil)}); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("missing key: %v", err)
	}
	if _, err := Open("replay:/no/such/cassette", Options{}); err == nil {
		t.Fatal("missing cassette accepted")
	}
	if _, err := Open("acme:x", Options{}); err == nil || !strings.Contains(err.Error(), "unknown provider") {
		t.Fatalf("unknown provider: %v", err)
	}
}

func TestResolve(t *testing.T) {
	if got := Resolve("", "anthropic:x", "openai:y"); got != "anthropic:x" {
		t.Fatal(got)
	}
	if got := Resolve("ollama:z", "anthropic:x", "openai:y"); got != "ollama:z" {
		t.Fatal(got)
	}
	if got := Resolve(" ", "", ""); got != "" {
		t.Fatal(got)
	}
}
