package redact_test

import (
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/internal/keys"
	"github.com/agentkernel/agentkernel/internal/redact"
)

func TestString(t *testing.T) {
	t.Setenv("SOME_SERVICE_TOKEN", "tok-1234567890")
	sc := redact.New([]string{"my-own-secret-value", "short"}, true)
	for in, gone := range map[string]string{
		"key sk-ant-api03-abcdefghijkl in text":      "sk-ant-api03-abcdefghijkl",
		"Authorization: Bearer abc.def.ghi12345":     "abc.def.ghi12345",
		`{"api_key": "plain-value-here"}`:            "plain-value-here",
		"the secret is my-own-secret-value, keep it": "my-own-secret-value",
		"token from env: tok-1234567890":             "tok-1234567890",
	} {
		out := sc.String(in)
		if strings.Contains(out, gone) || !strings.Contains(out, redact.Redacted) {
			t.Errorf("%q -> %q", in, out)
		}
	}
	if out := sc.String("a short word"); out != "a short word" {
		t.Errorf("short secrets are not scrubbed: %q", out)
	}
}

// TestSavedKeys: a key the user saved in the settings (package keys) is
// scrubbed like one in the environment, whatever its shape.
func TestSavedKeys(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	saved := "proxy-key-without-a-known-shape-0123"
	if err := keys.Default().Set("openai", saved); err != nil {
		t.Fatal(err)
	}
	if out := redact.New(nil, true).String("my key is " + saved); strings.Contains(out, saved) {
		t.Errorf("a saved key was not scrubbed: %q", out)
	}
	if out := redact.New(nil, false).String("my key is " + saved); !strings.Contains(out, saved) {
		t.Errorf("env false scrubbed the saved keys too: %q", out)
	}
}

// BenchmarkString is the cost of scrubbing a finished message of 1,200
// characters with nothing to scrub, the common case.
func BenchmarkString(b *testing.B) {
	sc := redact.New(nil, true)
	s := strings.Repeat("The answer is forty-two, computed in the kernel. ", 25)
	for b.Loop() {
		sc.String(s)
	}
}
