package notebooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/agentkernel/agentkernel/messages"
)

// CodeTool is the name of the agent's tool that runs code in the backing
// kernel; its input is {"code": "..."}.
const CodeTool = "execute_code"

// Roles of exported cells, in the cell metadata agentkernel.role.
const (
	RolePrompt    = "prompt"     // what the user asked, with the agent's answer as outputs
	RoleAgentCode = "agent-code" // code the agent ran (tool execute_code)
	RoleUserCode  = "user-code"  // a cell the user ran in the backing kernel (say cell_executed)
)

// CellRecord is the structured form of the Text of a say cell_executed or
// command_output message: the code that ran and its outputs as nbformat
// outputs. The bridge records it; FromSession turns it into a code cell.
// A message whose Text is not a JSON object with a "code" field is taken as
// plain text output.
type CellRecord struct {
	Code           string    `json:"code"`
	Outputs        []*Output `json:"outputs"`
	ExecutionCount *int      `json:"execution_count,omitempty"`
	// ToolUseID links the record to the API history's execute_code call.
	ToolUseID string `json:"tool_use_id,omitempty"`
}

// SessionMeta describes the exported session. Every field is optional.
type SessionMeta struct {
	ID, Title, Model, Provider, Mode string
	// Kernelspec becomes metadata.kernelspec: the agentkernel spec (so
	// that running the notebook asks the agent again) or the backing
	// kernel's (so that only the code cells mean something to it).
	Kernelspec *KernelspecMeta
	// LanguageInfo becomes metadata.language_info (raw JSON).
	LanguageInfo json.RawMessage
}

// FromSession exports a session as an nbformat 4.5 notebook that shows what
// the agent did and can reproduce it. The UI history is the timeline:
//
//   - Each user prompt — the session's first say text, then every say
//     user_feedback and user_feedback_diff — becomes a code cell whose
//     source is the prompt as the user typed it in a prompt-mode cell
//     (metadata.agentkernel.role "prompt", execution_count the turn
//     number). Its outputs are the agent's answer in order: say text,
//     completion_result and ask completion_result / followup as
//     display_data with text/markdown and text/plain; images (say image and
//     the images of those messages) as display_data with their image type;
//     say error and ask api_req_failed as error outputs (ename
//     "AgentError").
//   - Each say command_output (role "agent-code") and cell_executed (role
//     "user-code") becomes a code cell after its prompt cell. When its Text
//     is a [CellRecord] the cell has that code, those outputs and that
//     execution count. Otherwise the Text is a stream output and, for
//     command_output, the code is the next execute_code call of the API
//     history not yet used.
//   - execute_code calls of the API history that no UI message used become
//     code cells too (role "agent-code"), with their tool_result as output
//     (text as a stdout stream, an error result as an error output "ToolError",
//     images as display_data); they go after the last cell that is not later
//     than the call's API ts, or at the end when the ts is unknown.
//   - Reasoning, api_req_*, checkpoints, kernel status, context-management
//     messages and the other bookkeeping are left out.
//
// Cell ids derive from the message timestamps ("prompt-TS", "code-TS") or
// the tool_use id, so exporting the same histories gives the same notebook.
// The notebook metadata holds SessionMeta under agentkernel.session. An
// error names the message that cannot be exported.
func FromSession(ui []messages.UIMessage, api []messages.APIMessage, meta SessionMeta) (*Notebook, error) {
	calls, err := codeCalls(api)
	if err != nil {
		return nil, fmt.Errorf("notebooks: from session: %w", err)
	}
	ex := newExporter(calls)
	for i, m := range ui {
		if err := ex.message(m); err != nil {
			return nil, fmt.Errorf("notebooks: from session: ui[%d] (ts %d): %w", i, m.TS, err)
		}
	}
	ex.unusedCalls()
	nb := New()
	nb.Cells = ex.cells
	if err := setSessionMetadata(nb, meta); err != nil {
		return nil, err
	}
	if err := nb.Validate(); err != nil {
		return nil, fmt.Errorf("notebooks: from session: %w", err)
	}
	return nb, nil
}

// setSessionMetadata puts meta in the notebook metadata: its non-empty
// fields under agentkernel.session, its kernelspec and language_info.
func setSessionMetadata(nb *Notebook, meta SessionMeta) error {
	session := map[string]string{}
	for k, v := range map[string]string{"id": meta.ID, "title": meta.Title, "model": meta.Model, "provider": meta.Provider, "mode": meta.Mode} {
		if v != "" {
			session[k] = v
		}
	}
	if err := nb.Metadata.Set("agentkernel", map[string]any{"session": session}); err != nil {
		return err
	}
	if meta.Kernelspec != nil {
		if err := nb.Metadata.Set("kernelspec", meta.Kernelspec); err != nil {
			return err
		}
	}
	if len(meta.LanguageInfo) > 0 {
		nb.Metadata["language_info"] = bytes.Clone(meta.LanguageInfo)
	}
	return nil
}

// exporter collects cells with the timestamps they came from. It reads the
// UI history in order, one message at a time, and keeps the turn it is in:
// the prompt cell the agent's answer goes to.
type exporter struct {
	cells []*Cell
	ts    []int64
	ids   map[string]bool

	calls  []*codeCall          // the API history's execute_code calls, in order
	byID   map[string]*codeCall // calls by tool_use id
	prompt *Cell                // the current turn's prompt cell; nil before the first
	turns  int
}

func newExporter(calls []*codeCall) *exporter {
	byID := make(map[string]*codeCall, len(calls))
	for _, c := range calls {
		byID[c.id] = c
	}
	return &exporter{calls: calls, byID: byID}
}

// message exports the next UI message: a prompt starts a turn, the agent's
// answer becomes outputs of the turn's prompt cell, a command_output or
// cell_executed becomes a code cell; the rest is left out.
func (ex *exporter) message(m messages.UIMessage) error {
	if ex.startsTurn(m) {
		ex.turns++
		ex.prompt = ex.promptCell(m, ex.turns)
		return nil
	}
	if outs, ok := answerOutputs(m); ok {
		ex.answer(m.TS, outs...)
		return nil
	}
	if role, ok := recordRole(m); ok {
		c, err := ex.recordCell(m, role)
		if err != nil {
			return err
		}
		ex.add(c, m.TS)
	}
	return nil
}

// startsTurn reports whether m is a user prompt: the session's first say
// text, or a say user_feedback or user_feedback_diff.
func (ex *exporter) startsTurn(m messages.UIMessage) bool {
	if m.Type != messages.TypeSay {
		return false
	}
	switch m.Say {
	case messages.SayText:
		return ex.turns == 0
	case messages.SayUserFeedback, messages.SayUserFeedbackDiff:
		return true
	}
	return false
}

// answer appends outputs to the current turn's prompt cell; agent output
// before any prompt gets a prompt cell of its own, with an empty source and
// the message's ts.
func (ex *exporter) answer(ts int64, o ...*Output) {
	if ex.prompt == nil {
		ex.turns++
		ex.prompt = ex.promptCell(messages.UIMessage{TS: ts}, ex.turns)
	}
	ex.prompt.Outputs = append(ex.prompt.Outputs, o...)
}

// answerOutputs are the outputs of a message that is part of the agent's
// answer; ok is false for any other message.
func answerOutputs(m messages.UIMessage) (outs []*Output, ok bool) {
	switch {
	case m.Type == messages.TypeSay && (m.Say == messages.SayText || m.Say == messages.SayCompletionResult),
		m.Type == messages.TypeAsk && m.Ask == messages.AskCompletionResult:
		if m.Text != "" {
			outs = append(outs, markdownOutput(m.Text))
		}
		return append(outs, imageOutputs(m.Images)...), true
	case m.Type == messages.TypeAsk && m.Ask == messages.AskFollowup:
		return append([]*Output{markdownOutput(followupText(m.Text))}, imageOutputs(m.Images)...), true
	case m.Type == messages.TypeSay && m.Say == messages.SayImage:
		return imageOutputs(m.Images), true
	case m.Type == messages.TypeSay && m.Say == messages.SayError,
		m.Type == messages.TypeAsk && m.Ask == messages.AskAPIReqFailed:
		return []*Output{{OutputType: ErrorOutput, Ename: "AgentError", Evalue: m.Text, Traceback: []string{m.Text}}}, true
	}
	return nil, false
}

// recordRole is the role of the code cell a say command_output
// (agent-code) or cell_executed (user-code) becomes; ok is false for any
// other message.
func recordRole(m messages.UIMessage) (role string, ok bool) {
	if m.Type != messages.TypeSay {
		return "", false
	}
	switch m.Say {
	case messages.SayCommandOutput:
		return RoleAgentCode, true
	case messages.SayCellExecuted:
		return RoleUserCode, true
	}
	return "", false
}

// unusedCalls adds the execute_code calls no UI message used, each after
// the last cell not later than its ts.
func (ex *exporter) unusedCalls() {
	for _, call := range ex.calls {
		if !call.used {
			c := call.cell()
			c.ID = ex.id("tool-" + call.id)
			ex.insert(c, call.ts)
		}
	}
}

func (ex *exporter) add(c *Cell, ts int64) {
	ex.cells = append(ex.cells, c)
	ex.ts = append(ex.ts, ts)
}

// insert puts c after the last cell not later than ts (at the end for an
// unknown ts).
func (ex *exporter) insert(c *Cell, ts int64) {
	if ts <= 0 {
		ex.add(c, ts)
		return
	}
	at := len(ex.cells)
	for at > 0 && ex.ts[at-1] > ts {
		at--
	}
	ex.cells = slices.Insert(ex.cells, at, c)
	ex.ts = slices.Insert(ex.ts, at, ts)
}

// id returns a unique cell id built from base.
func (ex *exporter) id(base string) string {
	if ex.ids == nil {
		ex.ids = make(map[string]bool)
	}
	base = badIDChars.ReplaceAllString(base, "_")
	if len(base) > 56 {
		base = base[:56]
	}
	id := base
	for n := 2; ex.ids[id]; n++ {
		id = fmt.Sprintf("%s-%d", base, n)
	}
	ex.ids[id] = true
	return id
}

var badIDChars = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

func roleMeta(role string, ts int64, toolUseID string) Metadata {
	m := Metadata{}
	v := map[string]any{"role": role}
	if ts > 0 {
		v["ts"] = ts
	}
	if toolUseID != "" {
		v["tool_use_id"] = toolUseID
	}
	_ = m.Set("agentkernel", v) // plain values always encode
	return m
}

func (ex *exporter) promptCell(m messages.UIMessage, turn int) *Cell {
	c := &Cell{
		ID:             ex.id(fmt.Sprintf("prompt-%d", m.TS)),
		CellType:       Code,
		Source:         m.Text,
		Metadata:       roleMeta(RolePrompt, m.TS, ""),
		Outputs:        []*Output{},
		ExecutionCount: intPtr(turn),
	}
	ex.add(c, m.TS)
	return c
}

// recordCell makes the code cell of a command_output or cell_executed message.
func (ex *exporter) recordCell(m messages.UIMessage, role string) (*Cell, error) {
	c := &Cell{CellType: Code, Outputs: []*Output{}}
	rec, structured, err := parseRecord(m.Text)
	if err != nil {
		return nil, err
	}
	var call *codeCall
	if structured {
		c.Source, c.ExecutionCount = rec.Code, rec.ExecutionCount
		for _, o := range rec.Outputs {
			if o != nil {
				c.Outputs = append(c.Outputs, o)
			}
		}
		if rec.ToolUseID != "" {
			call = ex.byID[rec.ToolUseID]
		}
	} else {
		if role == RoleAgentCode {
			for _, cc := range ex.calls {
				if !cc.used {
					call = cc
					break
				}
			}
			if call != nil {
				c.Source = call.code
			}
		}
		if m.Text != "" {
			c.Outputs = append(c.Outputs, &Output{OutputType: Stream, Name: "stdout", Text: m.Text})
		}
	}
	toolUseID := ""
	if call != nil {
		call.used = true
		toolUseID = call.id
	}
	c.ID = ex.id(fmt.Sprintf("code-%d", m.TS))
	c.Metadata = roleMeta(role, m.TS, toolUseID)
	return c, nil
}

// parseRecord decodes a CellRecord from text; structured is false when the
// text is not a JSON object with a "code" field.
func parseRecord(text string) (rec CellRecord, structured bool, err error) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "{") {
		return rec, false, nil
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal([]byte(t), &probe) != nil {
		return rec, false, nil
	}
	if _, ok := probe["code"]; !ok {
		return rec, false, nil
	}
	if err := json.Unmarshal([]byte(t), &rec); err != nil {
		return rec, false, fmt.Errorf("cell record: %w", err)
	}
	return rec, true, nil
}

// codeCall is one execute_code call of the API history and its result.
type codeCall struct {
	id, code string
	ts       int64
	result   []messages.ContentBlock
	isError  bool
	used     bool
}

func (c *codeCall) cell() *Cell {
	cell := &Cell{
		CellType: Code,
		Source:   c.code,
		Metadata: roleMeta(RoleAgentCode, c.ts, c.id),
		Outputs:  []*Output{},
	}
	var text []string
	var images []string
	for _, b := range c.result {
		switch {
		case b.Type == messages.BlockText && b.Text != "":
			text = append(text, b.Text)
		case b.Type == messages.BlockImage && b.Source != nil && b.Source.Type == "base64":
			images = append(images, "data:"+b.Source.MediaType+";base64,"+b.Source.Data)
		case b.Type == messages.BlockImage && b.Source != nil:
			images = append(images, b.Source.URL)
		}
	}
	if s := strings.Join(text, "\n"); s != "" {
		if c.isError {
			first, _, _ := strings.Cut(s, "\n")
			cell.Outputs = append(cell.Outputs, &Output{OutputType: ErrorOutput, Ename: "ToolError", Evalue: first, Traceback: []string{s}})
		} else {
			cell.Outputs = append(cell.Outputs, &Output{OutputType: Stream, Name: "stdout", Text: s})
		}
	}
	cell.Outputs = append(cell.Outputs, imageOutputs(images)...)
	return cell
}

// codeCalls collects the execute_code calls of the API history with their
// results.
func codeCalls(api []messages.APIMessage) ([]*codeCall, error) {
	var calls []*codeCall
	byID := make(map[string]*codeCall)
	for i, m := range api {
		for j, b := range m.Content {
			switch {
			case m.Role == messages.RoleAssistant && b.Type == messages.BlockToolUse && b.Name == CodeTool:
				var in struct {
					Code *string `json:"code"`
				}
				if err := json.Unmarshal(b.Input, &in); err != nil || in.Code == nil {
					return nil, fmt.Errorf("api[%d].content[%d].input: %s call without a \"code\" string", i, j, CodeTool)
				}
				c := &codeCall{id: b.ID, code: *in.Code, ts: m.TS}
				calls = append(calls, c)
				byID[b.ID] = c
			case b.Type == messages.BlockToolResult:
				if c := byID[b.ToolUseID]; c != nil {
					c.result, c.isError = b.Content, b.IsError
				}
			}
		}
	}
	return calls, nil
}

func markdownOutput(text string) *Output {
	o := &Output{OutputType: DisplayData, Data: MimeBundle{}, Metadata: Metadata{}}
	o.Data.SetText("text/markdown", text)
	o.Data.SetText("text/plain", text)
	return o
}

// followupText is the question of an ask followup, whose Text may be JSON
// {"question": ..., "suggest": [...]}.
func followupText(text string) string {
	f, _ := messages.ParseFollowup(messages.UIMessage{Ask: messages.AskFollowup, Text: text})
	return f.Question
}

// dataURLRe matches a base64 data URL.
var dataURLRe = regexp.MustCompile(`^data:([a-zA-Z0-9.+-]+/[a-zA-Z0-9.+-]+);base64,(.*)$`)

// imageOutputs turns image data URLs into display_data outputs; other
// URLs become a markdown image.
func imageOutputs(images []string) []*Output {
	var outs []*Output
	for _, img := range images {
		o := &Output{OutputType: DisplayData, Data: MimeBundle{}, Metadata: Metadata{}}
		if m := dataURLRe.FindStringSubmatch(img); m != nil {
			o.Data.SetText(m[1], m[2])
			o.Data.SetText("text/plain", "<image "+m[1]+">")
		} else {
			o.Data.SetText("text/markdown", "![image]("+img+")")
			o.Data.SetText("text/plain", img)
		}
		outs = append(outs, o)
	}
	return outs
}
