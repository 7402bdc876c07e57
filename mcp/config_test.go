package mcp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	env := map[string]string{"HOME": "/home/u", "EMPTY": "", "TOKEN": "s3cret"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		in, want, err string
	}{
		{in: "plain", want: "plain"},
		{in: "${HOME}/bin", want: "/home/u/bin"},
		{in: "Bearer ${TOKEN}", want: "Bearer s3cret"},
		{in: "${UNSET:-fallback}", want: "fallback"},
		{in: "${EMPTY:-fallback}", want: "fallback"},
		{in: "${HOME:-fallback}", want: "/home/u"},
		{in: "${UNSET:-}", want: ""},
		{in: "${EMPTY}", want: ""},
		{in: "$HOME and ${ not a var", want: "$HOME and ${ not a var"},
		{in: "a ${UNSET} b", err: "UNSET is not set"},
	}
	for _, tt := range tests {
		got, err := expand(tt.in, lookup)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("expand(%q) error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestLoad(t *testing.T) {
	ws := t.TempDir()
	project := `{"mcpServers": {
		"shared": {"command": "project-cmd", "args": ["--x"], "alwaysAllow": ["read"]},
		"web": {"type": "http", "url": "https://example.com/mcp?key=${KEY}", "headers": {"Authorization": "Bearer ${TOKEN}"}},
		"old": {"type": "sse", "url": "https://example.com/sse"},
		"typo": {"comand": "x"},
		"bad name!": {"command": "x"}
	}}`
	if err := os.WriteFile(filepath.Join(ws, ProjectFile), []byte(project), 0o644); err != nil {
		t.Fatal(err)
	}
	user := json.RawMessage(`{"shared": {"command": "user-cmd"}, "mine": {"command": "mine", "timeout": 5}}`)
	cfg := Load(ws, user, "")

	got := map[string]ServerConfig{}
	for _, s := range cfg.Servers {
		got[s.Name] = s
	}
	if s := got["shared"]; s.Command != "project-cmd" || s.Scope != "project" || s.AlwaysAllow[0] != "read" {
		t.Errorf("shared = %+v; the project's entry must win", s)
	}
	if s := got["mine"]; s.Scope != "user" || s.Transport() != TransportStdio || s.Timeout != 5 {
		t.Errorf("mine = %+v", s)
	}
	if s := got["web"]; s.Transport() != TransportHTTP || s.Where() != "https://example.com/mcp" {
		t.Errorf("web = %+v, shown as %q (the query may hold a key: never shown)", s, s.Where())
	}
	problems := map[string]string{}
	for _, p := range cfg.Problems {
		problems[p.Name] = p.Err.Error()
	}
	for name, want := range map[string]string{"old": "SSE transport is not supported", "typo": `no command (a stdio server needs "command"; an HTTP server "type": "http" and "url"); unknown field "comand" ignored`, "bad name!": "server name"} {
		if !strings.Contains(problems[name], want) {
			t.Errorf("problem of %q = %q, want %q", name, problems[name], want)
		}
	}
	if len(cfg.Servers) != 3 {
		t.Errorf("%d servers, want 3 (shared, web, mine): %+v", len(cfg.Servers), cfg.Servers)
	}
}

func TestLoadBrokenFiles(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, ProjectFile), []byte(`{"mcpServers": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Load(ws, json.RawMessage(`{"ok": {"command": "x"}}`), "")
	if len(cfg.Servers) != 1 || cfg.Servers[0].Name != "ok" {
		t.Errorf("servers %+v: the user's must still load", cfg.Servers)
	}
	if len(cfg.Problems) != 1 || !strings.Contains(cfg.Problems[0].Err.Error(), ProjectFile) {
		t.Errorf("problems %+v, want one naming %s", cfg.Problems, ProjectFile)
	}
	if cfg := Load(t.TempDir(), json.RawMessage(`"nope"`), ""); len(cfg.Problems) != 1 || len(cfg.Servers) != 0 {
		t.Errorf("a broken mcpServers: %+v", cfg)
	}
}

func TestExpandedServer(t *testing.T) {
	sc := ServerConfig{Name: "s", Command: "${BIN:-node}", Args: []string{"${DIR}/index.js"},
		Env: map[string]string{"K": "${V:-d}"}, URL: "http://${HOST:-localhost}/mcp", Headers: map[string]string{"X": "${TOKEN}"}}
	env := map[string]string{"DIR": "/srv", "TOKEN": "t"}
	x, err := sc.expanded(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if x.Command != "node" || x.Args[0] != "/srv/index.js" || x.Env["K"] != "d" || x.URL != "http://localhost/mcp" || x.Headers["X"] != "t" {
		t.Errorf("expanded %+v", x)
	}
	if sc.Args[0] != "${DIR}/index.js" {
		t.Error("expanded changed the configuration it was given")
	}
	delete(env, "TOKEN")
	if _, err := sc.expanded(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err == nil || !strings.Contains(err.Error(), "headers.X") {
		t.Errorf("missing variable: %v, want an error naming headers.X", err)
	}
}

// TestLoadCwdAndUnknownFields: Claude Code's "cwd" is read, relative to the
// file it is in; a field not understood is a warning, and the server is
// kept.
func TestLoadCwdAndUnknownFields(t *testing.T) {
	ws, home := t.TempDir(), t.TempDir()
	project := `{"mcpServers": {"tools": {"command": "srv", "cwd": "tools/bin", "autoApprove": [], "x-note": 1}}}`
	if err := os.WriteFile(filepath.Join(ws, ProjectFile), []byte(project), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Load(ws, json.RawMessage(`{"mine": {"command": "m", "cwd": "servers"}}`), home)
	if len(cfg.Problems) != 0 || len(cfg.Servers) != 2 {
		t.Fatalf("servers %+v, problems %+v: both entries must load", cfg.Servers, cfg.Problems)
	}
	got := map[string]ServerConfig{}
	for _, s := range cfg.Servers {
		got[s.Name] = s
	}
	tools := got["tools"]
	want := []string{`unknown field "autoApprove" ignored`, `unknown field "x-note" ignored`}
	if tools.Cwd != "tools/bin" || tools.Base != ws || !slices.Equal(tools.Warnings, want) {
		t.Errorf("tools = %+v, want cwd tools/bin from %s and warnings %q", tools, ws, want)
	}
	if mine := got["mine"]; mine.Base != home || len(mine.Warnings) != 0 {
		t.Errorf("mine = %+v, want its base the config file's directory", mine)
	}
	if err := os.MkdirAll(filepath.Join(ws, "tools", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if dir, err := tools.workDir(ws); err != nil || dir != filepath.Join(ws, "tools", "bin") {
		t.Errorf("workDir = %q, %v", dir, err)
	}
	if _, err := got["mine"].workDir(ws); err == nil || !strings.Contains(err.Error(), "cwd servers") {
		t.Errorf("a missing cwd: %v", err)
	}
}

// TestClientName: a client's label is a name a server runs under, and
// Add takes it (Jupyter AI names its server "Jupyter MCP Server").
func TestClientName(t *testing.T) {
	for _, tc := range []struct{ label, want string }{
		{"Jupyter MCP Server", "Jupyter_MCP_Server"},
		{"fetch", "fetch"},
		{"my-tools_2", "my-tools_2"},
		{"café/ünïcode", "caf___n_code"},
		{strings.Repeat("x", 50), strings.Repeat("x", 40)},
	} {
		t.Run(tc.label, func(t *testing.T) {
			got := ClientName(tc.label)
			if got != tc.want {
				t.Fatalf("ClientName(%q) = %q, want %q", tc.label, got, tc.want)
			}
			var c Config
			c.Add([]ServerConfig{{Name: got, Type: TransportHTTP, URL: "http://localhost:3001/mcp"}})
			if len(c.Problems) != 0 || len(c.Servers) != 1 {
				t.Fatalf("Add(%q): servers %v, problems %v", got, c.Servers, c.Problems)
			}
		})
	}
}
