package notebooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/internal/nbtest"
)

// pyRewrite is what nbformat writes for the notebook in a file, without
// the transient-field stripping of nbformat.reads: rejoin then split the
// multiline strings and dump as nbformat's writer does.
const pyRewrite = `import json, sys
from nbformat import from_dict
from nbformat.v4.rwbase import rejoin_lines, split_lines
nb = from_dict(json.load(open(sys.argv[1], encoding="utf-8")))
nb = split_lines(rejoin_lines(nb))
sys.stdout.write(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False, separators=(",", ": ")) + "\n")`

func TestRoundTripMatchesNbformat(t *testing.T) {
	nbtest.HavePython(t)
	for _, name := range []string{"v45_ids.ipynb", "v44_noids.ipynb", "v40_unicode.ipynb"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", name)
			nb, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Marshal(nb)
			if err != nil {
				t.Fatal(err)
			}
			want := nbtest.Python(t, pyRewrite, path)
			if string(got) != want {
				t.Errorf("Marshal differs from nbformat's writer\n%s", firstDiff(string(got), want))
			}
			// Reading our own output gives the same notebook and bytes.
			nb2, err := Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			if len(nb2.Cells) != len(nb.Cells) || nb2.Cells[0].Source != nb.Cells[0].Source {
				t.Error("Parse(Marshal(nb)) lost cells")
			}
			again, _ := Marshal(nb2)
			if !bytes.Equal(got, again) {
				t.Error("second Marshal differs")
			}
			writeTemp(t, nb, name)
		})
	}
}

func firstDiff(got, want string) string {
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			return "line " + itoa(i+1) + ":\n got: " + g + "\nwant: " + w
		}
	}
	return "(no line differs)"
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestReadFields(t *testing.T) {
	nb, err := ReadFile("testdata/v45_ids.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	if nb.Nbformat != 4 || nb.NbformatMinor != 5 || len(nb.Cells) != 5 {
		t.Fatalf("version %d.%d, %d cells", nb.Nbformat, nb.NbformatMinor, len(nb.Cells))
	}
	md := nb.Cells[0]
	if md.CellType != Markdown || md.ID != "intro-1" || !strings.HasPrefix(md.Source, "# Title\n\nSome") {
		t.Errorf("markdown cell = %+v", md)
	}
	if png, ok := md.Attachments["dot.png"].Text("image/png"); !ok || !strings.HasPrefix(png, "iVBOR") {
		t.Errorf("attachment = %q", png)
	}
	code := nb.Cells[1]
	if code.Source != "import sys\nprint('hello')\n42" || *code.ExecutionCount != 1 || len(code.Outputs) != 4 {
		t.Errorf("code cell = %+v", code)
	}
	if o := code.Outputs[0]; o.OutputType != Stream || o.Name != "stdout" || o.Text != "hello\nworld\n" {
		t.Errorf("stream = %+v", o)
	}
	dd := code.Outputs[2]
	if s, _ := dd.Data.Text("text/plain"); s != "<Figure>" {
		t.Errorf("text/plain = %q", s)
	}
	if got := string(dd.Data["application/vnd.custom+json"]); got != `["x", "y"]` {
		t.Errorf("JSON mime kept raw: %s", got)
	}
	if s, _ := code.Outputs[3].Data.Text("text/html"); s != "<b>bold</b>\n<i>it</i>" {
		t.Errorf("text/html = %q", s)
	}
	e := nb.Cells[2].Outputs[0]
	if e.OutputType != ErrorOutput || e.Ename != "ZeroDivisionError" || len(e.Traceback) != 2 {
		t.Errorf("error = %+v", e)
	}
	if nb.Cells[4].ExecutionCount != nil || nb.Cells[4].Source != "" {
		t.Errorf("empty cell = %+v", nb.Cells[4])
	}
	ks, ok := nb.Kernelspec()
	if !ok || ks.Name != "python3" {
		t.Errorf("kernelspec = %+v", ks)
	}
	if _, ok := nb.Metadata["widgets"]; !ok {
		t.Error("widgets metadata lost")
	}
}

func TestCellIDs(t *testing.T) {
	nb, err := ReadFile("testdata/v45_missing_ids.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	if nb.Cells[0].ID != "keep-me" {
		t.Errorf("kept id = %q", nb.Cells[0].ID)
	}
	ids := map[string]bool{}
	for i, c := range nb.Cells {
		if !cellIDRe.MatchString(c.ID) || (i > 0 && len(c.ID) < 8) {
			t.Errorf("cell %d: id %q", i, c.ID)
		}
		if ids[c.ID] {
			t.Errorf("cell %d: duplicate id %q", i, c.ID)
		}
		ids[c.ID] = true
	}
	writeTemp(t, nb, "ids.ipynb")

	old, err := ReadFile("testdata/v44_noids.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range old.Cells {
		if c.ID != "" {
			t.Errorf("4.4 cell %d got id %q", i, c.ID)
		}
	}
	b, _ := Marshal(old)
	if bytes.Contains(b, []byte(`"id"`)) {
		t.Error("4.4 notebook written with ids")
	}
}

func TestReadErrors(t *testing.T) {
	good, err := os.ReadFile("testdata/v45_ids.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	cell := func(c string) string {
		return `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
			{"cell_type": "markdown", "id": "m0", "metadata": {}, "source": ""}, ` + c + `]}`
	}
	tests := []struct {
		name, in, want string
		cell           int
	}{
		{"empty", ``, "invalid JSON at line 1, column 1: unexpected end of JSON input", -1},
		{"truncated", string(good[:300]), "invalid JSON at line", -1},
		{"garbage", "{\n \"cells\": [\n  x]}", "invalid JSON at line 3, column 3: invalid character 'x'", -1},
		{"array", `[]`, "want a JSON object, got array", -1},
		{"null", `null`, "want a JSON object, got null", -1},
		{"nbformat 3", `{"nbformat": 3, "nbformat_minor": 0, "worksheets": []}`, "nbformat: unsupported version 3 (want 4)", -1},
		{"nbformat string", `{"nbformat": "4", "nbformat_minor": 0, "cells": []}`, "nbformat: want an integer, got a string", -1},
		{"no nbformat", `{"cells": []}`, "nbformat: missing", -1},
		{"no minor", `{"nbformat": 4, "cells": []}`, "nbformat_minor: missing", -1},
		{"no cells", `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}}`, "cells: missing", -1},
		{"cells object", `{"nbformat": 4, "nbformat_minor": 5, "cells": {}}`, "cells: want a list, got an object", -1},
		{"metadata list", `{"nbformat": 4, "nbformat_minor": 5, "metadata": [], "cells": []}`, "metadata: want an object, got a list", -1},
		{"cell not object", cell(`3`), "cell 1: want an object, got a number", 1},
		{"missing source", cell(`{"cell_type": "code", "id": "abc", "metadata": {}, "outputs": [], "execution_count": null}`),
			`cell 1 (id "abc"): source: missing`, 1},
		{"source number", cell(`{"cell_type": "raw", "id": "abc", "metadata": {}, "source": 5}`),
			`cell 1 (id "abc"): source: want a string or a list of strings, got a number`, 1},
		{"source mixed list", cell(`{"cell_type": "raw", "id": "abc", "metadata": {}, "source": ["a", 1]}`),
			`cell 1 (id "abc"): source: want a string or a list of strings, got a list`, 1},
		{"source null line", cell(`{"cell_type": "raw", "id": "abc", "metadata": {}, "source": ["a", null]}`),
			`cell 1 (id "abc"): source: want a string or a list of strings, got a list`, 1},
		{"unknown cell type", cell(`{"cell_type": "heading", "id": "h", "metadata": {}, "source": ""}`),
			`cell 1 (id "h"): cell_type: unknown "heading"`, 1},
		{"missing cell type", cell(`{"id": "h", "metadata": {}, "source": ""}`), `cell 1 (id "h"): cell_type: missing`, 1},
		{"bad id", cell(`{"cell_type": "raw", "id": "a b", "metadata": {}, "source": ""}`), `cell 1 (id "a b"): id: invalid "a b"`, 1},
		{"id number", cell(`{"cell_type": "raw", "id": 7, "metadata": {}, "source": ""}`), `cell 1: id: want a string, got a number`, 1},
		{"duplicate id", cell(`{"cell_type": "raw", "id": "m0", "metadata": {}, "source": ""}`), `cell 1 (id "m0"): id: duplicate of cell 0`, 1},
		{"bad output_type", cell(`{"cell_type": "code", "id": "abc", "metadata": {}, "execution_count": 1, "source": "",
			"outputs": [{"output_type": "stream", "name": "stdout", "text": ""}, {"output_type": "foo"}]}`),
			`cell 1 (id "abc"): outputs[1].output_type: unknown "foo"`, 1},
		{"output missing type", cell(`{"cell_type": "code", "id": "abc", "metadata": {}, "source": "", "outputs": [{}]}`),
			`cell 1 (id "abc"): outputs[0].output_type: missing`, 1},
		{"stream without name", cell(`{"cell_type": "code", "id": "abc", "metadata": {}, "source": "", "outputs": [{"output_type": "stream", "text": "x"}]}`),
			`cell 1 (id "abc"): outputs[0].name: missing`, 1},
		{"display without data", cell(`{"cell_type": "code", "id": "abc", "metadata": {}, "source": "", "outputs": [{"output_type": "display_data", "metadata": {}}]}`),
			`cell 1 (id "abc"): outputs[0].data: missing`, 1},
		{"bad mime value", cell(`{"cell_type": "code", "id": "abc", "metadata": {}, "source": "", "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"text/plain": 3}}]}`),
			`cell 1 (id "abc"): outputs[0].data["text/plain"]: want a string or a list of strings, got a number`, 1},
		{"traceback string", cell(`{"cell_type": "code", "id": "abc", "metadata": {}, "source": "", "outputs": [{"output_type": "error", "ename": "E", "evalue": "v", "traceback": "tb"}]}`),
			`cell 1 (id "abc"): outputs[0].traceback: want a list of strings, got a string`, 1},
		{"execution_count string", cell(`{"cell_type": "code", "id": "abc", "metadata": {}, "source": "", "outputs": [], "execution_count": "1"}`),
			`cell 1 (id "abc"): execution_count: want an integer, got a string`, 1},
		{"outputs object", cell(`{"cell_type": "code", "id": "abc", "metadata": {}, "source": "", "outputs": {}}`),
			`cell 1 (id "abc"): outputs: want a list, got an object`, 1},
		{"bad attachment", cell(`{"cell_type": "markdown", "id": "abc", "metadata": {}, "source": "", "attachments": {"a.png": {"image/png": 1}}}`),
			`cell 1 (id "abc"): attachments["a.png"]["image/png"]: want a string or a list of strings, got a number`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nb, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("no error; got %d cells", len(nb.Cells))
			}
			if nb != nil {
				t.Error("notebook returned with an error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "notebooks: read: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			var fe *FormatError
			if errors.As(err, &fe) && fe.Cell != tt.cell {
				t.Errorf("FormatError.Cell = %d, want %d", fe.Cell, tt.cell)
			}
		})
	}
}

func TestReadFileErrorNamesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.ipynb")
	os.WriteFile(path, []byte(`{"nbformat": 4, "nbformat_minor": 5, "cells": [{"cell_type": "code"}]}`), 0o644)
	_, err := ReadFile(path)
	if err == nil || !strings.Contains(err.Error(), path+": cell 0: source: missing") {
		t.Errorf("err = %v", err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.ipynb")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.ipynb")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := New()
	bad.Cells = append(bad.Cells, &Cell{ID: "x", CellType: "bogus"})
	err := WriteFile(path, bad)
	if err == nil || !strings.Contains(err.Error(), `cell 0 (id "x"): cell_type: unknown "bogus"`) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("file changed to %q", b)
	}
	good := New()
	good.Cells = append(good.Cells, NewCodeCell("print(1)"))
	if err := WriteFile(path, good); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the old 0600", fi.Mode().Perm())
	}
	// Unwritable directory: an error and nothing left behind.
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o500)
	if os.Geteuid() != 0 {
		if err := WriteFile(filepath.Join(ro, "x.ipynb"), good); err == nil {
			t.Error("write into a read-only dir succeeded")
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	nbtest.Validate(t, path)
}

func TestSplitLines(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", []string{}},
		{"a", []string{"a"}},
		{"a\n", []string{"a\n"}},
		{"a\nb", []string{"a\n", "b"}},
		{"a\r\nb\rc\n\n", []string{"a\r\n", "b\r", "c\n", "\n"}},
		{"x\u2028y\x0bz\x85", []string{"x\u2028", "y\x0b", "z\x85"}},
	}
	for _, tt := range tests {
		if got := splitLines(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitLines(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPyNumber(t *testing.T) {
	for lit, want := range map[string]string{
		"1": "1", "-0": "0", "12345678901234567890": "12345678901234567890",
		"1e2": "100.0", "2.50": "2.5", "1.5e-10": "1.5e-10", "1e16": "1e+16", "1e15": "1000000000000000.0",
		"0.0001": "0.0001", "0.00001": "1e-05", "-0.0": "-0.0", "1E400": "Infinity",
	} {
		if got := pyNumber(lit); got != want {
			t.Errorf("pyNumber(%s) = %s, want %s", lit, got, want)
		}
	}
}

func TestOutputJSON(t *testing.T) {
	o := &Output{OutputType: DisplayData, Data: MimeBundle{}, Metadata: Metadata{}}
	o.Data.SetText("text/plain", "a\nb")
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"data":{"text/plain":["a\n","b"]},"metadata":{},"output_type":"display_data"}` {
		t.Errorf("marshal = %s", b)
	}
	var back Output
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if s, _ := back.Data.Text("text/plain"); s != "a\nb" {
		t.Errorf("unmarshal text = %q", s)
	}
	if err := json.Unmarshal([]byte(`{"output_type":"nope"}`), &back); err == nil || !strings.Contains(err.Error(), `output.output_type: unknown "nope"`) {
		t.Errorf("bad output: %v", err)
	}
}
