package runner

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/notebooks"
)

// recorder turns one notebook's iopub messages into cell outputs with
// nbclient's rules. It is used by one goroutine at a time.
type recorder struct {
	nb  *notebooks.Notebook
	log hclog.Logger
	// displays maps a display_id to the outputs showing it: cell → output
	// indices, as nbclient's _display_id_map (by cell, not index: the
	// agent may insert cells while one runs).
	displays map[string]map[*notebooks.Cell][]int
	// widgets holds the widget state seen in comm messages, by comm id.
	widgets       map[string]map[string]json.RawMessage
	widgetOrder   []string
	widgetBuffers map[string]map[string]widgetBuffer

	cell         *notebooks.Cell
	clearPending bool // clear_output(wait=True) seen: clear at the next output
}

type widgetBuffer struct {
	Data     string          `json:"data"`
	Encoding string          `json:"encoding"`
	Path     json.RawMessage `json:"path"`
}

func newRecorder(nb *notebooks.Notebook, log hclog.Logger) *recorder {
	return &recorder{
		nb:            nb,
		log:           log,
		displays:      make(map[string]map[*notebooks.Cell][]int),
		widgets:       make(map[string]map[string]json.RawMessage),
		widgetBuffers: make(map[string]map[string]widgetBuffer),
	}
}

// begin starts recording cell c: its outputs are cleared.
func (r *recorder) begin(c *notebooks.Cell) {
	r.cell = c
	r.clearPending = false
	c.Outputs = []*notebooks.Output{}
}

// iopubContent is the union of the iopub content fields we use.
type iopubContent struct {
	ExecutionCount *int `json:"execution_count"`
	Transient      struct {
		DisplayID string `json:"display_id"`
	} `json:"transient"`
	Name      string          `json:"name"`
	Text      json.RawMessage `json:"text"`
	Data      json.RawMessage `json:"data"`
	Metadata  json.RawMessage `json:"metadata"`
	Ename     string          `json:"ename"`
	Evalue    string          `json:"evalue"`
	Traceback []string        `json:"traceback"`
	Wait      bool            `json:"wait"`
	CommID    string          `json:"comm_id"`
}

// handle applies one iopub message for the current cell.
func (r *recorder) handle(m *wire.Message) {
	typ := m.Header.MsgType
	var c iopubContent
	if err := m.DecodeContent(&c); err != nil {
		r.log.Warn("dropping undecodable iopub message", "msg_type", typ, "error", err)
		return
	}
	cell := r.cell
	did := c.Transient.DisplayID
	if did != "" && (typ == wire.MsgExecuteResult || typ == wire.MsgDisplayData || typ == wire.MsgUpdateDisplayData) {
		r.updateDisplay(did, &c)
	}
	if c.ExecutionCount != nil {
		cell.ExecutionCount = cloneInt(c.ExecutionCount)
	}
	switch typ {
	case wire.MsgStatus, wire.MsgExecuteInput, wire.MsgUpdateDisplayData:
		return
	case wire.MsgClearOutput:
		if c.Wait {
			r.clearPending = true
			return
		}
		cell.Outputs = []*notebooks.Output{}
		r.forgetDisplays()
		return
	case wire.MsgCommOpen, wire.MsgCommMsg:
		r.comm(m, &c)
		return
	}
	o := outputFromMsg(typ, &c)
	if o == nil {
		r.log.Debug("ignoring iopub message", "msg_type", typ)
		return
	}
	if r.clearPending {
		cell.Outputs = []*notebooks.Output{}
		r.forgetDisplays()
		r.clearPending = false
	}
	if o.OutputType == notebooks.Stream && len(cell.Outputs) > 0 {
		// Coalesce consecutive output on the same stream, as nbconvert's
		// coalesce_streams does after nbclient.
		if last := cell.Outputs[len(cell.Outputs)-1]; last.OutputType == notebooks.Stream && last.Name == o.Name {
			last.Text += o.Text
			return
		}
	}
	if did != "" {
		cm := r.displays[did]
		if cm == nil {
			cm = make(map[*notebooks.Cell][]int)
			r.displays[did] = cm
		}
		cm[r.cell] = append(cm[r.cell], len(cell.Outputs))
	}
	cell.Outputs = append(cell.Outputs, o)
}

// outputFromMsg is nbformat's output_from_msg; nil for other messages.
func outputFromMsg(typ string, c *iopubContent) *notebooks.Output {
	switch typ {
	case wire.MsgStream:
		text, _ := notebooks.MultilineValue(c.Text)
		return &notebooks.Output{OutputType: notebooks.Stream, Name: c.Name, Text: text}
	case wire.MsgDisplayData, wire.MsgExecuteResult:
		o := &notebooks.Output{OutputType: notebooks.OutputType(typ), Data: bundleFromMsg(c.Data), Metadata: metadataFromMsg(c.Metadata)}
		if typ == wire.MsgExecuteResult {
			o.ExecutionCount = cloneInt(c.ExecutionCount)
		}
		return o
	case wire.MsgError:
		tb := c.Traceback
		if tb == nil {
			tb = []string{}
		}
		return &notebooks.Output{OutputType: notebooks.ErrorOutput, Ename: c.Ename, Evalue: c.Evalue, Traceback: tb}
	}
	return nil
}

// bundleFromMsg makes a mime bundle of a message's data, joining lists of
// strings for non-JSON types as Read does.
func bundleFromMsg(raw json.RawMessage) notebooks.MimeBundle {
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(raw, &obj)
	b := make(notebooks.MimeBundle, len(obj))
	for mime, v := range obj {
		if !notebooks.IsJSONMime(mime) {
			if s, ok := notebooks.MultilineValue(v); ok {
				b.SetText(mime, s)
				continue
			}
		}
		b[mime] = v
	}
	return b
}

func metadataFromMsg(raw json.RawMessage) notebooks.Metadata {
	var m notebooks.Metadata
	_ = json.Unmarshal(raw, &m)
	if m == nil {
		m = notebooks.Metadata{}
	}
	return m
}

// updateDisplay replaces data and metadata of every output showing did.
func (r *recorder) updateDisplay(did string, c *iopubContent) {
	cm, ok := r.displays[did]
	if !ok {
		r.log.Debug("update for an unknown display id", "display_id", did)
		return
	}
	for cell, idxs := range cm {
		outs := cell.Outputs
		for _, oi := range idxs {
			if oi < len(outs) {
				outs[oi].Data = bundleFromMsg(c.Data)
				outs[oi].Metadata = metadataFromMsg(c.Metadata)
			}
		}
	}
}

// forgetDisplays drops the current cell's outputs from the display map.
func (r *recorder) forgetDisplays() {
	for _, cm := range r.displays {
		if _, ok := cm[r.cell]; ok {
			cm[r.cell] = nil
		}
	}
}

// comm records widget state as nbclient's handle_comm_msg does.
func (r *recorder) comm(m *wire.Message, c *iopubContent) {
	var data struct {
		State       map[string]json.RawMessage `json:"state"`
		BufferPaths []json.RawMessage          `json:"buffer_paths"`
	}
	if json.Unmarshal(c.Data, &data) != nil || data.State == nil || c.CommID == "" {
		return
	}
	st, ok := r.widgets[c.CommID]
	if !ok {
		st = make(map[string]json.RawMessage)
		r.widgets[c.CommID] = st
		r.widgetOrder = append(r.widgetOrder, c.CommID)
	}
	for k, v := range data.State {
		st[k] = v
	}
	if len(data.BufferPaths) > 0 {
		bufs := r.widgetBuffers[c.CommID]
		if bufs == nil {
			bufs = make(map[string]widgetBuffer)
			r.widgetBuffers[c.CommID] = bufs
		}
		for i, p := range data.BufferPaths {
			if i >= len(m.Buffers) {
				break
			}
			bufs[string(p)] = widgetBuffer{Data: base64.StdEncoding.EncodeToString(m.Buffers[i]), Encoding: "base64", Path: p}
		}
	}
}

// setWidgetsMetadata writes the widget state into metadata.widgets, as
// nbclient's set_widgets_metadata does.
func (r *recorder) setWidgetsMetadata() error {
	if len(r.widgets) == 0 {
		return nil
	}
	state := make(map[string]any)
	for _, id := range r.widgetOrder {
		st := r.widgets[id]
		if _, ok := st["_model_name"]; !ok {
			continue
		}
		get := func(k string) json.RawMessage {
			if v, ok := st[k]; ok {
				return v
			}
			return json.RawMessage("null")
		}
		w := map[string]any{
			"model_name":           get("_model_name"),
			"model_module":         get("_model_module"),
			"model_module_version": get("_model_module_version"),
			"state":                st,
		}
		if bufs := r.widgetBuffers[id]; len(bufs) > 0 {
			list := make([]widgetBuffer, 0, len(bufs))
			for _, k := range slices.Sorted(maps.Keys(bufs)) {
				list = append(list, bufs[k])
			}
			w["buffers"] = list
		}
		state[id] = w
	}
	return r.nb.Metadata.Set("widgets", map[string]any{
		"application/vnd.jupyter.widget-state+json": map[string]any{
			"state":         state,
			"version_major": 2,
			"version_minor": 0,
		},
	})
}
