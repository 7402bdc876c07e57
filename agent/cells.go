package agent

import "strings"

// This file: what a code cell of a notebook on agentkernel's kernel is —
// code for the backing kernel, a request to the agent, or a command of the
// kernel's — in its two modes. The kernel runs cells by it (package
// bridge), and the notebook tools write, run and refuse cells by it.
//
// In prompt mode (the "Agent" kernel) a bare cell is a request to the
// agent and a cell whose first line is %%code is code; in code mode (the
// "Agent (code)" kernel) a bare cell is code and a %%agent cell is a
// request. In both an %agent line is a command (a magic of the kernel's).

// The cell magics of agentkernel's kernel.
const (
	// CodeMagic, a cell's first line, makes it code in prompt mode.
	CodeMagic = "%%code"
	// AgentMagic, a cell's first line, makes it a request to the agent
	// in either mode.
	AgentMagic = "%%agent"
	// commandMagic starts an %agent line: a command of the kernel's.
	commandMagic = "%agent"
)

// CellUse is what a code cell is to agentkernel's kernel.
type CellUse int

// The uses of a cell.
const (
	// UseCode: code, run in the backing kernel.
	UseCode CellUse = iota + 1
	// UsePrompt: a request to the agent.
	UsePrompt
	// UseCommand: an %agent line, a command of the kernel's.
	UseCommand
)

// ParseCell says what a code cell holding source is in a notebook whose
// bare cells are prompts (prompt mode) or code (code mode), and gives
// what that use takes: the code without its %%code line, the request
// without its %%agent line, or the command (source).
func ParseCell(source string, prompt bool) (CellUse, string) {
	if isCommand(source) {
		return UseCommand, source
	}
	if body, ok := CutCellMagic(source, AgentMagic); ok {
		return UsePrompt, body
	}
	if !prompt {
		return UseCode, source
	}
	if body, ok := CutCellMagic(source, CodeMagic); ok {
		return UseCode, body
	}
	return UsePrompt, source
}

// CutCellMagic returns the body of a cell whose first line (past any
// blank ones) is the cell magic alone.
func CutCellMagic(source, magic string) (string, bool) {
	t := strings.TrimLeft(source, " \t\r\n")
	first, rest, _ := strings.Cut(t, "\n")
	if strings.TrimSpace(first) != magic {
		return "", false
	}
	return rest, true
}

// isCommand reports whether source is an %agent line.
func isCommand(source string) bool {
	t := strings.TrimSpace(source)
	return t == commandMagic || strings.HasPrefix(t, commandMagic+" ") || strings.HasPrefix(t, commandMagic+"\t")
}

// marked reports whether source says itself what it is: a %%code or
// %%agent cell, or an %agent command.
func marked(source string) bool {
	_, code := CutCellMagic(source, CodeMagic)
	_, agent := CutCellMagic(source, AgentMagic)
	return code || agent || isCommand(source)
}

// asCode is source as a code cell the agent writes holds it: in prompt
// mode under a %%code line, unless it says itself what it is (%%code,
// %%agent, %agent); in code mode as it is.
func (tb *Toolbox) asCode(source string) string {
	if !tb.opts.PromptCells || marked(source) {
		return source
	}
	return CodeMagic + "\n" + source
}
