package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/anthropic"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/checkpoint"
	"github.com/agentkernel/agentkernel/eventlog"
	"github.com/agentkernel/agentkernel/hooks"
	"github.com/agentkernel/agentkernel/internal/home"
	"github.com/agentkernel/agentkernel/rules"
	"github.com/agentkernel/agentkernel/store"
)

// File is the config file, $XDG_CONFIG_HOME/agentkernel/config.json (or
// $AGENTKERNEL_CONFIG). Every field is optional; the environment and flags
// override it.
type File struct {
	Model   string `json:"model"`   // e.g. "anthropic:claude-sonnet-4-5"
	Approve string `json:"approve"` // none | read-only | all (headless asks)
	Mode    string `json:"mode"`    // default | acceptEdits | bypassPermissions | plan
	Effort  string `json:"effort"`  // low | medium | high | off: thinking budget / reasoning_effort
	// CompletionModel is the model of inline completions in JupyterLab
	// (default: the session's model).
	CompletionModel string `json:"completionModel"`
	// Modes are the user's agent modes, by name (besides code, ask,
	// architect and debug): description, instructions, tools,
	// permissionMode.
	Modes map[string]rules.Mode `json:"modes"`
	// WebFetch turns the web_fetch tool on for the sites it allows:
	// {"allow": ["docs.python.org", "*.readthedocs.io"], "maxBytes": 200000}.
	WebFetch *agent.WebFetch `json:"webFetch"`
	Allow    []string        `json:"allow"` // permission rules, e.g. "execute_code(pip install *)"
	Deny     []string        `json:"deny"`
	// Store selects the session store: a postgres:// URL, or "" for the
	// SQLite file in the data directory. $AGENTKERNEL_STORE and --store
	// override it.
	Store string `json:"store"`
	// Hooks are the user's hooks, in Claude Code's shape (package hooks).
	Hooks hooks.Config `json:"hooks"`
	// LogRetentionDays is how many days of the event log are kept
	// (default 30); 0 turns the log off.
	LogRetentionDays *int `json:"logRetentionDays"`
	// Prices override the price table (USD per million tokens), by model id.
	// Models describe models by id: whether they take images, their
	// context window and prices (USD per million tokens). An entry is laid
	// over what the built-in tables know of the model; a field left out
	// keeps the table's value.
	Models map[string]ModelEntry `json:"models"`
	// Prices is the older form of Models (an entry replaces the table's
	// whole); still read. Models wins for an id in both.
	Prices map[string]ModelEntry `json:"prices"`
	// MCPServers are the user's MCP servers, in .mcp.json's format (the
	// workspace's .mcp.json wins for a name in both); read by package mcp.
	MCPServers json.RawMessage `json:"mcpServers"`
	// Checkpoints set the limits of the workspace tracking that rewinds
	// restore files from.
	Checkpoints Checkpoints `json:"checkpoints"`
}

// Checkpoints is the config file's "checkpoints" object.
type Checkpoints struct {
	MaxFileSize int64    `json:"maxFileSize"` // bytes; default 8 MiB
	MaxFiles    int      `json:"maxFiles"`    // default 20,000
	Ignore      []string `json:"ignore"`      // more .gitignore lines
	NoWatch     bool     `json:"noWatch"`     // scan instead of inotify (NFS)
}

func (c Checkpoints) options() checkpoint.Options {
	return checkpoint.Options{MaxFileSize: c.MaxFileSize, MaxFiles: c.MaxFiles, Ignore: c.Ignore, NoWatch: c.NoWatch}
}

// Path is the config file's absolute path: $AGENTKERNEL_CONFIG (made
// absolute), else agentkernel/config.json in $XDG_CONFIG_HOME (when it is
// absolute, as the XDG spec wants) or ~/.config, where ~ is $HOME or the
// account's home; "" when there is none.
func Path() string {
	if p := os.Getenv("AGENTKERNEL_CONFIG"); p != "" {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
		return ""
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(dir) {
		h, err := home.Dir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(h, ".config")
	}
	return filepath.Join(dir, "agentkernel", "config.json")
}

// ReadFile reads the config file; a missing file is an empty config, a
// broken one an error naming the file.
func ReadFile() (File, error) {
	var c File
	path := Path()
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		line, col := position(b, jsonErrorOffset(err, dec, b))
		return File{}, fmt.Errorf("config %s:%d:%d: %w", path, line, col, err)
	}
	return c, nil
}

// jsonErrorOffset is where in the input b a decoding error is: the offset
// a syntax or type error names; for an unknown field, its key; else where
// the decoder stopped.
func jsonErrorOffset(err error, dec *json.Decoder, b []byte) int64 {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return se.Offset
	case errors.As(err, &te):
		return te.Offset
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		key := regexp.MustCompile(regexp.QuoteMeta(name) + `\s*:`)
		if loc := key.FindIndex(b); loc != nil {
			return int64(loc[0]) + 1
		}
	}
	return dec.InputOffset()
}

// position turns a byte offset into a 1-based line and column.
func position(b []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(b)))
	line = 1 + bytes.Count(b[:off], []byte("\n"))
	col = int(off) - bytes.LastIndexByte(b[:off], '\n')
	return line, col
}

// eventLog returns the event log under the data directory (dataDir, else
// the store's default), or nil when the config turns it off or there is
// no data directory. The caller closes it.
func (c File) eventLog(dataDir string, log hclog.Logger) *eventlog.Log {
	days := 30
	if c.LogRetentionDays != nil {
		days = *c.LogRetentionDays
	}
	if days <= 0 {
		return nil
	}
	if dataDir == "" {
		d, err := store.DataDir()
		if err != nil {
			log.Warn("no event log", "error", err)
			return nil
		}
		dataDir = d
	}
	return eventlog.New(eventlog.Options{Dir: filepath.Join(dataDir, "logs"), RetentionDays: days, Logger: log})
}

// ModelEntry is one entry of the config file's models (or prices).
type ModelEntry struct {
	Vision        *bool    `json:"vision"`
	ContextWindow int      `json:"contextWindow"`
	MaxOutput     int      `json:"maxOutput"`
	Input         *float64 `json:"input"`
	Output        *float64 `json:"output"`
	CacheRead     *float64 `json:"cacheRead"`
	CacheWrite    *float64 `json:"cacheWrite"`
}

// over lays m over base.
func (m ModelEntry) over(base provider.ModelInfo) provider.ModelInfo {
	set := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	if m.Vision != nil {
		base.Vision = *m.Vision
	}
	if m.ContextWindow > 0 {
		base.ContextWindow = m.ContextWindow
	}
	if m.MaxOutput > 0 {
		base.MaxOutput = m.MaxOutput
	}
	set(&base.InputPrice, m.Input)
	set(&base.OutputPrice, m.Output)
	set(&base.CacheRead, m.CacheRead)
	set(&base.CacheWrite, m.CacheWrite)
	return base
}

// prices is the model table the config file overrides: prices' entries
// replace the built-in ones, models' are laid over them.
func (c File) prices() map[string]provider.ModelInfo {
	out := map[string]provider.ModelInfo{}
	for id, p := range c.Prices {
		out[id] = p.over(provider.ModelInfo{ID: id})
	}
	for id, m := range c.Models {
		base, ok := out[id]
		if !ok {
			base = knownModel(id)
		}
		out[id] = m.over(base)
	}
	return out
}

// knownModel is what the built-in tables know of a model id.
func knownModel(id string) provider.ModelInfo {
	if m, ok := openai.KnownModel(id); ok {
		return m
	}
	if m, ok := anthropic.KnownModel(id); ok {
		return m
	}
	return provider.ModelInfo{ID: id}
}
