package webview

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The embedded page's script is the bundle of surface/webview/panel/src: built
// from these very sources (surface/webview/panel/build.mjs writes their sha256 in
// its first lines, computed as here), so that go build embeds what the
// sources say without a node step, and a change to them without a
// rebuild fails here. It carries no test hook: tests reach the page
// through its DOM, as a person does.
func TestStaticBundleIsBuiltFromItsSources(t *testing.T) {
	bundle, err := staticFS.ReadFile("static/panel.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^// sources sha256 ([0-9a-f]{64})$`).FindSubmatch(bundle)
	if m == nil {
		t.Fatal("static/panel.js names no sources sha256: it is not surface/webview/panel/build.mjs's bundle")
	}
	dir := filepath.Join("panel", "src")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".js") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	h := sha256.New()
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(name + "\x00"))
		h.Write(b)
		h.Write([]byte{0})
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != string(m[1]) {
		t.Fatalf("static/panel.js was built from other sources than surface/webview/panel/src (%s, the sources are %s): run `make panel` (or `npm ci && npm run build` in surface/webview/panel)", m[1], got)
	}
	for _, hook := range []string{"__akPanel", "AKMarkdown"} {
		if strings.Contains(string(bundle), hook) {
			t.Errorf("static/panel.js holds the test hook %s", hook)
		}
	}
	// The page loads the bundle, and nothing else of ours.
	page, err := staticFS.ReadFile("static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	scripts := regexp.MustCompile(`<script[^>]*>`).FindAllString(string(page), -1)
	if !slices.Equal(scripts, []string{`<script src="static/panel.js">`}) {
		t.Fatalf("index.html loads %q, want the bundle alone", scripts)
	}
}

// The embedded bundle is, byte for byte, what surface/webview/panel/build.mjs
// builds from the sources now: the banner's hash above names the sources,
// and this catches an edit to the bundle itself. It needs node and the
// panel's pinned esbuild (`npm ci` in surface/webview/panel, which `make check`
// runs for its panel-check), and is skipped, saying so, without them.
func TestStaticBundleIsTheBuildsBytes(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: the bundle's bytes are left to `make panel-check`")
	}
	if _, err := os.Stat(filepath.Join("panel", "node_modules", "esbuild")); err != nil {
		t.Skip("surface/webview/panel/node_modules has no esbuild (`npm ci` in surface/webview/panel installs it): the bundle's bytes are left to `make panel-check`")
	}
	want := filepath.Join(t.TempDir(), "panel.js")
	cmd := exec.Command(node, "build.mjs", "--out", want)
	cmd.Dir = "panel"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node build.mjs --out: %v\n%s", err, out)
	}
	built, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := staticFS.ReadFile("static/panel.js")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bundle, built) {
		t.Fatalf("static/panel.js (%d bytes) is not what surface/webview/panel/src builds (%d bytes): rebuild it with `make panel` and commit it", len(bundle), len(built))
	}
}
