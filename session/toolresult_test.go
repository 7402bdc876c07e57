package session

import (
	"context"
	"testing"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestFileToolResults: the file tools' outcomes are in the UI history — a
// write, an edit with its diff, and an edit that failed, with its error.
func TestFileToolResults(t *testing.T) {
	srv, open := scriptedModels(t)
	h := newHost(t, Config{Store: openStore(t), Model: "openai:m", OpenModel: open, PermissionMode: agent.PermissionAcceptEdits})
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("w", "write_file", `{"path":"a.py","content":"x = 1\ny = 2\n"}`)),
		scripted.Reply(scripted.ToolCall("e", "edit_file", `{"path":"a.py","search":"y = 2","replace":"y = 3\nz = 4"}`)),
		scripted.Reply(scripted.ToolCall("f", "edit_file", `{"path":"a.py","search":"nowhere","replace":"q"}`)),
		scripted.Reply(scripted.Text("Done.")),
	)
	if _, err := h.Submit(context.Background(), "edit a.py", Follow{}); err != nil {
		t.Fatal(err)
	}
	var got []messages.ToolResult
	for _, m := range h.Conversation().UI() {
		if r, ok := messages.ParseToolResult(m); ok {
			got = append(got, r)
		}
	}
	if len(got) != 3 {
		t.Fatalf("tool results %+v, want 3", got)
	}
	if w := got[0]; w.Tool != "write_file" || !w.OK || w.Path != "a.py" || w.Diff != "+ x = 1\n+ y = 2\n" {
		t.Errorf("the write: %+v", w)
	}
	if e := got[1]; e.Tool != "edit_file" || !e.OK || e.Diff != "- y = 2\n+ y = 3\n+ z = 4\n" {
		t.Errorf("the edit: %+v", e)
	}
	if f := got[2]; f.OK || f.Diff != "" || f.Summary == "" {
		t.Errorf("the failed edit: %+v", f)
	}
}
