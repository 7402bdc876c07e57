package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestLayers keeps the package direction of docs/architecture.md honest: lower never
// imports higher. For each package, the module packages it must not reach
// (directly or not).
func TestLayers(t *testing.T) {
	const mod = "github.com/agentkernel/agentkernel/"
	forbidden := map[string][]string{
		"messages":      {"rewind", "store", "agent", "bridge", "kernel", "webview", "notebooks"},
		"rewind":        {"store", "agent", "bridge", "kernel", "webview", "notebooks"},
		"store":         {"app", "agent", "bridge", "kernel", "webview", "notebooks"},
		"kernel/wire":   {"kernel", "kernel/client", "internal/zmtp", "bridge", "agent", "messages", "store"},
		"internal/zmtp": {"kernel", "kernel/wire", "kernel/client", "bridge"},
		"kernel":        {"kernel/client", "bridge", "agent", "messages", "store", "rewind"},
		"kernel/client": {"kernel", "bridge", "agent", "messages", "store", "rewind", "backing"},
		"backing":       {"app", "kernel", "bridge", "agent", "messages", "store", "rewind", "session", "webview", "notebooks"},
		"session":       {"app", "kernel", "bridge", "webview", "notebooks", "cmd/agentkernel"},
		"checkpoint":    {"app", "store", "agent", "session", "backing", "bridge", "kernel", "webview", "notebooks"},
		"agent":         {"app", "kernel", "kernel/client", "kernel/wire", "backing", "session", "bridge", "webview", "notebooks"},
		"bridge":        {"app", "notebooks", "cmd/agentkernel"},
		"webview":       {"app", "agent", "bridge", "kernel", "kernel/client", "store", "rewind", "cmd/agentkernel"},
		"notebooks":     {"app", "agent", "bridge", "webview", "kernel", "cmd/agentkernel"},

		// Enterprise Gateway's launcher contract: the wire format only.
		"kernel/eglaunch": {"kernel", "kernel/client", "internal/zmtp", "backing", "bridge", "agent", "messages", "store", "session"},
		"hooks":           {"agent", "session", "store", "bridge", "kernel", "webview", "notebooks", "messages"},
		"eventlog":        {"agent", "session", "store", "bridge", "kernel", "webview", "notebooks", "messages"},
		"mcp":             {"app", "session", "bridge", "kernel", "kernel/client", "backing", "store", "webview", "notebooks", "cmd/agentkernel"},
		// A surface over the session host, as bridge is: no Jupyter server.
		"streamjson": {"app", "bridge", "kernel", "webview", "notebooks", "cmd/agentkernel"},
		// The composition root opens the host and the runner; the surfaces
		// are wired to it, never the other way.
		"app": {"bridge", "webview", "webview/hostagent", "streamjson", "kernel", "cmd/agentkernel"},
		// A surface over the app's hosts, as bridge is over its host.
		"acp": {"bridge", "webview", "webview/hostagent", "streamjson", "kernel", "cmd/agentkernel"},
		// The user's instruction files: read by the host, knowing none of us.
		"rules": {"messages", "agent", "session", "store", "kernel", "backing", "bridge", "app"},
		// The list of secret files: shared by the tools, the tracker and
		// the store, knowing none of them.
		"internal/protect": {"messages", "agent", "checkpoint", "store", "session", "kernel", "backing", "bridge", "app"},
		// Keeping a user's files to them: shared by the store and the event
		// log, knowing neither.
		"internal/private": {"messages", "store", "eventlog", "session", "kernel", "backing", "bridge", "app"},
		"mcpserve":         {"bridge", "webview", "webview/hostagent", "streamjson", "acp", "kernel", "cmd/agentkernel"},
		// The surface suite drives a host; the surfaces bring themselves.
		"session/surfacetest": {"app", "bridge", "webview", "webview/hostagent", "streamjson", "cmd/agentkernel"},
		// The panel's protocol over the host: no transport of its own.
		"webview/hostagent": {"app", "bridge", "kernel", "notebooks", "cmd/agentkernel"},
	}
	// Packages that sit on the session host map onto it and do not reach
	// past it: they must not import these directly.
	forbiddenDirect := map[string][]string{
		"bridge":  {"store", "rewind", "agent/agentstore"},
		"webview": {"store", "rewind"},
		// The host's API is in domain types: code outputs are backing's.
		"session": {"kernel/wire", "kernel/client"},
		// They reach sessions only through the host.
		"streamjson":        {"store", "rewind", "kernel/client"},
		"webview/hostagent": {"store", "rewind", "kernel/client", "kernel/wire"},
		"acp":               {"store", "rewind", "kernel/client", "kernel/wire"},
		// It speaks to the kernel through the runner only.
		"mcpserve": {"store", "rewind"},
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
