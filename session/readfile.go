package session

import (
	"context"

	"github.com/agentkernel/agentkernel/agent"
)

// notebookFile is the agent's ToolboxOptions.NotebookFile: read_file of a
// notebook reads its cells, through Config.OpenNotebook (nil when the
// host cannot open notebook files).
func (h *Host) notebookFile() func(ctx context.Context, abs string, maxOutput int) (agent.NotebookView, error) {
	open := h.cfg.OpenNotebook
	if open == nil {
		return nil
	}
	return func(ctx context.Context, abs string, maxOutput int) (agent.NotebookView, error) {
		cells, err := open(abs)
		if err != nil {
			return agent.NotebookView{}, err
		}
		return cells.Read(ctx, maxOutput)
	}
}
