package agent

import (
	"strings"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// The system prompt: what the model is told of where it is and what it
// can do. It is written here once, from the tools a request offers and the
// permission mode, so that a restricted mode never invites calls it will
// refuse; a turn's instructions (Config.Rules: an agent mode's, the
// user's rules) follow it.

// BasePrompt is the system prompt of a request that offers tools (by
// name; the toolbox tells their classes) in permission mode mode.
func BasePrompt(tb *Toolbox, tools []provider.Tool, mode Mode) string {
	has := map[string]bool{}
	classes := map[ToolClass]bool{}
	for _, pt := range tools {
		has[pt.Name] = true
		if tool, ok := tb.Lookup(pt.Name); ok {
			classes[tool.Class()] = true
		}
	}
	var can []string
	if has[ToolExecuteCode] {
		can = append(can, "run code in the notebook's kernel with execute_code (its outputs, plots included, are shown to the user)")
	}
	kernel := ""
	for _, srv := range tb.opts.KernelServers {
		if n := ExternalPrefix + srv + "__" + ToolExecuteCode; has[n] {
			kernel = n
			can = append(can, "run code in the user's own kernel, the notebook's, with "+n)
			break
		}
	}
	var reads []string
	for _, n := range []string{ToolReadFile, ToolListFiles, ToolSearchFiles} {
		if has[n] {
			reads = append(reads, n)
		}
	}
	var edits []string
	for _, n := range []string{ToolWriteFile, ToolEditFile} {
		if has[n] {
			edits = append(edits, n)
		}
	}
	switch {
	case len(reads) > 0 && len(edits) > 0:
		can = append(can, "read the workspace's files with "+andList(reads)+" and change them with "+andList(edits))
	case len(reads) > 0:
		can = append(can, "read the workspace's files with "+andList(reads))
	case len(edits) > 0:
		can = append(can, "change the workspace's files with "+andList(edits))
	}
	var cellTools []string
	for _, n := range []string{ToolNotebookInsert, ToolNotebookEdit, ToolNotebookMove, ToolNotebookDelete} {
		if has[n] {
			cellTools = append(cellTools, n)
		}
	}
	switch {
	case has[ToolNotebookRead] && len(cellTools) > 0:
		can = append(can, "read the notebook the user works in with notebook_read (every cell, by id) and change its cells with "+
			andList(cellTools))
	case has[ToolNotebookRead]:
		can = append(can, "read the notebook the user works in with notebook_read (every cell, by id)")
	}
	if has[ToolNotebookRun] {
		can = append(can, "run a cell of the notebook with notebook_run_cell (its outputs land in that cell)")
	}
	if has[ToolWebFetch] {
		can = append(can, "read web pages of the sites the user allowed with web_fetch")
	}
	if classes[ClassMCP] {
		can = append(can, "use the tools of the user's MCP servers")
	}
	if has[ToolAskFollowupQuestion] {
		can = append(can, "ask the user with ask_followup_question")
	}
	if has[ToolProposeCell] {
		can = append(can, "suggest a new cell with propose_cell")
	}
	var b strings.Builder
	b.WriteString("You are a coding agent working inside a Jupyter notebook.")
	if len(can) > 0 {
		if has[ToolAttemptCompletion] {
			b.WriteString(" You can " + strings.Join(can, ", ") + ", and finish with attempt_completion.")
		} else {
			b.WriteString(" You can " + andList(can) + ".")
		}
	} else if has[ToolAttemptCompletion] {
		b.WriteString(" Finish with attempt_completion.")
	}
	acts := has[ToolExecuteCode] || kernel != "" || len(edits) > 0 || len(cellTools) > 0 || has[ToolNotebookRun]
	switch {
	case mode == ModePlan:
		b.WriteString(" The permission mode is plan: you may look, not act. Running code and changing files are " +
			"refused, so those tools are not offered; lay out the steps you would take, and the user switches " +
			"the mode to carry them out.")
	case !acts:
		b.WriteString(" In this mode you can neither run code nor change files: answer from what you can read, " +
			"and say what you would do.")
	}
	b.WriteString(" Work step by step, check results, and keep answers short.")
	return b.String()
}

// andList joins items as "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
