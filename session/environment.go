package session

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/agentkernel/agentkernel/agent"
)

// environment is the agent.Environment of the host's sessions, as the
// system prompt tells it: the facts the host has now, read without
// waiting (a kernel still starting has no language yet).
func (h *Host) environment() agent.Environment {
	env := agent.Environment{Date: time.Now(), OS: osName(runtime.GOOS), Workspace: h.cfg.Workspace}
	switch {
	case h.tools.promptCells() || h.cfg.Kind == "prompt":
		env.Cells = agent.PromptCells
	case h.cfg.Kind == "code":
		env.Cells = agent.CodeCells
	}
	if r := h.cfg.Runner; r != nil {
		now, stop := context.WithCancel(context.Background())
		stop() // what is known now: no wait for a start
		var li struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		}
		if raw := r.LanguageInfo(now); raw != nil && json.Unmarshal(raw, &li) == nil {
			env.Language, env.LanguageVersion = li.Name, li.Version
		}
	}
	if cells := h.tools.currentCells(); cells != nil {
		env.Notebook = notebookName(h.cfg.Workspace, cells)
	}
	return env
}

// notebookName names the notebook of cells for the model, relative to
// the workspace where it can: a file's path, or the frontend's path (which
// is relative to the Jupyter server's root) without the directories the
// workspace already ends in.
func notebookName(workspace string, cells Cells) string {
	if f, ok := cells.(FileCells); ok {
		if rel, err := filepath.Rel(workspace, f.File()); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
		return f.File()
	}
	p := filepath.ToSlash(cells.Path())
	if dir := filepath.Dir(filepath.FromSlash(p)); dir != "." && strings.HasSuffix(filepath.Clean(workspace), string(filepath.Separator)+dir) {
		return filepath.Base(p)
	}
	return p
}

// osName is GOOS as people name it.
func osName(goos string) string {
	switch goos {
	case "linux":
		return "Linux"
	case "darwin":
		return "macOS"
	case "windows":
		return "Windows"
	case "freebsd":
		return "FreeBSD"
	}
	return goos
}
