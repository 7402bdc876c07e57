package notebooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/uuid"
)

// The nbformat version this package writes for new notebooks, and the
// range it reads.
const (
	Major        = 4
	CurrentMinor = 5
)

// CellType is a cell's cell_type.
type CellType string

// The three cell types of nbformat v4.
const (
	Code     CellType = "code"
	Markdown CellType = "markdown"
	Raw      CellType = "raw"
)

// OutputType is an output's output_type.
type OutputType string

// The four output types of nbformat v4.
const (
	Stream        OutputType = "stream"
	DisplayData   OutputType = "display_data"
	ExecuteResult OutputType = "execute_result"
	ErrorOutput   OutputType = "error"
)

// Metadata is a JSON object whose values are kept as raw JSON: whatever this
// package does not interpret goes through a round trip unchanged. A nil
// Metadata is written as {}.
type Metadata map[string]json.RawMessage

// Get decodes the value of key into v and reports whether key was present.
func (m Metadata) Get(key string, v any) (bool, error) {
	raw, ok := m[key]
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("notebooks: metadata %q: %w", key, err)
	}
	return true, nil
}

// Set encodes v as the value of key. m must not be nil.
func (m Metadata) Set(key string, v any) error {
	raw, err := marshalNoEscape(v)
	if err != nil {
		return fmt.Errorf("notebooks: metadata %q: %w", key, err)
	}
	m[key] = raw
	return nil
}

// Clone returns a deep copy of m (nil stays nil).
func (m Metadata) Clone() Metadata { return cloneRaw(m) }

// MimeBundle maps MIME types to data, as display_data, execute_result and
// attachments carry it. Values are raw JSON: for JSON types
// (application/json, application/*+json) any JSON value, kept as is; for
// every other type a JSON string — a list of strings read from a file is
// joined into one string, as nbformat does, and split into lines again on
// write for text/*, image/svg+xml and application/javascript.
type MimeBundle map[string]json.RawMessage

// Text returns the string value of mime, if it has one.
func (b MimeBundle) Text(mime string) (string, bool) {
	raw, ok := b[mime]
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// SetText sets mime to the string s. b must not be nil.
func (b MimeBundle) SetText(mime, s string) {
	raw, _ := marshalNoEscape(s) // a string always encodes
	b[mime] = raw
}

// Clone returns a deep copy of b (nil stays nil).
func (b MimeBundle) Clone() MimeBundle { return cloneRaw(b) }

// IsJSONMime is nbformat's _is_json_mime: values of these types are JSON,
// not multiline strings.
func IsJSONMime(mime string) bool {
	return mime == "application/json" || (strings.HasPrefix(mime, "application/") && strings.HasSuffix(mime, "+json"))
}

// splitMime reports whether nbformat writes string values of mime as a
// list of lines.
func splitMime(mime string) bool {
	return strings.HasPrefix(mime, "text/") || mime == "image/svg+xml" || mime == "application/javascript"
}

// Notebook is an nbformat v4 notebook. The zero value is not useful: use
// [New] or [Read]. A Notebook is a plain value: it is not safe for
// concurrent mutation, and the functions of this package that return a
// notebook return a new one rather than changing their argument (except
// Write, which fills in missing cell ids).
type Notebook struct {
	Nbformat      int
	NbformatMinor int
	Metadata      Metadata
	Cells         []*Cell
	// Extra holds top-level fields this package does not know, kept
	// through a round trip.
	Extra map[string]json.RawMessage
}

// Cell is one cell. Which fields are written depends on CellType: code
// cells have Outputs and ExecutionCount, markdown and raw cells may have
// Attachments.
type Cell struct {
	// ID is the cell id: required by nbformat 4.5 (Read and Write generate
	// one when it is missing), absent before.
	ID       string
	CellType CellType
	// Source is the cell's text; a list of lines read from a file is
	// joined. It is always written as a list of lines, as Jupyter does.
	Source   string
	Metadata Metadata
	// Attachments are the files of a markdown or raw cell by name; nil
	// means the cell has no attachments field.
	Attachments map[string]MimeBundle
	// Outputs of a code cell.
	Outputs []*Output
	// ExecutionCount of a code cell; nil is null (never executed).
	ExecutionCount *int
	// Extra holds fields this package does not know, kept through a round
	// trip.
	Extra map[string]json.RawMessage
}

// Output is one output of a code cell. Which fields are used depends on
// OutputType: Name and Text for stream; Data and Metadata for display_data
// and execute_result, plus ExecutionCount for execute_result; Ename, Evalue
// and Traceback for error.
type Output struct {
	OutputType     OutputType
	Name           string
	Text           string
	Data           MimeBundle
	Metadata       Metadata
	ExecutionCount *int
	Ename          string
	Evalue         string
	Traceback      []string
	// Extra holds fields this package does not know.
	Extra map[string]json.RawMessage
}

// New returns an empty nbformat 4.5 notebook.
func New() *Notebook {
	return &Notebook{Nbformat: Major, NbformatMinor: CurrentMinor, Metadata: Metadata{}}
}

// NewCodeCell returns a code cell with a fresh id.
func NewCodeCell(source string) *Cell {
	return &Cell{ID: NewCellID(), CellType: Code, Source: source, Metadata: Metadata{}}
}

// NewMarkdownCell returns a markdown cell with a fresh id.
func NewMarkdownCell(source string) *Cell {
	return &Cell{ID: NewCellID(), CellType: Markdown, Source: source, Metadata: Metadata{}}
}

// NewCellID returns a random cell id of 8 hexadecimal digits, as nbformat's
// random_cell_id does.
func NewCellID() string {
	u := uuid.New()
	return fmt.Sprintf("%x", u[:4])
}

// cellIDRe is the id pattern of nbformat 4.5.
var cellIDRe = regexp.MustCompile(`^[a-zA-Z0-9-_]{1,64}$`)

// ensureIDs gives every cell without an id a fresh one that no other cell
// uses, when the notebook is 4.5 or later.
func (nb *Notebook) ensureIDs() {
	if nb.Nbformat != Major || nb.NbformatMinor < 5 {
		return
	}
	used := make(map[string]bool, len(nb.Cells))
	for _, c := range nb.Cells {
		if c != nil && c.ID != "" {
			used[c.ID] = true
		}
	}
	for _, c := range nb.Cells {
		if c == nil || c.ID != "" {
			continue
		}
		id := NewCellID()
		for used[id] {
			id = NewCellID()
		}
		used[id] = true
		c.ID = id
	}
}

// Clone returns a deep copy of nb.
func (nb *Notebook) Clone() *Notebook {
	out := &Notebook{
		Nbformat:      nb.Nbformat,
		NbformatMinor: nb.NbformatMinor,
		Metadata:      nb.Metadata.Clone(),
		Extra:         cloneRaw(nb.Extra),
	}
	if nb.Cells != nil {
		out.Cells = make([]*Cell, len(nb.Cells))
		for i, c := range nb.Cells {
			out.Cells[i] = c.Clone()
		}
	}
	return out
}

// Clone returns a deep copy of c.
func (c *Cell) Clone() *Cell {
	if c == nil {
		return nil
	}
	out := *c
	out.Metadata = c.Metadata.Clone()
	out.Extra = cloneRaw(c.Extra)
	out.ExecutionCount = cloneInt(c.ExecutionCount)
	if c.Attachments != nil {
		out.Attachments = make(map[string]MimeBundle, len(c.Attachments))
		for k, v := range c.Attachments {
			out.Attachments[k] = v.Clone()
		}
	}
	if c.Outputs != nil {
		out.Outputs = make([]*Output, len(c.Outputs))
		for i, o := range c.Outputs {
			out.Outputs[i] = o.Clone()
		}
	}
	return &out
}

// Clone returns a deep copy of o.
func (o *Output) Clone() *Output {
	if o == nil {
		return nil
	}
	out := *o
	out.Data = o.Data.Clone()
	out.Metadata = o.Metadata.Clone()
	out.ExecutionCount = cloneInt(o.ExecutionCount)
	out.Traceback = append([]string(nil), o.Traceback...)
	if o.Traceback == nil {
		out.Traceback = nil
	}
	out.Extra = cloneRaw(o.Extra)
	return &out
}

// CellLabel names the cell at index with id for messages:
// `cell 3 (id "abc")`, or `cell 3` without id.
func CellLabel(index int, id string) string {
	if id == "" {
		return fmt.Sprintf("cell %d", index)
	}
	return fmt.Sprintf("cell %d (id %q)", index, id)
}

// KernelspecMeta is the notebook's metadata.kernelspec.
type KernelspecMeta struct {
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
	Language    string `json:"language,omitempty"`
}

// Kernelspec returns metadata.kernelspec, if the notebook has one that
// decodes.
func (nb *Notebook) Kernelspec() (KernelspecMeta, bool) {
	var ks KernelspecMeta
	ok, err := nb.Metadata.Get("kernelspec", &ks)
	return ks, ok && err == nil
}

func cloneRaw[M ~map[string]json.RawMessage](m M) M {
	if m == nil {
		return nil
	}
	out := make(M, len(m))
	for k, v := range m {
		out[k] = bytes.Clone(v)
	}
	return out
}

func cloneInt(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func intPtr(v int) *int { return &v }

// marshalNoEscape is json.Marshal without HTML escaping.
func marshalNoEscape(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
