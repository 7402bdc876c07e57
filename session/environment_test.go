package session

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestSystemPromptTellsTheEnvironment: the model's system prompt says
// today's date, the workspace, the kernel's language (the runner's
// language_info) and the cell mode of the session's kernel; execute_code's
// description names the language.
func TestSystemPromptTellsTheEnvironment(t *testing.T) {
	for _, kind := range []string{"prompt", "code"} {
		t.Run(kind, func(t *testing.T) {
			srv, open := scriptedModels(t)
			ws := t.TempDir()
			h := newHost(t, Config{Store: openStore(t), Workspace: ws, Model: "openai:m", OpenModel: open, Kind: kind})
			srv.Enqueue(scripted.Reply(scripted.Text("Hi.")))
			if _, err := h.Submit(context.Background(), "hello", Follow{}); err != nil {
				t.Fatal(err)
			}
			req := srv.Requests()[0]
			msgs := req.Messages()
			sys, _ := msgs[0]["content"].(string)
			for _, want := range []string{"Date: " + time.Now().Format("2006-01-02"), "Workspace: " + filepath.Clean(ws),
				"Kernel: Python", "Cells: " + kind + " mode."} {
				if !strings.Contains(sys, want) {
					t.Errorf("the system prompt does not say %q:\n%s", want, sys)
				}
			}
			if !strings.Contains(string(req.Raw), `"description":"Run Python code in the user's live kernel`) {
				t.Errorf("execute_code's description does not name the language: %s", req.Raw)
			}
		})
	}
}

// TestNotebookName: the notebook is named relative to the workspace, as
// the frontend's path (relative to the server's root) or the file's path
// gives it.
func TestNotebookName(t *testing.T) {
	for _, tt := range []struct{ ws, path, want string }{
		{"/home/ada/project/sub", "sub/analysis.ipynb", "analysis.ipynb"},
		{"/home/ada/project", "analysis.ipynb", "analysis.ipynb"},
		{"/home/ada/project", "other/analysis.ipynb", "other/analysis.ipynb"},
	} {
		if got := notebookName(tt.ws, pathCells(tt.path)); got != tt.want {
			t.Errorf("notebookName(%q, %q) = %q, want %q", tt.ws, tt.path, got, tt.want)
		}
	}
}

// pathCells is a Cells that only has a path.
type pathCells string

func (p pathCells) Path() string { return string(p) }
func (pathCells) Read(context.Context, int) (agent.NotebookView, error) {
	return agent.NotebookView{}, nil
}
func (pathCells) Insert(context.Context, int, Cell) (agent.NotebookCell, error) {
	return agent.NotebookCell{}, nil
}
func (pathCells) SetSource(context.Context, string, string) (agent.NotebookCell, error) {
	return agent.NotebookCell{}, nil
}
func (pathCells) Move(context.Context, string, int) (int, error)                   { return 0, nil }
func (pathCells) Delete(context.Context, string) (Cell, int, error)                { return Cell{}, 0, nil }
func (pathCells) SetOutputs(context.Context, string, []json.RawMessage, int) error { return nil }
