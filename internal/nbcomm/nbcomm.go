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

// Mirror is the version of the mirror capability: a frontend whose
// comm_open says it (Open.Mirror) sends the kernel a Snapshot of the
// notebook and then its Changes, and the kernel answers reads from its
// mirror of them. A frontend that does not say it is asked for each read.
const Mirror = 1

// MirrorText is how much of an output's text a Snapshot or Changes
// carries (in UTF-16 units, as the page counts): a longer text is cut
// there as a read cuts it, and its cell is MirrorCell.Cut.
const MirrorText = 32000

// Open is the data of the frontend's comm_open.
type Open struct {
	Protocol int    `json:"protocol"`
	Path     string `json:"path,omitempty"`
	// Mirror is the mirror capability's version the frontend speaks
	// (0: none; it sends no Snapshot).
	Mirror int `json:"mirror,omitempty"`
}

// MirrorCell is a cell as a Snapshot or Changes carries it: its outputs
// as a read with max_output MirrorText carries them (image data emptied,
// the mime type kept), and Cut when one of their texts was cut to it.
type MirrorCell struct {
	Cell
	Cut bool `json:"cut,omitempty"`
}

// Snapshot is the frontend's whole notebook at Version: comm_msg data
// {"snapshot": …}, sent after comm_open and again when the kernel sends
// {"resync": true}.
type Snapshot struct {
	Version int64        `json:"version"`
	Cells   []MirrorCell `json:"cells"`
}

// Changes is what changed in the frontend's notebook since the version
// before Version (Version-1): comm_msg data {"changes": …}, sent at most
// once a frame. Order, when present, is every cell's id in the order the
// notebook has them now (cells were inserted, deleted or moved); Cells are
// the cells that are new or changed, whole.
type Changes struct {
	Version int64        `json:"version"`
	Order   []string     `json:"order,omitempty"`
	Cells   []MirrorCell `json:"cells,omitempty"`
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
	// Version is, from a frontend with the mirror capability, the version
	// of the last Changes it sent before this reply (a write's own change
	// among them).
	Version *int64 `json:"version,omitempty"`
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
