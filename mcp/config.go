package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ProjectFile is the project's MCP configuration, in the workspace.
const ProjectFile = ".mcp.json"

// Transport names.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// ServerConfig is one server of the configuration, as Claude Code's
// .mcp.json spells it:
//
//	{"command": "npx", "args": ["-y", "pkg"], "env": {"K": "${V:-x}"}}
//	{"type": "http", "url": "https://host/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
//
// plus agentkernel's (and Roo-Code's) alwaysAllow, timeout (seconds, each
// tool call) and disabled. ${VAR} and ${VAR:-default} are expanded in
// command, args, env, url and headers when the server starts.
type ServerConfig struct {
	Type        string            `json:"type,omitempty"` // "stdio" (default with a command) or "http"
	Command     string            `json:"command,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	URL         string            `json:"url,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	AlwaysAllow []string          `json:"alwaysAllow,omitempty"`
	Timeout     float64           `json:"timeout,omitempty"`
	Disabled    bool              `json:"disabled,omitempty"`
	// Cwd is a stdio server's working directory; a relative one is
	// relative to the directory of the file it is configured in. Default:
	// the workspace.
	Cwd string `json:"cwd,omitempty"`

	// Name is the server's key in mcpServers; Scope is where it was
	// configured: "project" (the workspace's .mcp.json) or "user" (the
	// config file); Base is that file's directory. Warnings name what the
	// entry holds that is not understood (ignored). Not read from JSON.
	Name     string   `json:"-"`
	Scope    string   `json:"-"`
	Base     string   `json:"-"`
	Warnings []string `json:"-"`
}

// known are the fields of an entry: others are warned about and ignored.
var known = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeFor[ServerConfig]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			m[name] = true
		}
	}
	return m
}()

// unknownFields names the keys of entry that ServerConfig does not have.
func unknownFields(entry json.RawMessage) []string {
	var keys map[string]json.RawMessage
	if json.Unmarshal(entry, &keys) != nil {
		return nil // the decode reports it
	}
	var out []string
	for k := range keys {
		if !known[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// workDir is the directory a stdio server runs in: its cwd (relative to
// Base), else def.
func (c ServerConfig) workDir(def string) (string, error) {
	if c.Cwd == "" {
		return def, nil
	}
	dir := c.Cwd
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(c.Base, dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("cwd %s: %w", c.Cwd, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("cwd %s: not a directory", c.Cwd)
	}
	return dir, nil
}

// Transport returns the server's transport: "stdio" or "http".
func (c ServerConfig) Transport() string {
	if c.Type == "" && c.Command == "" && c.URL != "" {
		return TransportHTTP
	}
	if c.Type == "streamable-http" || c.Type == "streamableHttp" {
		return TransportHTTP
	}
	return orDefault(c.Type, TransportStdio)
}

// check reports what is wrong with the entry before anything runs.
func (c ServerConfig) check() error {
	if !serverNameRE.MatchString(c.Name) {
		return fmt.Errorf("server name %q: use letters, digits, _ and - (it becomes part of the tool names)", c.Name)
	}
	switch c.Transport() {
	case TransportStdio:
		if strings.TrimSpace(c.Command) == "" {
			return errors.New("no command (a stdio server needs \"command\"; an HTTP server \"type\": \"http\" and \"url\")")
		}
	case TransportHTTP:
		if strings.TrimSpace(c.URL) == "" {
			return errors.New("no url")
		}
	case "sse":
		return errors.New("the SSE transport is not supported: use the streamable HTTP transport (\"type\": \"http\")")
	default:
		return fmt.Errorf("unknown type %q (want stdio or http)", c.Type)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("timeout %v: must not be negative", c.Timeout)
	}
	return nil
}

var serverNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

// ClientName is the server name of a client's label for a server (ACP's
// name, such as Jupyter AI's "Jupyter MCP Server"): the characters a tool
// name cannot hold become "_" and it is cut to the 40 a name may have, so a
// label its user never chose still names a server that runs.
func ClientName(label string) string {
	n := toolNameRE.ReplaceAllString(label, "_")
	if len(n) > 40 {
		n = n[:40]
	}
	return n
}

// callTimeout is the configured tool-call timeout, or def.
func (c ServerConfig) callTimeout(def time.Duration) time.Duration {
	if c.Timeout > 0 {
		return time.Duration(c.Timeout * float64(time.Second))
	}
	return def
}

// Where returns what the server runs or reaches, for people: the command
// line, or the URL without its query and user info (they may hold tokens).
// Variables are shown unexpanded.
func (c ServerConfig) Where() string {
	if c.Transport() == TransportHTTP {
		u, err := url.Parse(c.URL)
		if err != nil {
			return "(invalid url)"
		}
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		return u.String()
	}
	return strings.TrimSpace(c.Command + " " + strings.Join(c.Args, " "))
}

// file is the shape of .mcp.json, and of the config file's mcpServers.
type file struct {
	MCPServers map[string]json.RawMessage `json:"mcpServers"`
}

// Config is the servers of a workspace: the project's .mcp.json over the
// user's mcpServers. Errors are entries that could not be read: they are
// shown as failed servers, and the others still work.
type Config struct {
	Servers []ServerConfig
	// Problems are per server (Name set) or per file (Name empty).
	Problems []Problem
}

// Add adds servers a client gives (ACP's session/new), in scope "client":
// one of the same name as a configured server replaces it; one that is
// not valid is a Problem.
func (c *Config) Add(servers []ServerConfig) {
	for _, sc := range servers {
		sc.Scope = "client"
		if err := sc.check(); err != nil {
			c.Problems = append(c.Problems, Problem{Name: sc.Name, Scope: sc.Scope, Err: err})
			continue
		}
		c.Servers = slices.DeleteFunc(c.Servers, func(o ServerConfig) bool { return o.Name == sc.Name })
		c.Servers = append(c.Servers, sc)
	}
}

// Problem is a configuration entry that could not be used.
type Problem struct {
	Name, Scope string
	Err         error
}

// Load reads the workspace's .mcp.json (project scope) and user, the
// config file's mcpServers object (user scope; nil for none), from a file
// in userDir. A server named in both is the project's. A file that does
// not parse is a Problem, never a panic or a stop; a field of an entry
// that is not understood is a warning of that server, which still runs.
func Load(workspace string, user json.RawMessage, userDir string) Config {
	var cfg Config
	byName := map[string]int{}
	add := func(scope, base string, servers map[string]json.RawMessage) {
		names := make([]string, 0, len(servers))
		for n := range servers {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, name := range names {
			if _, ok := byName[name]; ok {
				continue // the project's entry wins
			}
			sc := ServerConfig{Name: name, Scope: scope}
			err := json.Unmarshal(servers[name], &sc)
			sc.Name, sc.Scope, sc.Base = name, scope, base
			for _, f := range unknownFields(servers[name]) {
				sc.Warnings = append(sc.Warnings, fmt.Sprintf("unknown field %q ignored", f))
			}
			if err == nil {
				err = sc.check()
			}
			if err != nil && len(sc.Warnings) > 0 {
				err = fmt.Errorf("%w; %s", err, strings.Join(sc.Warnings, "; "))
			}
			if err != nil {
				cfg.Problems = append(cfg.Problems, Problem{Name: name, Scope: scope, Err: err})
				byName[name] = -1
				continue
			}
			byName[name] = len(cfg.Servers)
			cfg.Servers = append(cfg.Servers, sc)
		}
	}
	if workspace != "" {
		path := filepath.Join(workspace, ProjectFile)
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			cfg.Problems = append(cfg.Problems, Problem{Scope: "project", Err: fmt.Errorf("%s: %w", ProjectFile, err)})
		default:
			var f file
			if err := json.Unmarshal(b, &f); err != nil {
				cfg.Problems = append(cfg.Problems, Problem{Scope: "project", Err: fmt.Errorf("%s: %w", ProjectFile, err)})
			} else {
				add("project", workspace, f.MCPServers)
			}
		}
	}
	if len(bytes.TrimSpace(user)) > 0 && !bytes.Equal(bytes.TrimSpace(user), []byte("null")) {
		var servers map[string]json.RawMessage
		if err := json.Unmarshal(user, &servers); err != nil {
			cfg.Problems = append(cfg.Problems, Problem{Scope: "user", Err: fmt.Errorf("config file: mcpServers: %w", err)})
		} else {
			add("user", userDir, servers)
		}
	}
	return cfg
}

// expandRE matches ${VAR} and ${VAR:-default}.
var expandRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expand replaces ${VAR} and ${VAR:-default} in s from lookup. A variable
// that is unset (or empty, with a default) takes its default; one that is
// unset without a default is an error naming it. Anything else is left as
// written.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	var missing []string
	out := expandRE.ReplaceAllStringFunc(s, func(m string) string {
		g := expandRE.FindStringSubmatch(m)
		v, ok := lookup(g[1])
		if g[2] != "" {
			if !ok || v == "" {
				return g[3]
			}
			return v
		}
		if !ok {
			missing = append(missing, g[1])
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("environment variable %s is not set (write ${%s:-default} for a default)", missing[0], missing[0])
	}
	return out, nil
}

// expanded returns c with its variables expanded from lookup.
func (c ServerConfig) expanded(lookup func(string) (string, bool)) (ServerConfig, error) {
	var firstErr error
	x := func(field, s string) string {
		v, err := expand(s, lookup)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%s: %w", field, err)
		}
		return v
	}
	out := c
	out.Command = x("command", c.Command)
	out.URL = x("url", c.URL)
	out.Cwd = x("cwd", c.Cwd)
	out.Args = make([]string, len(c.Args))
	for i, a := range c.Args {
		out.Args[i] = x(fmt.Sprintf("args[%d]", i), a)
	}
	expandMap := func(field string, m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		r := make(map[string]string, len(m))
		for k, v := range m {
			r[k] = x(field+"."+k, v)
		}
		return r
	}
	out.Env = expandMap("env", c.Env)
	out.Headers = expandMap("headers", c.Headers)
	return out, firstErr
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
