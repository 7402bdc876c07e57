package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// fileConfig is $XDG_CONFIG_HOME/agentkernel/config.json (or
// $AGENTKERNEL_CONFIG). Every field is optional; the environment and flags
// override it.
type fileConfig struct {
	Model   string   `json:"model"`   // e.g. "anthropic:claude-sonnet-4-5"
	Approve string   `json:"approve"` // none | read-only | all (headless asks)
	Mode    string   `json:"mode"`    // default | acceptEdits | bypassPermissions | plan
	Allow   []string `json:"allow"`   // permission rules, e.g. "execute_code(pip install *)"
	Deny    []string `json:"deny"`
	// Prices override the price table (USD per million tokens), by model id.
	Prices map[string]struct {
		Input         float64 `json:"input"`
		Output        float64 `json:"output"`
		CacheRead     float64 `json:"cacheRead"`
		CacheWrite    float64 `json:"cacheWrite"`
		ContextWindow int     `json:"contextWindow"`
	} `json:"prices"`
	// MCPServers are the user's MCP servers, in .mcp.json's format (the
	// workspace's .mcp.json wins for a name in both); read by package mcp.
	MCPServers json.RawMessage `json:"mcpServers"`
}

func configPath() string {
	if p := os.Getenv("AGENTKERNEL_CONFIG"); p != "" {
		return p
	}
	dir, err := os.UserConfigDir() // $XDG_CONFIG_HOME or ~/.config
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "agentkernel", "config.json")
}

// loadConfig reads the config file; a missing file is an empty config, a
// broken one an error naming the file.
func loadConfig() (fileConfig, error) {
	var c fileConfig
	path := configPath()
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
	dec := json.NewDecoder(bytesReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

func (c fileConfig) prices() map[string]provider.ModelInfo {
	out := map[string]provider.ModelInfo{}
	for id, p := range c.Prices {
		out[id] = provider.ModelInfo{ID: id, InputPrice: p.Input, OutputPrice: p.Output,
			CacheRead: p.CacheRead, CacheWrite: p.CacheWrite, ContextWindow: p.ContextWindow}
	}
	return out
}

// firstNonEmpty returns the first non-empty string.
func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
