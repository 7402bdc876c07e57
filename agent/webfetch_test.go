package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// TestWebFetch: web_fetch is off without allowed sites; on, it fetches an
// allowed site's page as text (scripts and markup gone), refuses other
// hosts and a redirect to one, caps what it reads, and is asked like code
// by the permission policy (plan mode denies it).
func TestWebFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte(`<html><head><title>T</title><script>alert(1)</script></head><body><h1>Polars</h1><p>Fast &amp; lazy.</p></body></html>`))
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte(strings.Repeat("x", 5000)))
		case "/away":
			http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
		case "/bin":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write([]byte{0, 1, 2})
		}
	}))
	defer srv.Close()
	ws, err := NewWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	off, err := NewToolbox(ToolboxOptions{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := off.Lookup(ToolWebFetch); ok {
		t.Fatal("web_fetch is offered without allowed sites")
	}
	tb, err := NewToolbox(ToolboxOptions{Workspace: ws, WebFetch: &WebFetch{Allow: []string{"127.0.0.1"}, MaxBytes: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	tool, ok := tb.Lookup(ToolWebFetch)
	if !ok {
		t.Fatal("web_fetch is not offered")
	}
	fetch := func(u string) (string, error) {
		in, _ := json.Marshal(map[string]string{"url": u})
		res, err := tool.Execute(context.Background(), in)
		return res.Text, err
	}
	text, err := fetch(srv.URL + "/page")
	if err != nil || !strings.Contains(text, "Polars") || !strings.Contains(text, "Fast & lazy.") || strings.Contains(text, "alert") || strings.Contains(text, "<p>") {
		t.Errorf("the page: %q %v", text, err)
	}
	if text, err := fetch(srv.URL + "/big"); err != nil || !strings.Contains(text, "[cut at 1000 bytes]") || !strings.Contains(text, strings.Repeat("x", 1000)) || strings.Contains(text, strings.Repeat("x", 1001)) {
		t.Errorf("a big page: %d bytes, %v", len(text), err)
	}
	if _, err := fetch("http://example.org/"); err == nil || !strings.Contains(err.Error(), "not an allowed site") {
		t.Errorf("another site: %v", err)
	}
	if _, err := fetch(srv.URL + "/away"); err == nil || !strings.Contains(err.Error(), "not an allowed site") {
		t.Errorf("a redirect away: %v", err)
	}
	if _, err := fetch(srv.URL + "/bin"); err == nil || !strings.Contains(err.Error(), "not text") {
		t.Errorf("a binary: %v", err)
	}
	if _, err := fetch("file:///etc/passwd"); err == nil {
		t.Error("a file: URL was fetched")
	}
	if !(&WebFetch{Allow: []string{"*.readthedocs.io"}}).Allowed("polars.readthedocs.io") || (&WebFetch{Allow: []string{"*.readthedocs.io"}}).Allowed("readthedocs.io.evil.com") {
		t.Error("the wildcard")
	}

	p, err := NewPolicy(tb, PolicyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	call := provider.ToolCall{ID: "c", Name: ToolWebFetch, Input: json.RawMessage(`{"url":"` + srv.URL + `/page"}`)}
	if d := p.Decide(call); d.Verdict != Ask {
		t.Errorf("default mode: %v", d)
	}
	if err := p.SetPermissionMode(PermissionPlan); err != nil {
		t.Fatal(err)
	}
	if d := p.Decide(call); d.Verdict != Deny {
		t.Errorf("plan mode: %v", d)
	}
}
