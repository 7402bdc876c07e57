package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/backing"
)

// TestCompleteMention: the completions of an @-mention being typed, over
// a real kernel whose user made a table: @d offers df (with its type and
// shape) before the workspace's data/ folder, and nothing the kernel
// cannot mention; @cell offers the notebook's cells by execution count or
// id; a path goes into its folder, never to a protected or hidden file or
// out of the workspace; a name of the kernel's that a mention cannot
// spell is left out, and a detail holds no control characters.
func TestCompleteMention(t *testing.T) {
	r := liveKernel(t)
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "data", "raw"), 0o755)
	os.WriteFile(filepath.Join(ws, "data", "sales.csv"), []byte("city,sales\nOslo,3\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "data", "secrets.csv"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(ws, "data", ".hidden"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(ws, "draft.md"), []byte("# Draft"), 0o644)
	nb := &memCells{path: "work.ipynb", cells: []Cell{
		{ID: "intro", Kind: "markdown", Source: "# Sales\nby city"},
		{ID: "load", Kind: "code", Source: "df = load()", ExecutionCount: 3},
	}}
	h := newHost(t, Config{Store: openStore(t), Runner: r, Workspace: ws, Kind: "prompt", Cells: func() Cells { return nb }})
	ctx := context.Background()

	if got := h.CompleteMention(ctx, "d", 0); len(got) != 2 || got[0].Kind != MentionDir {
		t.Errorf("before the kernel runs, @d offers the workspace only: %+v", got)
	}
	code := "class Frame:\n    columns = ['city', 'sales']\n    dtypes = ['object', 'int64']\n    shape = (2, 2)\n" +
		"df = Frame()\ndepth = 3\nglobals()['d\\u202ebad name'] = 1\ndetail = 'a\\x1b[31m\\nb'\nimport datetime"
	if res, err := h.CodeLog().RunCell(ctx, backing.Exec{Code: code}); err != nil || res.Status != "ok" {
		t.Fatalf("setup cell: %v %+v", err, res)
	}
	// The namespace is read within mentionNamespaceWait: a kernel slow to
	// answer (a loaded machine) offers no variables that time, and the
	// next key typed asks again.
	var got []MentionCompletion
	for range 20 {
		if got = h.CompleteMention(ctx, "d", 0); len(got) > 0 && got[0].Kind == MentionVariable {
			break
		}
	}
	var mentions []string
	for _, c := range got {
		mentions = append(mentions, c.Kind+":"+c.Mention)
		if strings.ContainsAny(c.Detail, "\x1b\n\u202e") {
			t.Errorf("a detail holds a control character: %q", c.Detail)
		}
	}
	if want := "variable:df variable:depth variable:detail module:datetime dir:data/ file:draft.md"; strings.Join(mentions, " ") != want {
		t.Errorf("@d offers %q, want %q", strings.Join(mentions, " "), want)
	}
	if got[0].Detail != "Frame (2, 2)" {
		t.Errorf("df's detail: %q", got[0].Detail)
	}

	tests := []struct{ prefix, want string }{
		{"DF", "df"},
		{"cell", "cell:intro cell:3"},
		{"cell:3", "cell:3"},
		{"data/", "data/raw/ data/sales.csv"},
		{"data/S", "data/sales.csv"},
		{"data/.h", "data/.hidden"},
		{"../", ""},
		{"/etc/", ""},
		{"zzz", ""},
	}
	for _, tt := range tests {
		var ms []string
		for _, c := range h.CompleteMention(ctx, tt.prefix, 0) {
			ms = append(ms, c.Mention)
		}
		if strings.Join(ms, " ") != tt.want {
			t.Errorf("@%s offers %q, want %q", tt.prefix, strings.Join(ms, " "), tt.want)
		}
	}
	if got := h.CompleteMention(ctx, "", 3); len(got) != 3 {
		t.Errorf("a limit of 3 gives %d", len(got))
	}
	for _, c := range h.CompleteMention(ctx, "", 0) {
		if Mentions("@" + c.Mention)[0] != c.Mention {
			t.Errorf("%q does not read back as a mention", c.Mention)
		}
	}
}
