package notebooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// MaxSize caps the size of a notebook Read accepts (1 GiB).
const MaxSize = 1 << 30

// FormatError reports what is wrong in a notebook: Cell is the index of the
// offending cell (-1 when the problem is outside the cells), ID its id when
// known, Field the JSON path of the field within the cell (or the notebook),
// Reason what is wrong. Read wraps it; get it with errors.As.
type FormatError struct {
	Cell   int
	ID     string
	Field  string
	Reason string
}

func (e *FormatError) Error() string {
	var sb strings.Builder
	if e.Cell >= 0 {
		sb.WriteString(CellLabel(e.Cell, e.ID))
		sb.WriteString(": ")
	}
	if e.Field != "" {
		sb.WriteString(e.Field)
		sb.WriteString(": ")
	}
	sb.WriteString(e.Reason)
	return sb.String()
}

// ReadFile reads the notebook at path. See [Parse].
func ReadFile(path string) (*Notebook, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("notebooks: read: %w", err)
	}
	defer f.Close()
	b, err := readAll(f)
	if err != nil {
		return nil, fmt.Errorf("notebooks: read %s: %w", path, err)
	}
	nb, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("notebooks: read %s: %w", path, err)
	}
	return nb, nil
}

func readAll(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSize {
		return nil, fmt.Errorf("notebook larger than %d bytes", MaxSize)
	}
	return b, nil
}

// Parse decodes an nbformat v4 notebook (minor versions 0 to 5; later minor
// versions are read the same way). Sources, stream texts and the string
// values of mime bundles may be strings or lists of strings; fields this
// package does not interpret are kept. A 4.5 notebook's cells without an id
// get a fresh one. Anything malformed gives an error wrapping a
// *[FormatError] that names the cell and the field, or a *json.SyntaxError
// with the line and column for broken JSON.
func Parse(b []byte) (*Notebook, error) {
	nb, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("notebooks: read: %w", err)
	}
	return nb, nil
}

func parse(b []byte) (*Notebook, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(b, se.Offset)
			return nil, fmt.Errorf("invalid JSON at line %d, column %d: %w", line, col, err)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, &FormatError{Cell: -1, Reason: "want a JSON object, got " + te.Value}
		}
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if top == nil {
		return nil, &FormatError{Cell: -1, Reason: "want a JSON object, got null"}
	}
	p := parser{cell: -1}
	nb := &Notebook{}
	var ok bool
	if nb.Nbformat, ok = p.int(top, "nbformat", true); !ok {
		return nil, p.err
	}
	if nb.Nbformat != Major {
		return nil, p.fail("nbformat", "unsupported version %d (want %d)", nb.Nbformat, Major)
	}
	if nb.NbformatMinor, ok = p.int(top, "nbformat_minor", true); !ok {
		return nil, p.err
	}
	if nb.NbformatMinor < 0 {
		return nil, p.fail("nbformat_minor", "negative (%d)", nb.NbformatMinor)
	}
	if nb.Metadata, ok = p.object(top, "metadata", ""); !ok {
		return nil, p.err
	}
	if nb.Metadata == nil {
		nb.Metadata = Metadata{}
	}
	rawCells, present := top["cells"]
	if !present {
		return nil, p.fail("cells", "missing")
	}
	var cells []json.RawMessage
	if err := json.Unmarshal(rawCells, &cells); err != nil || isNull(rawCells) {
		return nil, p.fail("cells", "want a list, got %s", kind(rawCells))
	}
	for k, v := range top {
		switch k {
		case "nbformat", "nbformat_minor", "metadata", "cells":
		default:
			if nb.Extra == nil {
				nb.Extra = make(map[string]json.RawMessage)
			}
			nb.Extra[k] = v
		}
	}
	nb.Cells = make([]*Cell, 0, len(cells))
	seen := make(map[string]int, len(cells))
	for i, raw := range cells {
		c, err := parseCell(i, raw, nb.NbformatMinor)
		if err != nil {
			return nil, err
		}
		if c.ID != "" {
			if j, dup := seen[c.ID]; dup {
				return nil, &FormatError{Cell: i, ID: c.ID, Field: "id", Reason: fmt.Sprintf("duplicate of cell %d", j)}
			}
			seen[c.ID] = i
		}
		nb.Cells = append(nb.Cells, c)
	}
	nb.ensureIDs()
	return nb, nil
}

// position turns a byte offset into a 1-based line and column.
func position(b []byte, off int64) (line, col int) {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	before := b[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	if col == 0 {
		col = 1
	}
	return line, col
}

// parser builds FormatErrors for one cell (cell -1: the notebook).
type parser struct {
	cell int
	id   string
	err  error
}

func (p *parser) fail(field, format string, args ...any) error {
	p.err = &FormatError{Cell: p.cell, ID: p.id, Field: field, Reason: fmt.Sprintf(format, args...)}
	return p.err
}

// kind names the JSON type of raw for messages.
func kind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// int decodes the integer m[key]; required says whether it may be missing.
func (p *parser) int(m map[string]json.RawMessage, key string, required bool) (int, bool) {
	return p.intAt(m, key, key, required)
}

func (p *parser) intAt(m map[string]json.RawMessage, key, field string, required bool) (int, bool) {
	raw, ok := m[key]
	if !ok {
		if required {
			p.fail(field, "missing")
			return 0, false
		}
		return 0, true
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(raw)))
	if err != nil {
		p.fail(field, "want an integer, got %s", kind(raw))
		return 0, false
	}
	return n, true
}

// string decodes the string m[key] (a missing key is an error when required).
func (p *parser) string(m map[string]json.RawMessage, key, field string, required bool) (string, bool) {
	raw, ok := m[key]
	if !ok {
		if required {
			p.fail(field, "missing")
			return "", false
		}
		return "", true
	}
	var s string
	if isNull(raw) || json.Unmarshal(raw, &s) != nil {
		p.fail(field, "want a string, got %s", kind(raw))
		return "", false
	}
	return s, true
}

// multiline decodes a string or a list of strings (joined).
func (p *parser) multiline(m map[string]json.RawMessage, key, field string) (string, bool) {
	raw, ok := m[key]
	if !ok {
		p.fail(field, "missing")
		return "", false
	}
	s, ok := MultilineValue(raw)
	if !ok {
		p.fail(field, "want a string or a list of strings, got %s", kind(raw))
	}
	return s, ok
}

// MultilineValue decodes nbformat's multiline string: a JSON string or a
// list of strings joined; false for anything else.
func MultilineValue(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	case '[':
		var lines []*string // nil marks a null element, which is not a line
		if json.Unmarshal(raw, &lines) != nil {
			return "", false
		}
		var sb strings.Builder
		for _, l := range lines {
			if l == nil {
				return "", false
			}
			sb.WriteString(*l)
		}
		return sb.String(), true
	}
	return "", false
}

// object decodes the JSON object m[key]; a missing key gives nil.
func (p *parser) object(m map[string]json.RawMessage, key, prefix string) (map[string]json.RawMessage, bool) {
	raw, ok := m[key]
	if !ok {
		return nil, true
	}
	var obj map[string]json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &obj) != nil {
		p.fail(prefix+key, "want an object, got %s", kind(raw))
		return nil, false
	}
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	return obj, true
}

// mimeBundle decodes a mime bundle at field, joining multiline values.
func (p *parser) mimeBundle(raw json.RawMessage, field string) (MimeBundle, bool) {
	var obj map[string]json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &obj) != nil {
		p.fail(field, "want an object, got %s", kind(raw))
		return nil, false
	}
	b := make(MimeBundle, len(obj))
	for mime, v := range obj {
		if IsJSONMime(mime) {
			b[mime] = v
			continue
		}
		s, ok := MultilineValue(v)
		if !ok {
			p.fail(field+"["+strconv.Quote(mime)+"]", "want a string or a list of strings, got %s", kind(v))
			return nil, false
		}
		b.SetText(mime, s)
	}
	return b, true
}

// parseCell decodes the cell at index of a notebook's cells: the fields
// every cell has, then those of its type. The fields nbformat does not
// define for its type are kept in Extra.
func parseCell(index int, raw json.RawMessage, minor int) (*Cell, error) {
	p := parser{cell: index}
	var m map[string]json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &m) != nil {
		return nil, p.fail("", "want an object, got %s", kind(raw))
	}
	c, err := p.cellBase(m)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{"id": true, "cell_type": true, "source": true, "metadata": true}
	switch c.CellType {
	case Code:
		known["outputs"], known["execution_count"] = true, true
		err = p.codeFields(c, m)
	case Markdown, Raw:
		known["attachments"] = true
		err = p.attachments(c, m)
	}
	if err != nil {
		return nil, err
	}
	c.Extra = extraFields(m, known)
	return c, nil
}

// cellBase decodes the fields every cell has: id, cell_type, source and
// metadata. From the id on, p's errors name it.
func (p *parser) cellBase(m map[string]json.RawMessage) (*Cell, error) {
	c := &Cell{}
	var ok bool
	if c.ID, ok = p.string(m, "id", "id", false); !ok {
		return nil, p.err
	}
	p.id = c.ID
	if _, has := m["id"]; has && !cellIDRe.MatchString(c.ID) {
		return nil, p.fail("id", "invalid %q (want 1 to 64 of a-z A-Z 0-9 - _)", c.ID)
	}
	ct, ok := p.string(m, "cell_type", "cell_type", true)
	if !ok {
		return nil, p.err
	}
	c.CellType = CellType(ct)
	switch c.CellType {
	case Code, Markdown, Raw:
	default:
		return nil, p.fail("cell_type", "unknown %q (want code, markdown or raw)", ct)
	}
	if c.Source, ok = p.multiline(m, "source", "source"); !ok {
		return nil, p.err
	}
	if c.Metadata, ok = p.object(m, "metadata", ""); !ok {
		return nil, p.err
	}
	if c.Metadata == nil {
		c.Metadata = Metadata{}
	}
	return c, nil
}

// codeFields decodes a code cell's execution_count (null or absent is
// none) and outputs (absent is none).
func (p *parser) codeFields(c *Cell, m map[string]json.RawMessage) error {
	if ec, has := m["execution_count"]; has && !isNull(ec) {
		n, ok := p.int(m, "execution_count", false)
		if !ok {
			return p.err
		}
		if n < 0 {
			return p.fail("execution_count", "negative (%d)", n)
		}
		c.ExecutionCount = &n
	}
	c.Outputs = []*Output{}
	rawOuts, has := m["outputs"]
	if !has {
		return nil
	}
	var outs []json.RawMessage
	if isNull(rawOuts) || json.Unmarshal(rawOuts, &outs) != nil {
		return p.fail("outputs", "want a list, got %s", kind(rawOuts))
	}
	for j, ro := range outs {
		o, err := p.output(ro, fmt.Sprintf("outputs[%d]", j))
		if err != nil {
			return err
		}
		c.Outputs = append(c.Outputs, o)
	}
	return nil
}

// attachments decodes a markdown or raw cell's attachments, if it has any.
func (p *parser) attachments(c *Cell, m map[string]json.RawMessage) error {
	rawAtt, has := m["attachments"]
	if !has {
		return nil
	}
	var att map[string]json.RawMessage
	if isNull(rawAtt) || json.Unmarshal(rawAtt, &att) != nil {
		return p.fail("attachments", "want an object, got %s", kind(rawAtt))
	}
	c.Attachments = make(map[string]MimeBundle, len(att))
	for name, v := range att {
		b, ok := p.mimeBundle(v, "attachments["+strconv.Quote(name)+"]")
		if !ok {
			return p.err
		}
		c.Attachments[name] = b
	}
	return nil
}

// extraFields are the fields of m that are not known; nil when there are
// none.
func extraFields(m map[string]json.RawMessage, known map[string]bool) map[string]json.RawMessage {
	var extra map[string]json.RawMessage
	for k, v := range m {
		if !known[k] {
			if extra == nil {
				extra = make(map[string]json.RawMessage)
			}
			extra[k] = v
		}
	}
	return extra
}

func (p *parser) output(raw json.RawMessage, field string) (*Output, error) {
	var m map[string]json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &m) != nil {
		return nil, p.fail(field, "want an object, got %s", kind(raw))
	}
	o := &Output{}
	ot, ok := p.string(m, "output_type", field+".output_type", true)
	if !ok {
		return nil, p.err
	}
	o.OutputType = OutputType(ot)
	known := map[string]bool{"output_type": true}
	switch o.OutputType {
	case Stream:
		known["name"], known["text"] = true, true
		if o.Name, ok = p.string(m, "name", field+".name", true); !ok {
			return nil, p.err
		}
		if o.Text, ok = p.multiline(m, "text", field+".text"); !ok {
			return nil, p.err
		}
	case DisplayData, ExecuteResult:
		known["data"], known["metadata"] = true, true
		rawData, has := m["data"]
		if !has {
			return nil, p.fail(field+".data", "missing")
		}
		if o.Data, ok = p.mimeBundle(rawData, field+".data"); !ok {
			return nil, p.err
		}
		if o.Metadata, ok = p.object(m, "metadata", field+"."); !ok {
			return nil, p.err
		}
		if o.Metadata == nil {
			o.Metadata = Metadata{}
		}
		if o.OutputType == ExecuteResult {
			known["execution_count"] = true
			if ec, has := m["execution_count"]; has && !isNull(ec) {
				n, ok := p.intAt(m, "execution_count", field+".execution_count", false)
				if !ok {
					return nil, p.err
				}
				o.ExecutionCount = &n
			}
		}
	case ErrorOutput:
		known["ename"], known["evalue"], known["traceback"] = true, true, true
		if o.Ename, ok = p.string(m, "ename", field+".ename", true); !ok {
			return nil, p.err
		}
		if o.Evalue, ok = p.string(m, "evalue", field+".evalue", true); !ok {
			return nil, p.err
		}
		rawTB, has := m["traceback"]
		if !has {
			return nil, p.fail(field+".traceback", "missing")
		}
		if isNull(rawTB) || json.Unmarshal(rawTB, &o.Traceback) != nil {
			return nil, p.fail(field+".traceback", "want a list of strings, got %s", kind(rawTB))
		}
		if o.Traceback == nil {
			o.Traceback = []string{}
		}
	default:
		return nil, p.fail(field+".output_type", "unknown %q (want stream, display_data, execute_result or error)", ot)
	}
	for k, v := range m {
		if !known[k] {
			if o.Extra == nil {
				o.Extra = make(map[string]json.RawMessage)
			}
			o.Extra[k] = v
		}
	}
	return o, nil
}
