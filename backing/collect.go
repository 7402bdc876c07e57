package backing

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	_ "image/gif"  // image sizes for the model's summary
	_ "image/jpeg" // "
	_ "image/png"  // "
	"strings"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// Result is what code produced in the kernel, as a model needs it.
type Result struct {
	Stdout string // stream stdout, concatenated
	Stderr string // stream stderr, concatenated
	// Text is the text/plain of execute_result and of text-only displays.
	Text   string
	Images []Image
	// Error is the exception the code raised, or nil.
	Error *Error
	// Status is the execute_reply's status: ok, error or aborted; "" when
	// no reply came.
	Status string
}

// Image is one image output.
type Image struct {
	MIME          string // "image/png"
	Width, Height int    // pixels; 0 if unknown
	Bytes         int    // size of the decoded image
	// Data is the image as the kernel sent it: base64, or the text of an
	// SVG.
	Data string
}

// Error is an exception raised by the code.
type Error struct {
	Name, Value string
	Traceback   []string // may carry ANSI colour codes
}

// Collector builds a Result from a cell's iopub messages and reply. The
// zero value is ready; it is not safe for concurrent use.
type Collector struct {
	stdout, stderr, text strings.Builder
	images               []Image
	err                  *Error
	status               string
}

// Add takes one iopub message of the cell.
func (c *Collector) Add(m *wire.Message) {
	switch m.Header.MsgType {
	case wire.MsgStream:
		if s, err := m.DecodeStream(); err == nil {
			if s.Name == "stderr" {
				c.stderr.WriteString(s.Text)
			} else {
				c.stdout.WriteString(s.Text)
			}
		}
	case wire.MsgExecuteResult, wire.MsgDisplayData, wire.MsgUpdateDisplayData:
		var d wire.DisplayData
		if m.DecodeContent(&d) != nil {
			return
		}
		imaged := false
		for mime, raw := range d.Data {
			if strings.HasPrefix(mime, "image/") {
				c.images = append(c.images, imageInfo(mime, raw))
				imaged = true
			}
		}
		if !imaged {
			var txt string
			if json.Unmarshal(d.Data["text/plain"], &txt) == nil && txt != "" {
				c.text.WriteString(txt)
				c.text.WriteString("\n")
			}
		}
	case wire.MsgError:
		var e wire.Error
		if m.DecodeContent(&e) == nil {
			c.err = &Error{Name: e.EName, Value: e.EValue, Traceback: e.Traceback}
		}
	}
}

// AddReply takes the cell's execute_reply: an error status with no error
// output seen (a kernel may send none) still makes the result an error.
func (c *Collector) AddReply(rep *wire.Message) {
	var st wire.ExecuteReply
	if rep == nil || rep.DecodeContent(&st) != nil {
		return
	}
	c.status = st.Status
	if st.Status == wire.StatusError && c.err == nil && st.Error != nil {
		c.err = &Error{Name: st.EName, Value: st.EValue}
	}
}

// Result returns what was collected.
func (c *Collector) Result() Result {
	return Result{Stdout: c.stdout.String(), Stderr: c.stderr.String(), Text: c.text.String(),
		Images: c.images, Error: c.err, Status: c.status}
}

// imageInfo describes an image output and keeps its data.
func imageInfo(mime string, raw json.RawMessage) Image {
	im := Image{MIME: mime}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return im
	}
	im.Data = strings.TrimSpace(s)
	if mime == "image/svg+xml" {
		im.Bytes = len(s)
		return im
	}
	data, err := base64.StdEncoding.DecodeString(im.Data)
	if err != nil {
		im.Data = ""
		return im
	}
	im.Bytes = len(data)
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
		im.Width, im.Height = cfg.Width, cfg.Height
	}
	return im
}
