package notebooks

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/messages"
)

func say(ts int64, kind messages.Say, text string) messages.UIMessage {
	return messages.UIMessage{TS: ts, Type: messages.TypeSay, Say: kind, Text: text}
}

func record(t *testing.T, rec CellRecord) string {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func toolUse(id, code string, ts int64) messages.APIMessage {
	in, _ := json.Marshal(map[string]string{"code": code})
	return messages.APIMessage{Role: messages.RoleAssistant, TS: ts, Content: []messages.ContentBlock{
		{Type: messages.BlockToolUse, ID: id, Name: CodeTool, Input: in}}}
}

func toolResult(id, text string, isErr bool) messages.APIMessage {
	return messages.APIMessage{Role: messages.RoleUser, Content: []messages.ContentBlock{
		{Type: messages.BlockToolResult, ToolUseID: id, IsError: isErr, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: text}}}}}
}

func sessionHistories(t *testing.T) ([]messages.UIMessage, []messages.APIMessage) {
	sin := &Output{OutputType: Stream, Name: "stdout", Text: "0.84\n"}
	zero := &Output{OutputType: ErrorOutput, Ename: "ZeroDivisionError", Evalue: "division by zero", Traceback: []string{"tb"}}
	done := say(1006, messages.SayCompletionResult, "The value is **0.84**.")
	done.Images = []string{"data:image/png;base64," + pngB64}
	ui := []messages.UIMessage{
		say(1000, messages.SayText, "Plot a sine wave"),
		say(1001, messages.SayAPIReqStarted, `{"tokensIn":10}`),
		{TS: 1002, Type: messages.TypeSay, Say: messages.SayReasoning, Text: "thinking…"},
		say(1003, messages.SayText, "I'll compute it."),
		say(1004, messages.SayCommandOutput, record(t, CellRecord{Code: "import math\nprint(round(math.sin(1), 2))", Outputs: []*Output{sin}, ExecutionCount: intPtr(1), ToolUseID: "toolu_1"})),
		say(1005, messages.SayCommandOutput, "done\n"),
		done,
		say(2000, messages.SayUserFeedback, "Now divide by zero"),
		say(2001, messages.SayError, "model failed"),
		say(2002, messages.SayCellExecuted, record(t, CellRecord{Code: "1/0", Outputs: []*Output{zero}, ExecutionCount: intPtr(2)})),
		{TS: 2003, Type: messages.TypeAsk, Ask: messages.AskFollowup, Text: `{"question":"Anything else?","suggest":["no"]}`},
	}
	api := []messages.APIMessage{
		{Role: messages.RoleUser, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: "Plot a sine wave"}}},
		toolUse("toolu_1", "import math\nprint(round(math.sin(1), 2))", 0),
		toolResult("toolu_1", "0.84", false),
		toolUse("toolu_2", "print('done')", 0),
		toolResult("toolu_2", "done", false),
		toolUse("toolu_3", "x = 3", 1500),
		toolResult("toolu_3", "NameError: boom\ndetails", true),
	}
	return ui, api
}

func TestFromSession(t *testing.T) {
	ui, api := sessionHistories(t)
	meta := SessionMeta{ID: "s-1", Title: "Sine", Model: "replay", Kernelspec: &KernelspecMeta{Name: "agentkernel", DisplayName: "Agent", Language: "python"}}
	nb, err := FromSession(ui, api, meta)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		id, role, source string
		count            int // 0: null
		outputs          []string
	}
	wants := []want{
		{"prompt-1000", RolePrompt, "Plot a sine wave", 1, []string{"display_data:I'll compute it.", "display_data:The value is **0.84**.", "display_data:<image image/png>"}},
		{"code-1004", RoleAgentCode, "import math\nprint(round(math.sin(1), 2))", 1, []string{"stdout:0.84\n"}},
		{"code-1005", RoleAgentCode, "print('done')", 0, []string{"stdout:done\n"}},
		{"tool-toolu_3", RoleAgentCode, "x = 3", 0, []string{"error:ToolError"}},
		{"prompt-2000", RolePrompt, "Now divide by zero", 2, []string{"error:AgentError", "display_data:Anything else?"}},
		{"code-2002", RoleUserCode, "1/0", 2, []string{"error:ZeroDivisionError"}},
	}
	if len(nb.Cells) != len(wants) {
		for _, c := range nb.Cells {
			t.Logf("cell %s", c.ID)
		}
		t.Fatalf("%d cells, want %d", len(nb.Cells), len(wants))
	}
	for i, w := range wants {
		c := nb.Cells[i]
		var am struct{ Role, ToolUseID string }
		c.Metadata.Get("agentkernel", &am)
		count := 0
		if c.ExecutionCount != nil {
			count = *c.ExecutionCount
		}
		if c.ID != w.id || am.Role != w.role || c.Source != w.source || count != w.count || c.CellType != Code {
			t.Errorf("cell %d = id %q role %q source %q count %d", i, c.ID, am.Role, c.Source, count)
		}
		if got := texts(c); !slices.Equal(got, w.outputs) {
			t.Errorf("cell %d outputs = %q, want %q", i, got, w.outputs)
		}
	}
	if s, _ := nb.Cells[0].Outputs[0].Data.Text("text/markdown"); s != "I'll compute it." {
		t.Errorf("markdown = %q", s)
	}
	var tu struct {
		ToolUseID string `json:"tool_use_id"`
	}
	nb.Cells[2].Metadata.Get("agentkernel", &tu)
	if tu.ToolUseID != "toolu_2" {
		t.Errorf("unstructured output linked to %q, want toolu_2", tu.ToolUseID)
	}
	if ks, _ := nb.Kernelspec(); ks.Name != "agentkernel" {
		t.Errorf("kernelspec = %+v", ks)
	}
	path := writeTemp(t, nb, "session.ipynb")
	back, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Deterministic: the same histories give the same bytes.
	again, _ := FromSession(ui, api, meta)
	a, _ := Marshal(back)
	b, _ := Marshal(again)
	if !bytes.Equal(a, b) {
		t.Errorf("export is not deterministic:\n%s", firstDiff(string(a), string(b)))
	}
}

func TestFromSessionEdgeCases(t *testing.T) {
	// Agent output before any prompt, and an empty history.
	nb, err := FromSession([]messages.UIMessage{
		say(5, messages.SayAPIReqStarted, ""),
		{TS: 6, Type: messages.TypeAsk, Ask: messages.AskCompletionResult, Text: "hi"},
	}, nil, SessionMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nb.Cells) != 1 || nb.Cells[0].Source != "" || len(nb.Cells[0].Outputs) != 1 {
		t.Errorf("cells = %+v", nb.Cells)
	}
	empty, err := FromSession(nil, nil, SessionMeta{})
	if err != nil || len(empty.Cells) != 0 {
		t.Errorf("empty export: %v, %d cells", err, len(empty.Cells))
	}
	writeTemp(t, nb, "edge.ipynb")

	// Bad input is named.
	_, err = FromSession([]messages.UIMessage{say(1, messages.SayText, "p"),
		say(2, messages.SayCommandOutput, `{"code": "x", "outputs": [{"output_type": "bogus"}]}`)}, nil, SessionMeta{})
	if err == nil || !strings.Contains(err.Error(), `ui[1] (ts 2): cell record: notebooks: output.output_type: unknown "bogus"`) {
		t.Errorf("bad record: %v", err)
	}
	bad := toolUse("t", "", 0)
	bad.Content[0].Input = json.RawMessage(`{"cmd": "ls"}`)
	_, err = FromSession(nil, []messages.APIMessage{bad}, SessionMeta{})
	if err == nil || !strings.Contains(err.Error(), `api[0].content[0].input: execute_code call without a "code" string`) {
		t.Errorf("bad tool input: %v", err)
	}
}

// pngB64 is a 1×1 PNG.
const pngB64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// texts are c's outputs, one string each.
func texts(c *Cell) []string {
	var out []string
	for _, o := range c.Outputs {
		switch o.OutputType {
		case Stream:
			out = append(out, o.Name+":"+o.Text)
		case ErrorOutput:
			out = append(out, "error:"+o.Ename)
		default:
			s, _ := o.Data.Text("text/plain")
			out = append(out, string(o.OutputType)+":"+s)
		}
	}
	return out
}
