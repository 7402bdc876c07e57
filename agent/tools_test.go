package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// fakeRunner returns a fixed CodeResult and records the code it was given.
type fakeRunner struct {
	res  CodeResult
	err  error
	code []string
}

func (f *fakeRunner) Run(ctx context.Context, code string, _ func(CodeOutput)) (CodeResult, error) {
	f.code = append(f.code, code)
	if err := ctx.Err(); err != nil {
		return CodeResult{}, err
	}
	return f.res, f.err
}

func testToolbox(t *testing.T, opts ToolboxOptions) *Toolbox {
	t.Helper()
	if opts.Workspace == nil {
		ws, _ := testWorkspace(t)
		opts.Workspace = ws
	}
	tb, err := NewToolbox(opts)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// run executes tool name with input and returns the result and error.
func run(t *testing.T, tb *Toolbox, name, input string) (Result, error) {
	t.Helper()
	tool, ok := tb.Lookup(name)
	if !ok {
		t.Fatalf("no tool %q", name)
	}
	res, err := tool.Execute(context.Background(), json.RawMessage(input))
	if err != nil && (!res.IsError || !strings.Contains(res.Text, err.Error())) {
		t.Errorf("%s: failed Result %+v does not carry the error %v", name, res, err)
	}
	return res, err
}

func mustRun(t *testing.T, tb *Toolbox, name, input string) Result {
	t.Helper()
	res, err := run(t, tb, name, input)
	if err != nil {
		t.Fatalf("%s %s: %v", name, input, err)
	}
	return res
}

func wantErr(t *testing.T, err error, substr ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one saying %q", substr)
	}
	for _, s := range substr {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
}

func TestToolsRegistry(t *testing.T) {
	tb := testToolbox(t, ToolboxOptions{})
	want := []string{ToolExecuteCode, ToolReadFile, ToolListFiles, ToolSearchFiles, ToolWriteFile,
		ToolEditFile, ToolAskFollowupQuestion, ToolAttemptCompletion, ToolProposeCell}
	var got []string
	for _, spec := range tb.Tools(context.Background()) {
		got = append(got, spec.Name)
		if spec.Description == "" {
			t.Errorf("%s: no description", spec.Name)
		}
		var schema struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties bool                       `json:"additionalProperties"`
		}
		if err := json.Unmarshal(spec.InputSchema, &schema); err != nil {
			t.Errorf("%s: schema: %v", spec.Name, err)
		}
		if schema.Type != "object" || len(schema.Properties) == 0 || schema.AdditionalProperties {
			t.Errorf("%s: schema %s", spec.Name, spec.InputSchema)
		}
		for _, r := range schema.Required {
			if _, ok := schema.Properties[r]; !ok {
				t.Errorf("%s: required %q not a property", spec.Name, r)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("Tools() = %v, want %v", got, want)
	}
	readOnly := map[string]bool{ToolReadFile: true, ToolListFiles: true, ToolSearchFiles: true,
		ToolAskFollowupQuestion: true, ToolAttemptCompletion: true, ToolProposeCell: true}
	for _, name := range want {
		tool, _ := tb.Lookup(name)
		if tool.ReadOnly() != readOnly[name] {
			t.Errorf("%s: ReadOnly() = %v", name, tool.ReadOnly())
		}
	}
	if _, ok := tb.Lookup("rm"); ok {
		t.Error("Lookup of an unknown tool succeeded")
	}
	if _, err := NewToolbox(ToolboxOptions{}); err == nil {
		t.Error("NewToolbox without a workspace: no error")
	}
}

func TestToolInputValidation(t *testing.T) {
	tb := testToolbox(t, ToolboxOptions{Runner: &fakeRunner{}})
	tests := []struct {
		tool, input string
		field       string
		reason      string
	}{
		{ToolReadFile, `{}`, "path", "missing (required)"},
		{ToolReadFile, ``, "path", "missing"},
		{ToolReadFile, `null`, "path", "missing"},
		{ToolReadFile, `[]`, "", "want a JSON object"},
		{ToolReadFile, `{"path": 1}`, "path", "want a string, got a number"},
		{ToolReadFile, `{"path": ""}`, "path", "empty"},
		{ToolReadFile, `{"path": "a", "mode": "x"}`, "mode", "unknown field (the fields are: path, start_line, end_line)"},
		{ToolReadFile, `{"path": "a", "start_line": 1.5}`, "start_line", "want an integer"},
		{ToolReadFile, `{"path": "a", "start_line": "3"}`, "start_line", "want an integer, got a string"},
		{ToolReadFile, `{"path": "a", "start_line": 0}`, "start_line", "must be at least 1"},
		{ToolReadFile, `{"path": "a"`, "", "not valid JSON"},
		{ToolListFiles, `{"path": ".", "recursive": "yes"}`, "recursive", "want a boolean, got a string"},
		{ToolSearchFiles, `{"path": "."}`, "regex", "missing"},
		{ToolWriteFile, `{"path": "a"}`, "content", "missing"},
		{ToolEditFile, `{"path": "a", "search": "x"}`, "replace", "missing"},
		{ToolEditFile, `{"path": "a", "search": "x", "replace": "y", "replace_all": 1}`, "replace_all", "want a boolean"},
		{ToolExecuteCode, `{"code": ["x"]}`, "code", "want a string, got an array"},
		{ToolAskFollowupQuestion, `{"question": "q", "suggestions": "a"}`, "suggestions", "want an array of strings"},
		{ToolAskFollowupQuestion, `{"question": "q", "suggestions": [1]}`, "suggestions", "want an array of strings"},
		{ToolAttemptCompletion, `{"result": {}}`, "result", "got an object"},
		{ToolProposeCell, `{}`, "code", "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.input, func(t *testing.T) {
			res, err := run(t, tb, tt.tool, tt.input)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want *InputError", err)
			}
			if ie.Tool != tt.tool || ie.Field != tt.field || !strings.Contains(ie.Reason, tt.reason) {
				t.Errorf("InputError %+v, want field %q reason %q", ie, tt.field, tt.reason)
			}
			if !res.IsError || !strings.HasPrefix(res.Text, "Error: "+tt.tool+": invalid input") {
				t.Errorf("Result = %+v", res)
			}
		})
	}
	// Empty content and replacement are valid.
	mustRun(t, tb, ToolWriteFile, `{"path": "empty.txt", "content": ""}`)
}

func TestShownImagesCapped(t *testing.T) {
	big := strings.Repeat("A", maxShownImageBytes*2)
	var ims []Image
	for i := 0; i < maxShownImages+2; i++ {
		ims = append(ims, Image{MIME: "image/png", Data: "iVBORw0KGgo="})
	}
	ims = append([]Image{{MIME: "image/jpeg", Data: big}}, ims...)
	tb := testToolbox(t, ToolboxOptions{Runner: &fakeRunner{res: CodeResult{Images: ims}}})
	res := mustRun(t, tb, ToolExecuteCode, `{"code": "plots()"}`)
	if len(res.Shown) != maxShownImages {
		t.Fatalf("%d images shown, want the cap %d", len(res.Shown), maxShownImages)
	}
	for _, u := range res.Shown {
		if strings.HasPrefix(u, "data:image/jpeg") {
			t.Fatal("an image over the size cap was shown")
		}
	}
	if len(res.Images) != len(ims) {
		t.Fatalf("the model's summary lists %d images, want all %d", len(res.Images), len(ims))
	}
}

func TestExecuteCode(t *testing.T) {
	fr := &fakeRunner{res: CodeResult{
		Stdout: "hello\n",
		Stderr: "warn\n",
		Result: "42",
		Images: []Image{{MIME: "image/png", Width: 640, Height: 480, Bytes: 23 * 1024, Data: "iVBORw0KGgo="},
			{MIME: "image/svg+xml", Bytes: 300, Data: "PHN2Zz4="}},
	}}
	tb := testToolbox(t, ToolboxOptions{Runner: fr})
	res := mustRun(t, tb, ToolExecuteCode, `{"code": "print('hello')"}`)
	want := "[stdout]\nhello\n[stderr]\nwarn\n[result]\n42\n[images]\n[image/png 640x480, 23 KB]\n[image/svg+xml, 300 B]"
	if res.Text != want || res.IsError {
		t.Errorf("Text =\n%s\nwant\n%s", res.Text, want)
	}
	if len(res.Images) != 2 || res.Images[0] != "[image/png 640x480, 23 KB]" {
		t.Errorf("Images = %q", res.Images)
	}
	// The PNG is shown (the panel displays raster images); the SVG is not.
	if len(res.Shown) != 1 || res.Shown[0] != "data:image/png;base64,iVBORw0KGgo=" {
		t.Errorf("Shown = %q", res.Shown)
	}
	if len(fr.code) != 1 || fr.code[0] != "print('hello')" {
		t.Errorf("runner got %q", fr.code)
	}

	fr.res = CodeResult{Error: &CodeError{EName: "NameError", EValue: "name 'x' is not defined",
		Traceback: []string{"\x1b[0;31mNameError\x1b[0m                 Traceback", "----> 1 x"}}}
	res, err := run(t, tb, ToolExecuteCode, `{"code": "x"}`)
	if err != nil || !res.IsError {
		t.Fatalf("raised code: err %v, IsError %v (want nil, true)", err, res.IsError)
	}
	if want := "[error]\nNameError: name 'x' is not defined\nNameError                 Traceback\n----> 1 x"; res.Text != want {
		t.Errorf("Text = %q, want %q", res.Text, want)
	}

	fr.res = CodeResult{}
	if res := mustRun(t, tb, ToolExecuteCode, `{"code": "pass"}`); res.Text != "(no output)" {
		t.Errorf("no output: %q", res.Text)
	}

	fr.err = errors.New("kernel died")
	_, err = run(t, tb, ToolExecuteCode, `{"code": "1"}`)
	wantErr(t, err, "execute_code", "kernel died")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tool, _ := tb.Lookup(ToolExecuteCode)
	if _, err := tool.Execute(ctx, json.RawMessage(`{"code": "1"}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}

	noRunner := testToolbox(t, ToolboxOptions{})
	_, err = run(t, noRunner, ToolExecuteCode, `{"code": "1"}`)
	wantErr(t, err, "no backing kernel")
}

func TestOutputCap(t *testing.T) {
	big := strings.Repeat("a", 30_000) + "THE END"
	fr := &fakeRunner{res: CodeResult{Stdout: "START" + big}}
	tb := testToolbox(t, ToolboxOptions{Runner: fr})
	res := mustRun(t, tb, ToolExecuteCode, `{"code": "x"}`)
	if n := len([]rune(res.Text)); n != 20_000 {
		t.Errorf("capped text has %d characters, want 20000", n)
	}
	if !strings.HasPrefix(res.Text, "[stdout]\nSTART") || !strings.HasSuffix(res.Text, "THE END") {
		t.Errorf("cap lost the head or the tail: %q … %q", res.Text[:20], res.Text[len(res.Text)-20:])
	}
	cut := len("[stdout]\nSTART") + len(big) - 20_000
	if !strings.Contains(res.Text, fmt.Sprintf("[... %d characters cut ...]", cut)) {
		t.Errorf("no note of the cut (%d)", cut)
	}

	tests := []struct {
		s     string
		limit int
	}{
		{"short", 10}, {strings.Repeat("é", 100), 50}, {strings.Repeat("x", 1000), 40}, {"abc", 3},
	}
	for _, tt := range tests {
		got := capText(tt.s, tt.limit)
		if n := len([]rune(got)); n > max(tt.limit, len("\n[... 9999 characters cut ...]\n")) {
			t.Errorf("capText(%d runes, %d) has %d runes", len([]rune(tt.s)), tt.limit, n)
		}
		if len([]rune(tt.s)) <= tt.limit && got != tt.s {
			t.Errorf("capText changed a short string")
		}
		if !strings.HasPrefix(tt.s, strings.SplitN(got, "\n", 2)[0]) {
			t.Errorf("capText(%q) = %q: bad head", tt.s, got)
		}
	}
}

func TestReadFile(t *testing.T) {
	tb := testToolbox(t, ToolboxOptions{MaxReadBytes: 40})
	root := tb.Workspace().Root()
	var lines []string
	for i := 1; i <= 10; i++ {
		lines = append(lines, fmt.Sprintf("line%d", i))
	}
	mkfiles(t, root, map[string]string{
		"ten.txt":    strings.Join(lines, "\n") + "\n",
		"crlf.txt":   "a\r\nb\r\n",
		"empty.txt":  "",
		"bin.dat":    "ab\x00cd",
		"secret.txt": "s3cr3t",
	})
	tests := []struct {
		name, input, want string
	}{
		{"whole", `{"path": "notes.md"}`, "1 | hello"},
		{"crlf", `{"path": "crlf.txt"}`, "1 | a\n2 | b"},
		{"empty", `{"path": "empty.txt"}`, "[empty file]"},
		{"range", `{"path": "ten.txt", "start_line": 3, "end_line": 4}`, "[lines 3-4]\n3 | line3\n4 | line4"},
		{"from to end", `{"path": "ten.txt", "start_line": 9}`, "[lines 9-10 of 10]\n9 | line9\n10 | line10"},
		{"past the end", `{"path": "ten.txt", "start_line": 20}`, "[the file has 10 lines; none in the range 20-"},
		{"read cap", `{"path": "ten.txt"}`, "[lines 1-4; stopped at the read limit of 40 characters: use start_line=5 to read on]\n1 | line1\n"},
		{"via symlink inside", `{"path": "in_file"}`, "1 | print(1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, tb, ToolReadFile, tt.input)
			if !strings.HasPrefix(res.Text, tt.want) {
				t.Errorf("Text = %q, want prefix %q", res.Text, tt.want)
			}
		})
	}
	errs := []struct{ name, input, want string }{
		{"missing", `{"path": "nope.txt"}`, `"nope.txt": does not exist`},
		{"dir", `{"path": "src"}`, "is a directory"},
		{"binary", `{"path": "bin.dat"}`, "binary file"},
		{"bad range", `{"path": "ten.txt", "start_line": 5, "end_line": 2}`, "end_line 2 is before start_line 5"},
		{"escape", `{"path": "../x"}`, "escapes the workspace"},
		{"symlink out", `{"path": "out_file"}`, "symlink leads outside"},
		{"protected", `{"path": "secret.txt"}`, "protected"},
		{"protected via symlink name", `{"path": ".env"}`, "protected"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, tb, ToolReadFile, tt.input)
			wantErr(t, err, tt.want)
		})
	}
}

func TestListFiles(t *testing.T) {
	tb := testToolbox(t, ToolboxOptions{})
	root := tb.Workspace().Root()
	mkfiles(t, root, map[string]string{".git/config": "x", ".git/objects/ab": "x", ".gitignore": "*.pyc\n", "src/pkg/mod.py": ""})

	res := mustRun(t, tb, ToolListFiles, `{"path": "."}`)
	want := []string{".env@", ".gitignore", "config/", "dangling@", "data/", "gitcfg@", "in_dir@", "in_file@",
		"notes.md", "out_dir@", "out_file@", "src/"}
	if got := strings.Split(res.Text, "\n"); !slices.Equal(got, want) {
		t.Errorf("list . =\n%v\nwant\n%v", got, want)
	}
	res = mustRun(t, tb, ToolListFiles, `{"path": "src", "recursive": true}`)
	if want := "src/main.py\nsrc/pkg/\nsrc/pkg/mod.py"; res.Text != want {
		t.Errorf("list -r src = %q, want %q", res.Text, want)
	}
	res = mustRun(t, tb, ToolListFiles, `{"path": ".", "recursive": true}`)
	if strings.Contains(res.Text, ".git/") || strings.Contains(res.Text, "dir/f.txt") {
		t.Errorf("recursive listing shows .git or follows a symlink out:\n%s", res.Text)
	}
	if res := mustRun(t, tb, ToolListFiles, `{"path": "data"}`); res.Text != "(empty directory)" {
		t.Errorf("empty dir: %q", res.Text)
	}
	if res := mustRun(t, tb, ToolListFiles, `{"path": "in_dir"}`); res.Text != "src/main.py\nsrc/pkg/" {
		t.Errorf("symlinked dir inside: %q", res.Text)
	}

	capped := testToolbox(t, ToolboxOptions{Workspace: tb.Workspace(), MaxEntries: 3})
	res = mustRun(t, capped, ToolListFiles, `{"path": "."}`)
	if got := strings.Split(res.Text, "\n"); len(got) != 4 || got[3] != "[listing stopped after 3 entries; list a subdirectory]" {
		t.Errorf("capped listing: %q", res.Text)
	}

	for input, want := range map[string]string{
		`{"path": "notes.md"}`: "not a directory",
		`{"path": "nope"}`:     "does not exist",
		`{"path": "out_dir"}`:  "symlink leads outside",
		`{"path": ".git"}`:     "protected",
		`{"path": "/"}`:        "outside the workspace",
	} {
		_, err := run(t, tb, ToolListFiles, input)
		wantErr(t, err, want)
	}
}

func TestSearchFiles(t *testing.T) {
	tb := testToolbox(t, ToolboxOptions{})
	root := tb.Workspace().Root()
	mkfiles(t, root, map[string]string{
		"src/util.py":     "def helper():\n    return 42\n",
		"src/readme.txt":  "helper docs\n",
		"my_secrets.py":   "helper_token = 'x'\n",
		".git/HEAD":       "helper\n",
		"bin/blob":        "helper\x00",
		"src/long.py":     "x = '" + strings.Repeat("y", 400) + "' # helper\n",
		"notes/helper.md": "nothing\n",
	})
	res := mustRun(t, tb, ToolSearchFiles, `{"path": ".", "regex": "helper", "file_pattern": "*.py"}`)
	lines := strings.Split(res.Text, "\n")
	if len(lines) != 2 || lines[0] != "src/long.py:1: x = '"+strings.Repeat("y", 295)+"…" || lines[1] != "src/util.py:1: def helper():" {
		t.Errorf("search *.py =\n%s", res.Text)
	}
	res = mustRun(t, tb, ToolSearchFiles, `{"path": "src", "regex": "^helper"}`)
	if res.Text != "src/readme.txt:1: helper docs" {
		t.Errorf("search src = %q", res.Text)
	}
	res = mustRun(t, tb, ToolSearchFiles, `{"path": ".", "regex": "helper"}`)
	for _, bad := range []string{".git", "my_secrets", "bin/blob", "out_"} {
		if strings.Contains(res.Text, bad) {
			t.Errorf("search shows %s:\n%s", bad, res.Text)
		}
	}
	res = mustRun(t, tb, ToolSearchFiles, `{"path": ".", "regex": "zzz_nothing"}`)
	if !strings.HasPrefix(res.Text, "No matches (") {
		t.Errorf("no match: %q", res.Text)
	}
	capped := testToolbox(t, ToolboxOptions{Workspace: tb.Workspace(), MaxMatches: 1})
	res = mustRun(t, capped, ToolSearchFiles, `{"path": ".", "regex": "helper"}`)
	if !strings.HasSuffix(res.Text, "[search stopped after 1 matches; narrow the path, regex or file_pattern]") ||
		strings.Count(res.Text, "\n") != 1 {
		t.Errorf("capped search: %q", res.Text)
	}
	_, err := run(t, tb, ToolSearchFiles, `{"path": ".", "regex": "("}`)
	wantErr(t, err, "invalid regex")
	_, err = run(t, tb, ToolSearchFiles, `{"path": ".", "regex": "x", "file_pattern": "["}`)
	wantErr(t, err, "invalid file_pattern")
	_, err = run(t, tb, ToolSearchFiles, `{"path": "out_dir", "regex": "x"}`)
	wantErr(t, err, "symlink leads outside")
}

func TestWriteFile(t *testing.T) {
	tb := testToolbox(t, ToolboxOptions{})
	root := tb.Workspace().Root()
	res := mustRun(t, tb, ToolWriteFile, `{"path": "out/deep/new.py", "content": "a\nb\n"}`)
	if res.Text != "Created out/deep/new.py (4 bytes, 2 lines)." {
		t.Errorf("Text = %q", res.Text)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "out", "deep", "new.py")); string(b) != "a\nb\n" {
		t.Errorf("content = %q", b)
	}
	if err := os.Chmod(filepath.Join(root, "notes.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	res = mustRun(t, tb, ToolWriteFile, `{"path": "notes.md", "content": "new"}`)
	if res.Text != "Overwrote notes.md (3 bytes, 1 lines)." {
		t.Errorf("Text = %q", res.Text)
	}
	if fi, _ := os.Stat(filepath.Join(root, "notes.md")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode changed to %v", fi.Mode().Perm())
	}
	mustRun(t, tb, ToolWriteFile, `{"path": "in_dir/via_link.py", "content": "x"}`)
	if _, err := os.Stat(filepath.Join(root, "src", "via_link.py")); err != nil {
		t.Errorf("write through an inside symlink: %v", err)
	}
	for input, want := range map[string]string{
		`{"path": "src", "content": "x"}`:                  "is a directory",
		`{"path": "../escape.txt", "content": "x"}`:        "escapes the workspace",
		`{"path": "out_dir/new.txt", "content": "x"}`:      "symlink leads outside",
		`{"path": "out_dir/a/b/new.txt", "content": ""}`:   "symlink leads outside",
		`{"path": "dangling", "content": "x"}`:             "dangling symlink",
		`{"path": ".env.local", "content": "x"}`:           "protected",
		`{"path": ".git/hooks/pre-commit", "content": ""}`: "protected",
	} {
		_, err := run(t, tb, ToolWriteFile, input)
		wantErr(t, err, want)
	}
}

func TestEditFile(t *testing.T) {
	tb := testToolbox(t, ToolboxOptions{MaxFileBytes: 100})
	root := tb.Workspace().Root()
	mkfiles(t, root, map[string]string{
		"a.py":   "x = 1\ny = 1\nz = 2\n",
		"big.py": strings.Repeat("#", 200),
	})
	read := func() string {
		b, _ := os.ReadFile(filepath.Join(root, "a.py"))
		return string(b)
	}
	res := mustRun(t, tb, ToolEditFile, `{"path": "a.py", "search": "z = 2", "replace": "z = 3"}`)
	if res.Text != "Replaced 1 occurrence in a.py." || read() != "x = 1\ny = 1\nz = 3\n" {
		t.Errorf("edit: %q, file %q", res.Text, read())
	}
	_, err := run(t, tb, ToolEditFile, `{"path": "a.py", "search": "= 1", "replace": "= 0"}`)
	wantErr(t, err, "search text found 2 times (lines 1, 2)", "replace_all")
	_, err = run(t, tb, ToolEditFile, `{"path": "a.py", "search": "w = 9", "replace": ""}`)
	wantErr(t, err, "search text not found")
	_, err = run(t, tb, ToolEditFile, `{"path": "a.py", "search": "  z = 3  ", "replace": ""}`)
	wantErr(t, err, "different leading or trailing whitespace")
	if read() != "x = 1\ny = 1\nz = 3\n" {
		t.Errorf("failed edits changed the file: %q", read())
	}
	res = mustRun(t, tb, ToolEditFile, `{"path": "a.py", "search": "= 1", "replace": "= 0", "replace_all": true}`)
	if res.Text != "Replaced 2 occurrences in a.py." || read() != "x = 0\ny = 0\nz = 3\n" {
		t.Errorf("replace_all: %q, file %q", res.Text, read())
	}
	for input, want := range map[string]string{
		`{"path": "big.py", "search": "#", "replace": ""}`:      "file too large",
		`{"path": "nope.py", "search": "a", "replace": ""}`:     "does not exist",
		`{"path": "a.py", "search": "", "replace": "x"}`:        "empty",
		`{"path": "out_file", "search": "o", "replace": "x"}`:   "symlink leads outside",
		`{"path": "gitcfg", "search": "o", "replace": "x"}`:     "dangling symlink",
		`{"path": "/etc/hosts", "search": "o", "replace": "x"}`: "outside the workspace",
	} {
		_, err := run(t, tb, ToolEditFile, input)
		wantErr(t, err, want)
	}
}

func TestInteractionTools(t *testing.T) {
	tb := testToolbox(t, ToolboxOptions{})
	res := mustRun(t, tb, ToolAskFollowupQuestion, `{"question": "Which file?", "suggestions": ["a.py", "b.py"]}`)
	if res.Followup == nil || res.Followup.Question != "Which file?" || !slices.Equal(res.Followup.Suggestions, []string{"a.py", "b.py"}) {
		t.Errorf("Followup = %+v", res.Followup)
	}
	if res.Text != "Which file?\nSuggestions: a.py | b.py" {
		t.Errorf("Text = %q", res.Text)
	}
	res = mustRun(t, tb, ToolAskFollowupQuestion, `{"question": "Why?"}`)
	if res.Followup == nil || res.Followup.Suggestions != nil {
		t.Errorf("no suggestions: %+v", res.Followup)
	}
	res = mustRun(t, tb, ToolAttemptCompletion, `{"result": "Done: 3 plots."}`)
	if res.Completion == nil || res.Completion.Result != "Done: 3 plots." {
		t.Errorf("Completion = %+v", res.Completion)
	}
	res = mustRun(t, tb, ToolProposeCell, `{"code": "df.plot()"}`)
	if res.SetNextInput != "df.plot()" || res.IsError {
		t.Errorf("propose_cell = %+v", res)
	}
}

func TestImageSummary(t *testing.T) {
	for im, want := range map[Image]string{
		{MIME: "image/png", Width: 640, Height: 480, Bytes: 23 * 1024}: "[image/png 640x480, 23 KB]",
		{MIME: "image/jpeg", Bytes: 3 << 20}:                           "[image/jpeg, 3.0 MB]",
		{Bytes: 10}:                                                    "[image, 10 B]",
	} {
		if got := im.Summary(); got != want {
			t.Errorf("Summary(%+v) = %q, want %q", im, got, want)
		}
	}
}

// kernelSource offers one server's execute_code, as the notebook's live
// kernel is handed to an ACP agent.
type kernelSource struct{ server string }

func (k kernelSource) tool() SourceTool {
	return SourceTool{Spec: provider.Tool{Name: ExternalPrefix + k.server + "__execute_code", Description: "run code in the notebook's kernel",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string"}}}`)}, Server: k.server, Tool: "execute_code"}
}
func (k kernelSource) Tools(context.Context) []SourceTool { return []SourceTool{k.tool()} }
func (k kernelSource) Lookup(_ context.Context, name string) (SourceTool, bool) {
	return k.tool(), name == k.tool().Spec.Name
}
func (k kernelSource) Call(context.Context, string, json.RawMessage, func(string)) (Result, error) {
	return Result{Text: "ran in the notebook"}, nil
}

// TestOwnCodeToolStepsAside: when a client hands over the user's kernel as
// an MCP server (KernelServers) that offers execute_code, the toolbox's own
// execute_code is not offered, and a call of it runs nothing and names the
// tool to use; a server the user configured does not make it step aside.
func TestOwnCodeToolStepsAside(t *testing.T) {
	for _, tt := range []struct {
		name    string
		servers []string
		aside   bool
	}{
		{"the client's kernel", []string{"agentkernel"}, true},
		{"a server of the user's own", nil, false},
		{"another client server", []string{"editor"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fr := &fakeRunner{}
			tb := testToolbox(t, ToolboxOptions{Runner: fr, Source: kernelSource{"agentkernel"}, KernelServers: tt.servers})
			var names []string
			for _, pt := range tb.Tools(context.Background()) {
				names = append(names, pt.Name)
			}
			if slices.Contains(names, ToolExecuteCode) == tt.aside || !slices.Contains(names, "mcp__agentkernel__execute_code") {
				t.Errorf("offered %v", names)
			}
			res, err := run(t, tb, ToolExecuteCode, `{"code": "x = 1"}`)
			if tt.aside {
				if err == nil || !strings.Contains(res.Text, "call mcp__agentkernel__execute_code") || len(fr.code) != 0 {
					t.Errorf("own execute_code: %q %v; ran %q", res.Text, err, fr.code)
				}
			} else if err != nil || len(fr.code) != 1 {
				t.Errorf("own execute_code: %q %v; ran %q", res.Text, err, fr.code)
			}
		})
	}
}
