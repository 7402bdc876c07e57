// Package nbcomm is the encoding of the notebook comm
// (docs/notebook-protocol.md): the comm target a frontend opens for the
// notebook it shows, and the requests the kernel sends through it and the
// replies. The kernel's side is package bridge's; the headless runner's
// frontend side is package notebooks'; the JupyterLab extension's is in
// TypeScript. It imports nothing of ours.
package nbcomm

import (
	"encoding/json"
	"unicode/utf8"
)

// Target is the comm target; Protocol the version spoken.
const (
	Target   = "agentkernel.notebook"
	Protocol = 1
)

// The operations.
const (
	OpRead       = "read"
	OpInsert     = "insert"
	OpSetSource  = "set_source"
	OpMove       = "move"
	OpDelete     = "delete"
	OpSetOutputs = "set_outputs"
)

// Error codes of a Reply.
const (
	CodeNoCell   = "no_cell"
	CodeConflict = "conflict"
)

// Open is the data of the frontend's comm_open.
type Open struct {
	Protocol int    `json:"protocol"`
	Path     string `json:"path,omitempty"`
}

// Request is one request of the kernel: comm_msg data {"request": …}.
type Request struct {
	ID   string          `json:"id"`
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args"`
}

// Reply is the frontend's answer: comm_msg data {"reply": …}.
type Reply struct {
	ID     string          `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
	Code   string          `json:"code,omitempty"`
}

// Args are the arguments of the requests (each op uses some).
type Args struct {
	ID        string `json:"id,omitempty"`
	Index     int    `json:"index"`
	CellType  string `json:"cell_type,omitempty"`
	Source    string `json:"source"`
	MaxOutput int    `json:"max_output,omitempty"`
	// A read's range and budget: the cells from Start (an index) up to
	// End (0: the last), whole while their sources and outputs (cut to
	// MaxOutput) come to at most MaxChars characters (the first one
	// always). MaxChars 0: every cell, as a frontend that knows no range
	// answers.
	Start    int `json:"start,omitempty"`
	End      int `json:"end,omitempty"`
	MaxChars int `json:"max_chars,omitempty"`
	// MaxImage, when set, asks for the outputs' image data: an image whose
	// base64 data is at most MaxImage characters keeps it (a larger one is
	// emptied, as every image is without it).
	MaxImage       int               `json:"max_image,omitempty"`
	Outputs        []json.RawMessage `json:"outputs,omitempty"`
	ExecutionCount *int              `json:"execution_count"`
}

// Cell is a cell as the protocol carries it: nbformat's fields, source a
// string.
type Cell struct {
	ID             string            `json:"id"`
	CellType       string            `json:"cell_type"`
	Source         string            `json:"source"`
	ExecutionCount *int              `json:"execution_count"`
	Outputs        []json.RawMessage `json:"outputs"`
}

// Focus is the page's message of where the user is, sent as it changes
// ({"focus": {...}}, no reply): the id of the cell they are in and the
// text selected there ("" each when none).
type Focus struct {
	Active    string `json:"active"`
	Selection string `json:"selection"`
}

// Bounded is f within the protocol's bounds: an id of at most 128 bytes,
// a selection of at most 8,000 (cut at a rune).
func (f Focus) Bounded() Focus {
	f.Active = cutUTF8(f.Active, 128)
	f.Selection = cutUTF8(f.Selection, 8000)
	return f
}

// cutUTF8 is s cut to at most n bytes, never inside a rune.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Moved is the result of move: the index the cell was at.
type Moved struct {
	From *int `json:"from"`
}

// Removed is the result of delete: the cell, and the index it was at.
type Removed struct {
	Cell  Cell `json:"cell"`
	Index *int `json:"index"`
}

// View is the result of read. A frontend that honoured a read's range
// says so with Count: Cells are then the cells from index Start on, and
// ActiveIndex the index of Active (-1: none); without Count, Cells are all
// of them.
type View struct {
	Path        string `json:"path,omitempty"`
	Active      string `json:"active,omitempty"`
	Selection   string `json:"selection,omitempty"`
	Cells       []Cell `json:"cells"`
	Count       *int   `json:"count,omitempty"`
	Start       int    `json:"start,omitempty"`
	ActiveIndex *int   `json:"active_index,omitempty"`
}
