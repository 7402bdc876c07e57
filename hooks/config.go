package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Event names when a hook runs, as in Claude Code.
type Event string

// The events.
const (
	// SessionStart: before a session's first turn in this process; Source
	// is "startup" (a new session) or "resume". It cannot block.
	SessionStart Event = "SessionStart"
	// UserPromptSubmit: before a prompt goes to the model. A block drops
	// the prompt and shows the reason to the user.
	UserPromptSubmit Event = "UserPromptSubmit"
	// PreToolUse: before a tool call is decided and run. A block stops the
	// call and gives the reason to the model as the tool result.
	PreToolUse Event = "PreToolUse"
	// PostToolUse: after a tool call ran. A block gives the reason to the
	// model with the result.
	PostToolUse Event = "PostToolUse"
	// Stop: when the model ends its turn. A block makes it go on, with the
	// reason as what it is told.
	Stop Event = "Stop"
)

// Events lists the events, in the order of a turn.
var Events = []Event{SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop}

func (e Event) known() bool {
	for _, k := range Events {
		if e == k {
			return true
		}
	}
	return false
}

// Config is the "hooks" object of a settings file, in Claude Code's shape:
//
//	{"PreToolUse": [{"matcher": "execute_code|write_file",
//	                 "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]}]}
//
// Decoding it checks it: known events, "command" hooks with a command, a
// timeout that is not negative, and matchers that compile.
type Config map[Event][]Matcher

// Matcher selects the hooks of one event that run for a tool (PreToolUse,
// PostToolUse) or a session start's source (SessionStart). Pattern is a
// regular expression that must match the whole name; "" and "*" match
// everything. Other events ignore it.
type Matcher struct {
	Pattern string    `json:"matcher,omitempty"`
	Hooks   []Command `json:"hooks"`

	re *regexp.Regexp // nil: matches everything
}

// Command is one hook: a shell command line run with sh -c.
type Command struct {
	Type    string `json:"type"` // "command"
	Command string `json:"command"`
	// Timeout in seconds; 0 is the runner's default (60 s).
	Timeout float64 `json:"timeout,omitempty"`
}

// UnmarshalJSON decodes and checks a hooks object.
func (c *Config) UnmarshalJSON(b []byte) error {
	var raw map[Event][]Matcher
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("hooks: %w", err)
	}
	for ev, ms := range raw {
		if !ev.known() {
			return fmt.Errorf("hooks: unknown event %q (want one of %s)", ev, eventList())
		}
		for i := range ms {
			if err := ms[i].compile(); err != nil {
				return fmt.Errorf("hooks: %s[%d]: %w", ev, i, err)
			}
		}
	}
	*c = raw
	return nil
}

func eventList() string {
	s := make([]string, len(Events))
	for i, e := range Events {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}

func (m *Matcher) compile() error {
	if len(m.Hooks) == 0 {
		return errors.New(`no "hooks" given`)
	}
	for j, h := range m.Hooks {
		switch {
		case h.Type != "command":
			return fmt.Errorf("hooks[%d]: type %q: only \"command\" hooks are supported", j, h.Type)
		case strings.TrimSpace(h.Command) == "":
			return fmt.Errorf("hooks[%d]: empty command", j)
		case h.Timeout < 0:
			return fmt.Errorf("hooks[%d]: negative timeout", j)
		}
	}
	m.re = nil
	if p := m.Pattern; p != "" && p != "*" {
		re, err := regexp.Compile(`^(?:` + p + `)$`)
		if err != nil {
			return fmt.Errorf("matcher %q: %w", p, err)
		}
		m.re = re
	}
	return nil
}

// matches reports whether m selects name.
func (m *Matcher) matches(name string) bool { return m.re == nil || m.re.MatchString(name) }

// settingsFile is the shape of .agentkernel/settings.json. Keys other
// than "hooks" are left for other settings.
type settingsFile struct {
	Hooks Config `json:"hooks"`
}

// ParseSettings decodes a settings file ({"hooks": {...}}) and returns its
// hooks.
func ParseSettings(b []byte) (Config, error) {
	var s settingsFile
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return s.Hooks, nil
}
