package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWebviewList(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("JUPYTER_RUNTIME_DIR", dir)
	var out bytes.Buffer
	if err := run([]string{"webview", "list"}, &out, &out); err != nil || !strings.Contains(out.String(), "No web panels running") {
		t.Fatalf("empty: %v %q", err, out.String())
	}
	rec, _ := json.Marshal(map[string]any{"url": "http://127.0.0.1:4242/?token=abc", "pid": os.Getpid(), "started": time.Now()})
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("agentkernel-webview-%d.json", os.Getpid())), rec, 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run([]string{"webview", "list"}, &out, &out); err != nil || !strings.Contains(out.String(), "http://127.0.0.1:4242/?token=abc") || !strings.Contains(out.String(), "true") {
		t.Fatalf("listed: %v %q", err, out.String())
	}
	out.Reset()
	if err := run([]string{"webview", "list", "--json"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		URL   string `json:"url"`
		Alive bool   `json:"alive"`
	}
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil || len(rows) != 1 || !rows[0].Alive {
		t.Fatalf("json: %v %s", err, out.String())
	}
	if err := run([]string{"webview", "nope"}, &out, &out); err == nil {
		t.Fatal("unknown subcommand accepted")
	}
}
