package notebooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Marshal encodes nb as Jupyter writes it (nbformat's writes): one-space
// indent, keys sorted, non-ASCII characters kept, multiline strings
// (sources, stream texts, text/* mime values) as lists of lines, and a
// trailing newline. A 4.5 notebook's cells without an id get one first
// (this changes nb). nb is checked with [Notebook.Validate] first.
func Marshal(nb *Notebook) ([]byte, error) {
	nb.ensureIDs()
	if err := nb.Validate(); err != nil {
		return nil, fmt.Errorf("notebooks: write: %w", err)
	}
	var w pyWriter
	if err := w.value(nb.tree(), 0); err != nil {
		return nil, fmt.Errorf("notebooks: write: %w", err)
	}
	w.buf.WriteByte('\n')
	return w.buf.Bytes(), nil
}

// Write writes nb to w (see [Marshal]).
func Write(w io.Writer, nb *Notebook) error {
	b, err := Marshal(nb)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("notebooks: write: %w", err)
	}
	return nil
}

// WriteFile writes nb to path atomically: to a temporary file in the same
// directory, synced, then renamed over path. On any error path is left as
// it was and no temporary file remains. A new file gets mode 0644; an
// existing file keeps its mode.
func WriteFile(path string, nb *Notebook) error {
	b, err := Marshal(nb)
	if err != nil {
		return fmt.Errorf("%w (%s)", err, path)
	}
	tmp, _, err := writeSynced(path, b)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("notebooks: write %s: %w", path, err)
	}
	return nil
}

// writeSynced writes b to a new temporary file beside path, with path's mode
// (0644 when path does not exist), synced, and returns its name and its
// stat after the sync. On an error no temporary file remains.
func writeSynced(path string, b []byte) (string, os.FileInfo, error) {
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return "", nil, fmt.Errorf("notebooks: write %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) (string, os.FileInfo, error) {
		f.Close()
		os.Remove(tmp)
		return "", nil, fmt.Errorf("notebooks: write %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		return fail(err)
	}
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", nil, fmt.Errorf("notebooks: write %s: %w", path, err)
	}
	return tmp, fi, nil
}

// Validate reports the first structural problem of nb as a *[FormatError]:
// a version other than 4, a nil cell, an unknown cell or output type, an
// invalid or (from 4.5) missing or duplicate cell id, outputs or an
// execution count on a cell that is not code, attachments on a code cell.
func (nb *Notebook) Validate() error {
	if nb.Nbformat != Major {
		return &FormatError{Cell: -1, Field: "nbformat", Reason: fmt.Sprintf("unsupported version %d (want %d)", nb.Nbformat, Major)}
	}
	if nb.NbformatMinor < 0 {
		return &FormatError{Cell: -1, Field: "nbformat_minor", Reason: fmt.Sprintf("negative (%d)", nb.NbformatMinor)}
	}
	seen := make(map[string]int, len(nb.Cells))
	for i, c := range nb.Cells {
		if c == nil {
			return &FormatError{Cell: i, Reason: "nil cell"}
		}
		fe := func(field, format string, args ...any) error {
			return &FormatError{Cell: i, ID: c.ID, Field: field, Reason: fmt.Sprintf(format, args...)}
		}
		switch {
		case c.ID != "" && !cellIDRe.MatchString(c.ID):
			return fe("id", "invalid %q (want 1 to 64 of a-z A-Z 0-9 - _)", c.ID)
		case c.ID == "" && nb.NbformatMinor >= 5:
			return fe("id", "missing (required from nbformat 4.5)")
		}
		if c.ID != "" {
			if j, dup := seen[c.ID]; dup {
				return fe("id", "duplicate of cell %d", j)
			}
			seen[c.ID] = i
		}
		switch c.CellType {
		case Code:
			if c.Attachments != nil {
				return fe("attachments", "not allowed on a code cell")
			}
			if c.ExecutionCount != nil && *c.ExecutionCount < 0 {
				return fe("execution_count", "negative (%d)", *c.ExecutionCount)
			}
			for j, o := range c.Outputs {
				if err := o.validate(fmt.Sprintf("outputs[%d]", j)); err != nil {
					err.Cell, err.ID = i, c.ID
					return err
				}
			}
		case Markdown, Raw:
			if len(c.Outputs) > 0 {
				return fe("outputs", "not allowed on a %s cell", c.CellType)
			}
			if c.ExecutionCount != nil {
				return fe("execution_count", "not allowed on a %s cell", c.CellType)
			}
		default:
			return fe("cell_type", "unknown %q (want code, markdown or raw)", c.CellType)
		}
	}
	return nil
}

func (o *Output) validate(field string) *FormatError {
	if o == nil {
		return &FormatError{Field: field, Reason: "nil output"}
	}
	switch o.OutputType {
	case Stream, DisplayData, ExecuteResult, ErrorOutput:
	default:
		return &FormatError{Field: field + ".output_type", Reason: fmt.Sprintf("unknown %q (want stream, display_data, execute_result or error)", o.OutputType)}
	}
	return nil
}

// tree is nb as a JSON tree for pyWriter.
func (nb *Notebook) tree() map[string]any {
	t := extraTree(nb.Extra)
	cells := make([]any, len(nb.Cells))
	for i, c := range nb.Cells {
		cells[i] = c.tree()
	}
	t["cells"] = cells
	t["metadata"] = metaTree(nb.Metadata)
	t["nbformat"] = nb.Nbformat
	t["nbformat_minor"] = nb.NbformatMinor
	return t
}

func (c *Cell) tree() map[string]any {
	t := extraTree(c.Extra)
	t["cell_type"] = string(c.CellType)
	if c.ID != "" {
		t["id"] = c.ID
	}
	t["metadata"] = metaTree(c.Metadata)
	t["source"] = splitLines(c.Source)
	switch c.CellType {
	case Code:
		t["execution_count"] = countTree(c.ExecutionCount)
		outs := make([]any, len(c.Outputs))
		for i, o := range c.Outputs {
			outs[i] = o.tree()
		}
		t["outputs"] = outs
	default:
		if c.Attachments != nil {
			att := make(map[string]any, len(c.Attachments))
			for name, b := range c.Attachments {
				att[name] = bundleTree(b)
			}
			t["attachments"] = att
		}
	}
	return t
}

func (o *Output) tree() map[string]any {
	t := extraTree(o.Extra)
	t["output_type"] = string(o.OutputType)
	switch o.OutputType {
	case Stream:
		t["name"] = o.Name
		t["text"] = splitLines(o.Text)
	case DisplayData, ExecuteResult:
		t["data"] = bundleTree(o.Data)
		t["metadata"] = metaTree(o.Metadata)
		if o.OutputType == ExecuteResult {
			t["execution_count"] = countTree(o.ExecutionCount)
		}
	case ErrorOutput:
		t["ename"] = o.Ename
		t["evalue"] = o.Evalue
		tb := o.Traceback
		if tb == nil {
			tb = []string{}
		}
		t["traceback"] = tb
	}
	return t
}

func extraTree(extra map[string]json.RawMessage) map[string]any {
	t := make(map[string]any, len(extra)+6)
	for k, v := range extra {
		t[k] = v
	}
	return t
}

func metaTree(m Metadata) map[string]any {
	t := make(map[string]any, len(m))
	for k, v := range m {
		t[k] = v
	}
	return t
}

func countTree(n *int) any {
	if n == nil {
		return nil
	}
	return *n
}

// bundleTree splits the string values of text-like mime types into lines,
// as nbformat's split_lines does.
func bundleTree(b MimeBundle) map[string]any {
	t := make(map[string]any, len(b))
	for mime, v := range b {
		if splitMime(mime) {
			var s string
			if json.Unmarshal(v, &s) == nil {
				t[mime] = splitLines(s)
				continue
			}
		}
		t[mime] = v
	}
	return t
}

// MarshalJSON encodes o as an nbformat output object (compact, keys
// sorted, multiline strings as lists of lines).
func (o *Output) MarshalJSON() ([]byte, error) {
	if err := o.validate("output"); err != nil {
		return nil, fmt.Errorf("notebooks: %w", err)
	}
	var w pyWriter
	w.compact = true
	if err := w.value(o.tree(), 0); err != nil {
		return nil, fmt.Errorf("notebooks: encode output: %w", err)
	}
	return w.buf.Bytes(), nil
}

// UnmarshalJSON decodes an nbformat output object, with the checks of Read.
func (o *Output) UnmarshalJSON(b []byte) error {
	p := parser{cell: -1}
	out, err := p.output(b, "output")
	if err != nil {
		return fmt.Errorf("notebooks: %w", err)
	}
	*o = *out
	return nil
}

// splitLines is Python's str.splitlines(keepends=True): the pieces end at
// \n, \r, \r\n, \v, \f, \x1c, \x1d, \x1e, \x85, U+2028 and U+2029. The
// empty string gives an empty list.
func splitLines(s string) []string {
	lines := []string{}
	start := 0
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= 0x80 {
			r, size = decodeRune(s[i:])
		}
		end := -1
		switch r {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			end = i + size
		case '\r':
			end = i + 1
			if i+1 < len(s) && s[i+1] == '\n' {
				end = i + 2
			}
		}
		if end < 0 {
			i += size
			continue
		}
		lines = append(lines, s[start:end])
		start, i = end, end
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}

// pyWriter prints a JSON tree as Python's json.dumps(indent=1,
// sort_keys=True, ensure_ascii=False, separators=(",", ": ")) does, or
// compact with separators (",", ":").
type pyWriter struct {
	buf     bytes.Buffer
	compact bool
}

func (w *pyWriter) newline(depth int) {
	if w.compact {
		return
	}
	w.buf.WriteByte('\n')
	for range depth {
		w.buf.WriteByte(' ')
	}
}

func (w *pyWriter) value(v any, depth int) error {
	switch v := v.(type) {
	case nil:
		w.buf.WriteString("null")
	case bool:
		w.buf.WriteString(strconv.FormatBool(v))
	case int:
		w.buf.WriteString(strconv.Itoa(v))
	case json.Number:
		w.buf.WriteString(pyNumber(string(v)))
	case string:
		w.string(v)
	case []string:
		items := make([]any, len(v))
		for i, s := range v {
			items[i] = s
		}
		return w.list(items, depth)
	case []any:
		return w.list(v, depth)
	case map[string]any:
		return w.object(v, depth)
	case json.RawMessage:
		parsed, err := decodeRaw(v)
		if err != nil {
			return err
		}
		return w.value(parsed, depth)
	default:
		return fmt.Errorf("unsupported value of type %T", v)
	}
	return nil
}

func (w *pyWriter) list(items []any, depth int) error {
	if len(items) == 0 {
		w.buf.WriteString("[]")
		return nil
	}
	w.buf.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			w.buf.WriteByte(',')
		}
		w.newline(depth + 1)
		if err := w.value(it, depth+1); err != nil {
			return err
		}
	}
	w.newline(depth)
	w.buf.WriteByte(']')
	return nil
}

func (w *pyWriter) object(m map[string]any, depth int) error {
	if len(m) == 0 {
		w.buf.WriteString("{}")
		return nil
	}
	keys := sortedKeys(m)
	w.buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			w.buf.WriteByte(',')
		}
		w.newline(depth + 1)
		w.string(k)
		if w.compact {
			w.buf.WriteByte(':')
		} else {
			w.buf.WriteString(": ")
		}
		if err := w.value(m[k], depth+1); err != nil {
			return err
		}
	}
	w.newline(depth)
	w.buf.WriteByte('}')
	return nil
}

// pyNumber formats a JSON number literal as Python's json module writes the
// value it parses from it: integers keep their digits, floats are written
// as repr(float) does (shortest round-trip digits, ".0" for whole numbers,
// exponent form below 1e-4 and from 1e16).
func pyNumber(lit string) string {
	if !strings.ContainsAny(lit, ".eE") {
		if strings.Trim(lit, "-0") == "" {
			return "0"
		}
		return lit
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		if math.IsInf(f, 0) { // out of range: Python writes Infinity
			if f > 0 {
				return "Infinity"
			}
			return "-Infinity"
		}
		return lit
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -1.5e-10
	mant, exp, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exp)
	decpt := x + 1
	if decpt > -4 && decpt <= 16 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	sign := "+"
	if x < 0 {
		sign, x = "-", -x
	}
	return fmt.Sprintf("%se%s%02d", mant, sign, x)
}

const hexDigits = "0123456789abcdef"

// string writes s quoted as Python's json does with ensure_ascii=False;
// invalid UTF-8 becomes U+FFFD.
func (w *pyWriter) string(s string) {
	w.buf.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			switch c {
			case '"':
				w.buf.WriteString(`\"`)
			case '\\':
				w.buf.WriteString(`\\`)
			case '\n':
				w.buf.WriteString(`\n`)
			case '\r':
				w.buf.WriteString(`\r`)
			case '\t':
				w.buf.WriteString(`\t`)
			case '\b':
				w.buf.WriteString(`\b`)
			case '\f':
				w.buf.WriteString(`\f`)
			default:
				if c < 0x20 {
					w.buf.WriteString(`\u00`)
					w.buf.WriteByte(hexDigits[c>>4])
					w.buf.WriteByte(hexDigits[c&0xf])
				} else {
					w.buf.WriteByte(c)
				}
			}
			i++
			continue
		}
		r, size := decodeRune(s[i:])
		if r == runeError && size == 1 {
			w.buf.WriteString("\ufffd")
		} else {
			w.buf.WriteString(s[i : i+size])
		}
		i += size
	}
	w.buf.WriteByte('"')
}

// decodeRaw parses raw JSON into a tree, keeping number literals.
func decodeRaw(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON value: %w", err)
	}
	if dec.More() {
		return nil, errors.New("invalid JSON value: trailing data")
	}
	return v, nil
}

func sortedKeys(m map[string]any) []string {
	// Sorting UTF-8 bytes orders by code point, as Python sorts str keys.
	return slices.Sorted(maps.Keys(m))
}

const runeError = utf8.RuneError

func decodeRune(s string) (rune, int) { return utf8.DecodeRuneInString(s) }
