package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/internal/redact"
	"github.com/agentkernel/agentkernel/messages"
)

// Version is the cassette format version this package writes and reads.
const Version = 1

// The kinds of cassette lines.
const (
	kindHeader     = "header"
	kindCall       = "call"
	kindToolResult = "tool_result"
	kindApproval   = "approval"
)

// line is one line of a cassette; Kind says which fields are set.
type line struct {
	Kind string `json:"kind"`

	// header
	Version  int        `json:"version,omitempty"`
	Provider string     `json:"provider,omitempty"`
	Model    *modelJSON `json:"model,omitempty"`
	Created  string     `json:"created,omitempty"`

	// call
	Call    int              `json:"call,omitempty"`
	Request *Digest          `json:"request,omitempty"`
	Events  []provider.Event `json:"events,omitempty"`
	Error   *callError       `json:"error,omitempty"`

	// tool_result
	ID   string `json:"id,omitempty"`
	Text string `json:"text,omitempty"`

	// approval
	Ask    string `json:"ask,omitempty"`
	Answer string `json:"answer,omitempty"`
}

// modelJSON is provider.ModelInfo with JSON names.
type modelJSON struct {
	ID            string  `json:"id"`
	ContextWindow int     `json:"contextWindow,omitempty"`
	MaxOutput     int     `json:"maxOutput,omitempty"`
	InputPrice    float64 `json:"inputPrice,omitempty"`
	OutputPrice   float64 `json:"outputPrice,omitempty"`
	CacheRead     float64 `json:"cacheRead,omitempty"`
	CacheWrite    float64 `json:"cacheWrite,omitempty"`
	Vision        bool    `json:"vision,omitempty"`
	WindowGuessed bool    `json:"windowGuessed,omitempty"`
}

func toModelJSON(m provider.ModelInfo) *modelJSON {
	j := modelJSON(m)
	return &j
}

func (m *modelJSON) info() provider.ModelInfo {
	if m == nil {
		return provider.ModelInfo{}
	}
	return provider.ModelInfo(*m)
}

// callError is how a call ended when it did not end with done.
type callError struct {
	// AtStart: Provider.Stream itself failed (e.g. HTTP 429); no events.
	AtStart bool `json:"atStart,omitempty"`
	// Aborted: the stream was closed or its context ended while recording.
	Aborted bool   `json:"aborted,omitempty"`
	Message string `json:"message"`
	// API is set when the error was a *provider.APIError.
	API *apiErrorJSON `json:"api,omitempty"`
}

type apiErrorJSON struct {
	Provider     string `json:"provider"`
	Status       int    `json:"status,omitempty"`
	Type         string `json:"type,omitempty"`
	Message      string `json:"message"`
	Retryable    bool   `json:"retryable,omitempty"`
	RetryAfterMs int64  `json:"retryAfterMs,omitempty"`
}

// Digest identifies a model request well enough to notice that a replayed
// conversation went another way than the recorded one.
type Digest struct {
	// Messages is the number of API messages sent (informative; not
	// compared).
	Messages int `json:"messages"`
	// Last is the text of the last user message (its text blocks and the
	// text of its tool results), scrubbed and cut to 2000 characters.
	Last string `json:"last"`
	// LastSHA256 is the hex SHA-256 of the whole scrubbed text. Compared.
	LastSHA256 string `json:"lastSHA256"`
	// Tools are the names of the tools offered, in order. Compared.
	Tools []string `json:"tools,omitempty"`
}

const excerptLen = 2000

// digest computes the digest of req, scrubbed with sc.
func digest(req provider.Request, sc *scrubber) Digest {
	d := Digest{Messages: len(req.Messages)}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == messages.RoleUser {
			d.Last = sc.scrub(req.Messages[i].PlainText())
			break
		}
	}
	sum := sha256.Sum256([]byte(d.Last))
	d.LastSHA256 = hex.EncodeToString(sum[:])
	d.Last = excerpt(d.Last, excerptLen)
	for _, t := range req.Tools {
		d.Tools = append(d.Tools, t.Name)
	}
	return d
}

// excerpt cuts s to at most n runes, marking the cut.
func excerpt(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// scrubber removes secrets from recorded text.
type scrubber struct {
	r *redact.Scrubber
}

// newScrubber scrubs extra secrets and, unless noEnv, the values of
// environment variables that name a key, token, secret or password.
func newScrubber(extra []string, noEnv bool) *scrubber {
	return &scrubber{r: redact.New(extra, !noEnv)}
}

func (sc *scrubber) scrub(s string) string { return sc.r.String(s) }

// event returns a scrubbed copy of ev.
func (sc *scrubber) event(ev provider.Event) provider.Event {
	ev.Text = sc.scrub(ev.Text)
	if ev.ToolCall != nil {
		tc := *ev.ToolCall
		in := sc.scrub(string(tc.Input))
		if !json.Valid([]byte(in)) {
			in = `{"redacted":true}`
		}
		tc.Input = json.RawMessage(in)
		ev.ToolCall = &tc
	}
	if ev.Usage != nil {
		u := *ev.Usage
		ev.Usage = &u
	}
	return ev
}

// errorJSON records err.
func (sc *scrubber) errorJSON(err error, atStart, aborted bool) *callError {
	ce := &callError{AtStart: atStart, Aborted: aborted, Message: sc.scrub(err.Error())}
	if ae, ok := provider.AsAPIError(err); ok {
		ce.API = &apiErrorJSON{
			Provider: ae.Provider, Status: ae.Status, Type: ae.Type, Message: sc.scrub(ae.Message),
			Retryable: ae.Retryable, RetryAfterMs: ae.RetryAfter.Milliseconds(),
		}
	}
	return ce
}

// err rebuilds the recorded error.
func (ce *callError) err(call int) error {
	if ce.Aborted {
		return fmt.Errorf("replay: call %d was cut short when it was recorded (%s): %w", call, ce.Message, context.Canceled)
	}
	if a := ce.API; a != nil {
		return &provider.APIError{Provider: a.Provider, Status: a.Status, Type: a.Type, Message: a.Message,
			Retryable: a.Retryable, RetryAfter: time.Duration(a.RetryAfterMs) * time.Millisecond}
	}
	return errors.New(ce.Message)
}
