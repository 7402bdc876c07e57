package agent

import (
	"strings"
	"time"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// The system prompt: what the model is told of where it is and what it
// can do. It is written here once, from the tools a request offers, the
// permission mode and the Environment, so that a restricted mode never
// invites calls it will refuse and the model knows the kernel, the
// notebook and the mode it works in; a turn's instructions (Config.Rules:
// an agent mode's, the user's rules) follow it. promptBudget bounds it
// with the tools' schemas; the snapshot tests (testdata/prompts) make a
// change to it a reviewed diff.

// CellMode is how a notebook's cells reach the kernel.
type CellMode string

// The cell modes of agentkernel's kernels.
const (
	// PromptCells: a cell is a request to the agent; a cell whose first
	// line is %%code runs as code ("Agent").
	PromptCells CellMode = "prompt"
	// CodeCells: a cell is code for the backing kernel; a %%agent cell is
	// a request to the agent ("Agent (code)").
	CodeCells CellMode = "code"
)

// Environment is where the agent works, as the system prompt tells the
// model: facts the session already has. The zero value tells nothing;
// each field is left out when it is empty.
type Environment struct {
	// Date is today (the date only is told).
	Date time.Time
	// OS names the operating system ("Linux", "macOS").
	OS string
	// Workspace is the workspace root, where the file tools' relative
	// paths start.
	Workspace string
	// Language and LanguageVersion are the backing kernel's language_info
	// name and version ("python", "3.11.2"); "" when not known yet.
	Language, LanguageVersion string
	// Notebook is the notebook the user works in (relative to the
	// workspace when it is in it); "" when there is none.
	Notebook string
	// Cells is the notebook's cell mode; "" when the agent is not behind
	// a notebook's cells (agentkernel ask, an ACP client).
	Cells CellMode
}

// promptBudget is how many tokens (EstimateTokens) the system prompt and
// the schemas of every built-in tool may come to together, in the widest
// configuration (every tool offered, a notebook in prompt mode, every
// environment fact known): TestPromptBudget holds it.
const promptBudget = 3000

// BasePrompt is the system prompt of a request that offers tools (by
// name; the toolbox tells their classes) in permission mode mode, in the
// toolbox's Environment.
func BasePrompt(tb *Toolbox, tools []provider.Tool, mode PermissionMode) string {
	p := promptFacts{tb: tb, has: map[string]bool{}, classes: map[ToolClass]bool{}, mode: mode, env: tb.environment()}
	for _, pt := range tools {
		p.has[pt.Name] = true
		if tool, ok := tb.Lookup(pt.Name); ok {
			p.classes[tool.Class()] = true
		}
	}
	for _, srv := range tb.opts.KernelServers {
		if n := ExternalPrefix + srv + "__" + ToolExecuteCode; p.has[n] {
			p.kernel = n
			break
		}
	}
	var b strings.Builder
	b.WriteString(p.intro())
	for _, section := range []string{p.envBlock(), p.contextBlock(), p.notebookPractice(), p.dataPractice(), p.toolUse(), p.output()} {
		if section != "" {
			b.WriteString("\n\n" + section)
		}
	}
	return b.String()
}

// promptFacts are what BasePrompt writes from.
type promptFacts struct {
	tb      *Toolbox
	has     map[string]bool
	classes map[ToolClass]bool
	mode    PermissionMode
	env     Environment
	kernel  string // the user's kernel's execute_code of a KernelServers server, if offered
}

// runs reports whether code can be run in the user's kernel.
func (p promptFacts) runs() bool { return p.has[ToolExecuteCode] || p.kernel != "" }

// cellTools are the offered tools that change the notebook's cells.
func (p promptFacts) cellTools() []string {
	var out []string
	for _, n := range []string{ToolNotebookInsert, ToolNotebookEdit, ToolNotebookMove, ToolNotebookDelete} {
		if p.has[n] {
			out = append(out, n)
		}
	}
	return out
}

func (p promptFacts) offered(names ...string) []string {
	var out []string
	for _, n := range names {
		if p.has[n] {
			out = append(out, n)
		}
	}
	return out
}

// intro says what the agent is and what it can do (each kind of tool
// offered, briefly: the tools' descriptions say the rest), and what the
// mode keeps it from.
func (p promptFacts) intro() string {
	var can []string
	with := func(what string, tools ...string) {
		if len(tools) > 0 {
			can = append(can, what+" ("+strings.Join(tools, ", ")+")")
		}
	}
	with("run code in the kernel", p.offered(ToolExecuteCode, p.kernel)...)
	with("look at the kernel's variables without running code", p.offered(ToolInspectVariable, ToolListVariables)...)
	cells := p.cellTools()
	switch nb := append(cells, p.offered(ToolNotebookRun)...); {
	case p.has[ToolNotebookRead] && len(nb) > 0:
		with("read the notebook's cells, change them and run them", append([]string{ToolNotebookRead}, nb...)...)
	case p.has[ToolNotebookRead]:
		with("read the notebook's cells", ToolNotebookRead)
	}
	reads := p.offered(ToolReadFile, ToolListFiles, ToolSearchFiles)
	edits := p.offered(ToolWriteFile, ToolEditFile)
	switch {
	case len(reads) > 0 && len(edits) > 0:
		with("read and change the workspace's files", append(reads, edits...)...)
	case len(reads) > 0:
		with("read the workspace's files", reads...)
	case len(edits) > 0:
		with("change the workspace's files", edits...)
	}
	with("fetch pages of the sites the user allowed", p.offered(ToolWebFetch)...)
	if p.classes[ClassMCP] {
		can = append(can, "use the tools of the user's MCP servers")
	}
	with("ask the user", p.offered(ToolAskFollowupQuestion)...)
	with("suggest a cell for the user to run", p.offered(ToolProposeCell)...)
	var b strings.Builder
	b.WriteString("You are a coding agent in a Jupyter notebook, beside its user: you work in their live kernel, notebook and files.")
	if len(can) > 0 {
		b.WriteString(" You can " + strings.Join(can, "; "))
		if p.has[ToolAttemptCompletion] {
			b.WriteString("; and finish with attempt_completion")
		}
		b.WriteString(".")
	} else if p.has[ToolAttemptCompletion] {
		b.WriteString(" Finish with attempt_completion.")
	}
	acts := p.runs() || len(edits) > 0 || len(cells) > 0 || p.has[ToolNotebookRun]
	switch {
	case p.mode == PermissionPlan:
		b.WriteString(" The permission mode is plan: you may look, not act. Running code and changing files are " +
			"refused, so those tools are not offered; lay out the steps you would take, and the user switches " +
			"the mode to carry them out.")
	case !acts:
		b.WriteString(" In this mode you can neither run code nor change files: answer from what you can read, " +
			"and say what you would do.")
	}
	return b.String()
}

// envBlock is the environment: date, OS, workspace, kernel, notebook and
// its cell mode.
func (p promptFacts) envBlock() string {
	e := p.env
	var lines []string
	if !e.Date.IsZero() {
		lines = append(lines, "Date: "+e.Date.Format("2006-01-02 (Monday)"))
	}
	if e.OS != "" {
		lines = append(lines, "OS: "+e.OS)
	}
	if e.Workspace != "" {
		lines = append(lines, "Workspace: "+e.Workspace+" (the file tools' paths are relative to it)")
	}
	if k := kernelName(e); k != "" {
		lines = append(lines, "Kernel: "+k+", live: the user's variables are in it")
	}
	if e.Notebook != "" {
		lines = append(lines, "Notebook: "+e.Notebook)
	}
	switch e.Cells {
	case PromptCells:
		lines = append(lines, "Cells: prompt mode. A cell the user runs is a request to you, unless its first line is "+
			"%%code: then it runs as code. A code cell you write must start with a %%code line, or it is a prompt.")
	case CodeCells:
		lines = append(lines, "Cells: code mode. A cell the user runs is code for the kernel; a cell that starts with "+
			"%%agent is a request to you.")
	}
	if len(lines) == 0 {
		return ""
	}
	return "<env>\n" + strings.Join(lines, "\n") + "\n</env>"
}

// kernelName is the kernel as the model is told it: "python 3.11.2".
func kernelName(e Environment) string {
	return strings.TrimSpace(languageName(e.Language) + " " + e.LanguageVersion)
}

// contextBlock explains the context block each user message may open
// with (Config.Context).
func (p promptFacts) contextBlock() string {
	if p.env.Cells == "" {
		return "" // no notebook: the host writes no such block
	}
	return "A user message may open with a <notebook_context> block, written by the kernel, not the user: the cells " +
		"the user ran since the last message (code and output), the cell they are in and their selection, what their " +
		"@-mentions name, the kernel's variables (a summary, cut) and restarts. Use it; do not ask for what it shows."
}

// notebookPractice is how to work in a notebook: scratch code against
// kept cells, small cells, where to put them, failing cells, expensive
// steps.
func (p promptFacts) notebookPractice() string {
	var rules []string
	kept := p.has[ToolNotebookInsert] && p.has[ToolNotebookRun]
	run := ToolExecuteCode
	if p.kernel != "" {
		run = p.kernel
	}
	switch {
	case p.runs() && kept:
		rules = append(rules, run+" is scratch: it runs in the user's kernel, with their variables (what it defines "+
			"stays there), but its code is not kept. Use it to look and check. Code the user should keep goes into the "+
			"notebook: notebook_insert_cell, then notebook_run_cell.")
	case p.runs() && p.has[ToolProposeCell]:
		rules = append(rules, run+" is scratch: it runs in the user's kernel, with their variables, but its code is "+
			"not kept. Code the user should keep is proposed as a cell with propose_cell.")
	case p.runs():
		rules = append(rules, run+" runs in the user's kernel, with their variables; its code is not kept in the notebook.")
	}
	if p.has[ToolInspectVariable] && p.runs() {
		rules = append(rules, "To look at a variable, use inspect_variable rather than code: it asks nobody and leaves no trace.")
	}
	if len(p.cellTools()) > 0 {
		rules = append(rules,
			"Small cells, one task each; Markdown cells for the narrative.",
			"Put new cells below the cell the user is in, unless told otherwise.")
		if p.has[ToolNotebookEdit] {
			rules = append(rules, "When a cell fails, fix that cell in place and run it again, rather than adding a new one.")
		}
	}
	if p.has[ToolExecuteCode] || p.has[ToolNotebookRun] {
		rules = append(rules, "Code waits up to its call's timeout (120 s unless you give one), then the call returns "+
			"what it printed so far and \"still running\": the code goes on, and you are offered tools to wait for it or stop it.")
	}
	if p.runs() || p.has[ToolNotebookRun] {
		install := "installing packages"
		if l := p.env.Language; l == "" || l == "python" {
			install += " (%pip install)"
		}
		rules = append(rules, "Do not re-run cells that take long unless asked. Ask before a long computation, a "+
			"big download or "+install+".")
	}
	if len(rules) == 0 {
		return ""
	}
	return "Working in the notebook:\n- " + strings.Join(rules, "\n- ")
}

// dataPractice is how to treat the user's data.
func (p promptFacts) dataPractice() string {
	if !p.runs() && !p.has[ToolNotebookRun] {
		return ""
	}
	return "Data:\n- Before transforming data, look at its shape, dtypes, nulls and a few rows; after a join or merge, " +
		"check the shape.\n- Give plots a title and axis labels."
}

// toolUse is how to use tools: read first, reads together, denials.
func (p promptFacts) toolUse() string {
	var rules []string
	switch files, cells := len(p.offered(ToolEditFile, ToolWriteFile)) > 0, len(p.cellTools()) > 0; {
	case files && cells:
		rules = append(rules, "Read a file or a cell before you change it.")
	case files:
		rules = append(rules, "Read a file before you change it.")
	case cells:
		rules = append(rules, "Read a cell before you change it.")
	}
	rules = append(rules, "Calls that do not depend on each other (reads, above all) may go in one step.",
		"When a call is denied, do not retry it or reach the same end another way: change the plan, or ask the user.")
	if p.has[ToolAttemptCompletion] {
		rules = append(rules, "When the task is done, call attempt_completion with the result; do not also write the "+
			"result as text: the user would read it twice.")
	}
	return "Tools:\n- " + strings.Join(rules, "\n- ")
}

// output is how answers are shown.
func (p promptFacts) output() string {
	return "Answers are shown as Markdown with math ($…$ and $$…$$): write a dollar sign in an amount as \\$. " +
		"Work step by step, check results, and keep answers short."
}

// environment is the toolbox's Environment now (the zero value when it
// has none).
func (tb *Toolbox) environment() Environment {
	if f := tb.opts.Environment; f != nil {
		return f()
	}
	return Environment{}
}

// languageName is a kernel language as prose: "Python", "R", "Julia".
func languageName(lang string) string {
	switch strings.ToLower(lang) {
	case "":
		return ""
	case "python":
		return "Python"
	case "r":
		return "R"
	case "julia":
		return "Julia"
	}
	return lang
}
