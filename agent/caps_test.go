package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// statedCap is the first number of characters a tool's description
// states: "at most 19800 characters".
func statedCap(t *testing.T, desc, what string) int {
	t.Helper()
	m := regexp.MustCompile(`(?:at most|past) (\d+) ` + what).FindStringSubmatch(desc)
	if m == nil {
		t.Fatalf("the description states no cap of %s: %s", what, desc)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func specOf(tb *Toolbox, name string) provider.Tool {
	for _, pt := range tb.Tools(context.Background()) {
		if pt.Name == name {
			return pt
		}
	}
	return provider.Tool{}
}

// TestStatedCapsAreTrue: the caps the tools' descriptions state are the
// ones applied. read_file returns at most its stated characters, of whole
// lines, and where it stops says the line to read on from, which reads on
// with no line lost; web_fetch reads at most its stated bytes and returns
// at most its stated characters; execute_code keeps the head and tail of
// an output past its stated characters.
func TestStatedCapsAreTrue(t *testing.T) {
	dir := t.TempDir()
	ws, err := NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Repeat("é", 400_000))) // 800,000 bytes
	}))
	defer srv.Close()
	fr := &fakeRunner{res: CodeResult{Stdout: strings.Repeat("y", 100_000)}}
	tb, err := NewToolbox(ToolboxOptions{Workspace: ws, Runner: fr, WebFetch: &WebFetch{Allow: []string{"127.0.0.1"}}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, in any) string {
		t.Helper()
		tool, _ := tb.Lookup(name)
		b, _ := json.Marshal(in)
		res, err := tool.Execute(context.Background(), b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res.Text
	}

	// read_file
	var lines []string
	for i := 1; i <= 30_000; i++ {
		lines = append(lines, fmt.Sprintf("row %d: %s", i, strings.Repeat("ü", i%50)))
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	readCap := statedCap(t, specOf(tb, ToolReadFile).Description, "characters")
	next, seen := 1, 0
	for next <= 30_000 && seen < 100 {
		text := run(ToolReadFile, map[string]any{"path": "big.txt", "start_line": next})
		if strings.Contains(text, "characters cut") {
			t.Fatalf("read_file's answer was cut in its middle at start_line=%d", next)
		}
		body := text[strings.Index(text, "\n")+1:]
		if n := utf8.RuneCountInString(body); n > readCap {
			t.Fatalf("read_file gave %d characters of lines, over its stated %d", n, readCap)
		}
		first := regexp.MustCompile(`(?m)^(\d+) \| `).FindStringSubmatch(body)
		if first == nil || first[1] != strconv.Itoa(next) {
			t.Fatalf("read from line %d starts at %v", next, first)
		}
		m := regexp.MustCompile(`use start_line=(\d+) to read on`).FindStringSubmatch(text)
		if m == nil {
			break
		}
		next, _ = strconv.Atoi(m[1])
		seen++
	}
	if seen < 2 {
		t.Fatalf("a 30,000-line file was read in %d reads", seen+1)
	}

	// web_fetch
	desc := specOf(tb, ToolWebFetch).Description
	if statedCap(t, desc, "bytes") != 200_000 {
		t.Errorf("web_fetch states another byte cap: %s", desc)
	}
	text := run(ToolWebFetch, map[string]any{"url": srv.URL + "/page"})
	if n := utf8.RuneCountInString(text); n > statedCap(t, desc, "characters") {
		t.Errorf("web_fetch returned %d characters, over its stated cap", n)
	}

	// execute_code
	desc = specOf(tb, ToolExecuteCode).Description
	text = run(ToolExecuteCode, map[string]any{"code": "print('y' * 100000)"})
	if n := utf8.RuneCountInString(text); n > statedCap(t, desc, "characters") || !strings.Contains(text, "characters cut") {
		t.Errorf("execute_code returned %d characters for 100,000 printed: %s", n, desc)
	}
}
