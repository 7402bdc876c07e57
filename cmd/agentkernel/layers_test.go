package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// checkLayout keeps the tree's shape what docs/architecture.md draws:
// the core (every package outside surface/) never imports a surface —
// only cmd composes them, app handing them what it opened — and nothing of the product imports
// tests/ (the scripted model server and the harness are the tests' own;
// scripts/ are benchmarks and tools, and a package named …test a suite
// for tests, which may use them).
func checkLayout(t *testing.T, rel string, imports []string, mod string) {
	t.Helper()
	composes := strings.HasPrefix(rel, "surface/") || strings.HasPrefix(rel, "cmd/") ||
		strings.HasPrefix(rel, "tests/") || strings.HasPrefix(rel, "scripts/")
	for _, d := range imports {
		dep, ok := strings.CutPrefix(d, mod)
		if !ok {
			continue
		}
		if strings.HasPrefix(dep, "surface/") && !composes {
			t.Errorf("%s imports the surface %s: the core never reaches a surface", rel, dep)
		}
		forTests := strings.HasPrefix(rel, "tests/") || strings.HasPrefix(rel, "scripts/") || strings.HasSuffix(rel, "test")
		if strings.HasPrefix(dep, "tests/") && !forTests {
			t.Errorf("%s imports %s: the product never imports the tests' packages", rel, dep)
		}
	}
}

// TestLayers keeps the package direction of docs/architecture.md honest: lower never
// imports higher. For each package, the module packages it must not reach
// (directly or not).
func TestLayers(t *testing.T) {
	const mod = "github.com/agentkernel/agentkernel/"
	forbidden := map[string][]string{
		"messages":        {"rewind", "store", "agent", "surface/bridge", "kernel", "surface/webview", "notebooks"},
		"rewind":          {"store", "agent", "surface/bridge", "kernel", "surface/webview", "notebooks"},
		"store":           {"app", "agent", "surface/bridge", "kernel", "surface/webview", "notebooks"},
		"kernel/wire":     {"kernel", "kernel/client", "internal/zmtp", "surface/bridge", "agent", "messages", "store"},
		"internal/zmtp":   {"kernel", "kernel/wire", "kernel/client", "surface/bridge"},
		"kernel":          {"kernel/client", "surface/bridge", "agent", "messages", "store", "rewind"},
		"kernel/client":   {"kernel", "surface/bridge", "agent", "messages", "store", "rewind", "backing"},
		"backing":         {"app", "kernel", "surface/bridge", "agent", "messages", "store", "rewind", "session", "surface/webview", "notebooks"},
		"session":         {"app", "kernel", "surface/bridge", "surface/webview", "notebooks", "cmd/agentkernel"},
		"checkpoint":      {"app", "store", "agent", "session", "backing", "surface/bridge", "kernel", "surface/webview", "notebooks"},
		"agent":           {"app", "kernel", "kernel/client", "kernel/wire", "backing", "session", "surface/bridge", "surface/webview", "notebooks"},
		"surface/bridge":  {"app", "notebooks", "cmd/agentkernel"},
		"surface/webview": {"app", "agent", "surface/bridge", "kernel", "kernel/client", "store", "rewind", "cmd/agentkernel"},
		"notebooks":       {"app", "agent", "surface/bridge", "surface/webview", "kernel", "cmd/agentkernel"},

		// Enterprise Gateway's launcher contract: the wire format only.
		"kernel/eglaunch": {"kernel", "kernel/client", "internal/zmtp", "backing", "surface/bridge", "agent", "messages", "store", "session"},
		"hooks":           {"agent", "session", "store", "surface/bridge", "kernel", "surface/webview", "notebooks", "messages"},
		"eventlog":        {"agent", "session", "store", "surface/bridge", "kernel", "surface/webview", "notebooks", "messages"},
		"mcp":             {"app", "session", "surface/bridge", "kernel", "kernel/client", "backing", "store", "surface/webview", "notebooks", "cmd/agentkernel"},
		// A surface over the session host, as bridge is: no Jupyter server.
		"surface/streamjson": {"app", "surface/bridge", "kernel", "surface/webview", "notebooks", "cmd/agentkernel"},
		// The composition root opens the host and the runner; the surfaces
		// are wired to it, never the other way.
		"app": {"surface/bridge", "surface/webview", "surface/webview/hostagent", "surface/streamjson", "kernel", "cmd/agentkernel"},
		// A surface over the app's hosts, as bridge is over its host.
		"surface/acp": {"surface/bridge", "surface/webview", "surface/webview/hostagent", "surface/streamjson", "kernel", "cmd/agentkernel"},
		// The user's instruction files: read by the host, knowing none of us.
		"rules": {"messages", "agent", "session", "store", "kernel", "backing", "surface/bridge", "app"},
		// The list of secret files: shared by the tools, the tracker and
		// the store, knowing none of them.
		"internal/protect": {"messages", "agent", "checkpoint", "store", "session", "kernel", "backing", "surface/bridge", "app"},
		// Keeping a user's files to them: shared by the store and the event
		// log, knowing neither.
		"internal/private": {"messages", "store", "eventlog", "session", "kernel", "backing", "surface/bridge", "app"},
		"surface/mcpserve": {"surface/bridge", "surface/webview", "surface/webview/hostagent", "surface/streamjson", "surface/acp", "kernel", "cmd/agentkernel"},
		// The surface suite drives a host; the surfaces bring themselves.
		"session/surfacetest": {"app", "surface/bridge", "surface/webview", "surface/webview/hostagent", "surface/streamjson", "cmd/agentkernel"},
		// The panel's protocol over the host: no transport of its own.
		"surface/webview/hostagent": {"app", "surface/bridge", "kernel", "notebooks", "cmd/agentkernel"},
	}
	// Packages that sit on the session host map onto it and do not reach
	// past it: they must not import these directly.
	forbiddenDirect := map[string][]string{
		"surface/bridge":  {"store", "rewind", "agent/agentstore"},
		"surface/webview": {"store", "rewind"},
		// The host's API is in domain types: code outputs are backing's.
		"session": {"kernel/wire", "kernel/client"},
		// They reach sessions only through the host.
		"surface/streamjson":        {"store", "rewind", "kernel/client"},
		"surface/webview/hostagent": {"store", "rewind", "kernel/client", "kernel/wire"},
		"surface/acp":               {"store", "rewind", "kernel/client", "kernel/wire"},
		// It speaks to the kernel through the runner only.
		"surface/mcpserve": {"store", "rewind"},
	}
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
			Deps       []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(p.ImportPath, mod)
		checkLayout(t, rel, p.Imports, mod)
		for _, d := range p.Imports {
			for _, b := range forbiddenDirect[rel] {
				if d == mod+b {
					t.Errorf("%s imports %s directly: it goes through the session host", rel, b)
				}
			}
		}
		bad, ok := forbidden[rel]
		if !ok {
			continue
		}
		seen++
		for _, d := range p.Deps {
			for _, b := range bad {
				if d == mod+b {
					t.Errorf("%s imports %s: lower never imports higher (docs/architecture.md)", rel, b)
				}
			}
		}
	}
	if seen < 5 {
		t.Fatalf("checked only %d packages; is go list finding the module?", seen)
	}
}
