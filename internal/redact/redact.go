// Package redact removes secrets — API keys, tokens, passwords — from text
// that is about to be written somewhere lasting: a cassette, the event log.
//
// A Scrubber replaces the secrets it was given, the values of environment
// variables whose names say they hold one, and anything shaped like a key
// (sk-…, "Authorization: Bearer …", api_key=…) with [REDACTED].
package redact

import (
	"os"
	"regexp"
	"strings"

	"github.com/agentkernel/agentkernel/internal/keys"
)

// Redacted is what a secret is replaced with.
const Redacted = "[REDACTED]"

var (
	// Keys of OpenAI ("sk-…", "sk-proj-…") and Anthropic ("sk-ant-…").
	skPattern = regexp.MustCompile(`sk-[A-Za-z0-9_\-]{8,}`)
	// Header or assignment forms: Authorization: Bearer x, x-api-key: x,
	// "api_key": "x", API_KEY=x, token=x, …
	assignPattern = regexp.MustCompile(`(?i)((?:authorization|proxy-authorization|x-api-key|api[_-]?key|access[_-]?token|auth[_-]?token|secret|password)["']?\s*[:=]\s*["']?)(?:bearer\s+|basic\s+)?[^\s"',;}]+`)
	bearerPattern = regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*`)
)

// Scrubber removes secrets from strings. It is immutable after New and safe
// for concurrent use.
type Scrubber struct {
	secrets []string
}

// New returns a Scrubber for the secrets in extra (strings shorter than 8
// bytes are ignored: they would match too much) and, when env is true, the
// values of the environment variables named *_API_KEY, *_TOKEN, *_SECRET
// and *_PASSWORD and the keys the user saved (package keys) at the time of
// the call.
func New(extra []string, env bool) *Scrubber {
	sc := &Scrubber{}
	add := func(s string) {
		if len(s) >= 8 {
			sc.secrets = append(sc.secrets, s)
		}
	}
	for _, s := range extra {
		add(s)
	}
	if env {
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			uk := strings.ToUpper(k)
			if strings.HasSuffix(uk, "_API_KEY") || strings.HasSuffix(uk, "_TOKEN") ||
				strings.HasSuffix(uk, "_SECRET") || strings.HasSuffix(uk, "_PASSWORD") {
				add(v)
			}
		}
		for _, k := range keys.Default().Values() {
			add(k)
		}
	}
	return sc
}

// String returns s with every secret replaced by Redacted.
func (sc *Scrubber) String(s string) string {
	if s == "" {
		return s
	}
	for _, sec := range sc.secrets {
		s = strings.ReplaceAll(s, sec, Redacted)
	}
	// The patterns are slow on long text: each runs only when the words it
	// needs are there.
	lower := strings.ToLower(s)
	if strings.Contains(lower, "sk-") {
		s = skPattern.ReplaceAllString(s, Redacted)
	}
	if strings.Contains(lower, "bearer") {
		s = bearerPattern.ReplaceAllString(s, "${1}"+Redacted)
	}
	for _, w := range assignWords {
		if strings.Contains(lower, w) {
			return assignPattern.ReplaceAllString(s, "${1}"+Redacted)
		}
	}
	return s
}

// assignWords are what every match of assignPattern contains, lowercased.
var assignWords = []string{"authorization", "api-key", "api_key", "apikey", "token", "secret", "password"}
