package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
)

// The tool names.
const (
	ToolExecuteCode         = "execute_code"
	ToolReadFile            = "read_file"
	ToolListFiles           = "list_files"
	ToolSearchFiles         = "search_files"
	ToolWriteFile           = "write_file"
	ToolEditFile            = "edit_file"
	ToolAskFollowupQuestion = "ask_followup_question"
	ToolAttemptCompletion   = "attempt_completion"
	ToolProposeCell         = "propose_cell"
)

// ToolClass groups tools by what they can do; the permission rules are
// stated per class.
type ToolClass int

// The tool classes.
const (
	// ClassRead tools look at files in the workspace: read_file,
	// list_files, search_files. Read-only.
	ClassRead ToolClass = iota + 1
	// ClassEdit tools change files in the workspace: write_file, edit_file.
	ClassEdit
	// ClassExecute runs code in the backing kernel: execute_code.
	ClassExecute
	// ClassInteract tools talk to the user and change nothing by
	// themselves: ask_followup_question, attempt_completion, propose_cell
	// (the proposed cell is not run). Read-only.
	ClassInteract
	// ClassMCP are the tools of MCP servers (a [ToolSource]): what they do
	// is up to the server, so they are asked like code unless a rule, the
	// server's alwaysAllow list or the mode allows them.
	ClassMCP
	// ClassFetch reads the web (web_fetch, of allowed sites): asked like
	// code, since a URL can carry data out.
	ClassFetch
	// ClassNotebook tools change the notebook's cells: insert, edit, move,
	// delete. Inserting and moving are allowed in the default mode;
	// changing or deleting a cell the agent did not write asks, with the
	// change shown per cell.
	ClassNotebook
)

func (c ToolClass) String() string {
	switch c {
	case ClassRead:
		return "read"
	case ClassEdit:
		return "edit"
	case ClassExecute:
		return "execute"
	case ClassInteract:
		return "interact"
	case ClassMCP:
		return "mcp"
	case ClassFetch:
		return "fetch"
	case ClassNotebook:
		return "notebook"
	default:
		return "unknown"
	}
}

// CodeRunner runs code in the backing kernel. The session host implements it. Run
// blocks until the code has finished; cancelling ctx must interrupt the
// kernel and make Run return promptly. A Python exception is not an error of
// Run: it is reported in CodeResult.Error. Run returns an error only when
// the code could not be run (no kernel, the kernel died, ctx cancelled).
type CodeRunner interface {
	// Run runs code; out, when not nil, is given its outputs as they come
	// (the running turn's TurnOptions.Output).
	Run(ctx context.Context, code string, out func(CodeOutput)) (CodeResult, error)
}

// CodeResult is what a cell produced in the backing kernel.
type CodeResult struct {
	Stdout string // stream stdout, concatenated
	Stderr string // stream stderr, concatenated
	Result string // text/plain of execute_result and of text-only display_data
	Images []Image
	Error  *CodeError // the cell raised; nil if it did not
}

// Image describes an image output. The image itself goes to the frontend
// through the bridge; the model gets a summary (see [Image.Summary]).
type Image struct {
	MIME   string // "image/png"
	Width  int    // pixels; 0 if unknown
	Height int    // pixels; 0 if unknown
	Bytes  int    // size of the decoded image
	// Data is the image base64-encoded, as the kernel sent it, for
	// displays that show it (the web panel); "" when not kept.
	Data string
}

// Limits on the images of a code run kept in the UI history (the web
// panel shows them): the first maxShownImages raster images of at most
// maxShownImageBytes each; the model's summary mentions every image.
const (
	maxShownImages     = 4
	maxShownImageBytes = 1 << 20
)

// DataURL returns the image as a data: URL for display, or "" when it is
// not a raster image the panel shows (PNG, JPEG, GIF, WebP), its data was
// not kept, or it is larger than maxShownImageBytes.
func (im Image) DataURL() string {
	switch im.MIME {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
	default:
		return ""
	}
	if im.Data == "" || len(im.Data) > maxShownImageBytes*4/3+4 {
		return ""
	}
	return "data:" + im.MIME + ";base64," + im.Data
}

// Summary returns a one-line description such as "[image/png 640x480, 23 KB]".
func (im Image) Summary() string {
	var b strings.Builder
	b.WriteString("[")
	b.WriteString(orDefault(im.MIME, "image"))
	if im.Width > 0 && im.Height > 0 {
		fmt.Fprintf(&b, " %dx%d", im.Width, im.Height)
	}
	fmt.Fprintf(&b, ", %s]", humanBytes(im.Bytes))
	return b.String()
}

// CodeError is an exception raised by a cell.
type CodeError struct {
	EName     string
	EValue    string
	Traceback []string // may carry ANSI colour codes; they are stripped for the model
}

// Result is what a tool call produced. Text is sent back to the model as
// the tool_result content; IsError marks that content as an error. The
// other fields are set by the tools that need the task loop to act.
type Result struct {
	Text    string
	IsError bool
	// Images summarises the images execute_code produced, as by
	// [Image.Summary]; they are also part of Text.
	Images []string
	// Shown are the images execute_code produced, as data: URLs for
	// displays (at most maxShownImages, each within maxShownImageBytes).
	Shown []string
	// SetNextInput is propose_cell's code: the frontend puts it into a new
	// cell (Jupyter's set_next_input payload).
	SetNextInput string
	// Completion is set by attempt_completion: the task ends with it.
	Completion *Completion
	// Followup is set by ask_followup_question: the loop asks the user and
	// sends the answer to the model as the tool result instead of Text.
	Followup *Followup
	// Blocks are sent to the model after Text in the tool result: the
	// images an MCP tool returned.
	Blocks []messages.ContentBlock
	// Diff is what a notebook tool changed in a cell, for the history's
	// tool_result.
	Diff string
}

// Completion is attempt_completion's result.
type Completion struct {
	Result string
}

// Followup is ask_followup_question's question.
type Followup struct {
	Question    string
	Suggestions []string
}

// InputError is a tool input that does not match the tool's schema. Field
// is the offending field ("" when the input as a whole is wrong).
type InputError struct {
	Tool   string
	Field  string
	Reason string
}

func (e *InputError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: invalid input: %s", e.Tool, e.Reason)
	}
	return fmt.Sprintf("%s: invalid input: field %q: %s", e.Tool, e.Field, e.Reason)
}

// ToolboxOptions configures a Toolbox. The zero value of every field but
// Workspace is usable; defaults are documented per field.
type ToolboxOptions struct {
	// Workspace confines the file tools. Required.
	Workspace *Workspace
	// Runner runs execute_code. Nil: execute_code fails with a clear error.
	Runner CodeRunner
	// MaxOutputChars caps the text of any one tool result: longer text
	// keeps its head and tail and says how much was cut. Default 20,000.
	MaxOutputChars int
	// MaxReadBytes caps how much of a file read_file reads. Default 256 KiB.
	MaxReadBytes int
	// MaxEntries caps list_files' entries. Default 1,000.
	MaxEntries int
	// MaxMatches caps search_files' matches. Default 200.
	MaxMatches int
	// MaxFileBytes is the largest file search_files searches and edit_file
	// edits. Default 10 MiB.
	MaxFileBytes int64
	// Source offers more tools (the MCP servers' tools), named with
	// ExternalPrefix. Nil: none.
	Source ToolSource
	// WebFetch, when it allows some sites, offers web_fetch. Nil: off.
	WebFetch *WebFetch
	// KernelServers name the Source's MCP servers that are the user's own
	// kernel, handed over by a client (an ACP client's session/new: the
	// notebook whose agent this is). When one offers execute_code, the
	// toolbox's own execute_code, which runs in a kernel of its own, steps
	// aside: it is not offered, and a call of it names the tool to use, so
	// that code runs where the user's variables are.
	KernelServers []string
	// Notebook, when set, gives the notebook the agent works in: the
	// notebook tools (notebook_read, notebook_insert_cell, …) are offered
	// while it gives one.
	Notebook NotebookSource
	// PromptCells says the notebook is in prompt mode (the "Agent"
	// kernel): a bare code cell is a request to the agent, and code runs
	// under a %%code line (see ParseCell). The notebook tools then write
	// code cells, and propose_cell its cell, with that line, run a cell's
	// code without it, refuse to run a request, and say so in their
	// descriptions. False: code mode, where a %%agent cell is a request.
	PromptCells bool
	// Variables, when set, reads the user's live namespace without a
	// visible cell: list_variables and inspect_variable are offered.
	Variables Variables
	// NotebookFile, when set, reads a notebook file (.ipynb) as its cells,
	// each output's text cut to maxOutput characters: read_file gives a
	// notebook as notebook_read does, not as its JSON.
	NotebookFile func(ctx context.Context, abs string, maxOutput int) (NotebookView, error)
	// Environment, when set, tells where the agent works now (the
	// kernel's language, the notebook, its cell mode): the system prompt
	// and execute_code's description say it. It is called for each
	// request, so it must be quick (no wait on a kernel's start).
	Environment func() Environment
	// Files, when set, is where read_file, write_file and edit_file read
	// and write text: an editor's buffers, unsaved changes included (an
	// ACP client's fs/read_text_file and fs/write_text_file). Nil: the
	// disk.
	Files Files
}

// Variables reads the user's live namespace, quietly: nothing runs in a
// cell, no execution count moves, no history entry is made.
type Variables interface {
	// List is the namespace, one variable a line (name, type, shape, a
	// table's columns, a function's signature, a short value), bounded.
	List(ctx context.Context) (string, error)
	// Inspect describes the variable name (or name.attribute), bounded: a
	// table's shape, dtypes, nulls, head and describe(), a container's
	// length and a sample, a callable's signature and docstring.
	Inspect(ctx context.Context, name string) (string, error)
}

// Files reads and writes the text of files for the file tools. Paths are
// absolute, already confined to the workspace.
type Files interface {
	ReadTextFile(ctx context.Context, path string) (string, error)
	WriteTextFile(ctx context.Context, path, content string) error
}

func (o ToolboxOptions) withDefaults() ToolboxOptions {
	if o.MaxOutputChars <= 0 {
		o.MaxOutputChars = 20_000
	}
	if o.MaxReadBytes <= 0 {
		o.MaxReadBytes = 256 << 10
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = 1000
	}
	if o.MaxMatches <= 0 {
		o.MaxMatches = 200
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 10 << 20
	}
	return o
}

// Toolbox is the registry of the agent's tools, bound to one workspace and
// one code runner. It is immutable after NewToolbox and safe for concurrent
// use; tools running concurrently on the same file are not serialised.
type Toolbox struct {
	opts  ToolboxOptions
	ws    *Workspace
	tools []*Tool
	index map[string]*Tool

	cellsMu sync.Mutex
	cells   map[string]string // the notebook cells the agent wrote: id → the source it left

	runs runs // the code the agent left running (runs.go)
}

// NewToolbox returns the toolbox of all tools.
func NewToolbox(opts ToolboxOptions) (*Toolbox, error) {
	if opts.Workspace == nil {
		return nil, errors.New("agent: toolbox: no workspace")
	}
	tb := &Toolbox{opts: opts.withDefaults(), ws: opts.Workspace, index: map[string]*Tool{}}
	for _, t := range tb.define() {
		schema, err := t.schema()
		if err != nil {
			return nil, fmt.Errorf("agent: toolbox: %s: %w", t.name, err)
		}
		t.inputSchema = schema
		tb.tools = append(tb.tools, t)
		tb.index[t.name] = t
	}
	return tb, nil
}

// Workspace returns the toolbox's workspace.
func (tb *Toolbox) Workspace() *Workspace { return tb.ws }

// Tools returns the tools as offered to the model: the toolbox's own in a
// fixed order, then the Source's (which waits, within ctx, for servers on
// their first start; a done ctx takes those that are ready now).
func (tb *Toolbox) Tools(ctx context.Context) []provider.Tool {
	var ext []SourceTool
	if tb.opts.Source != nil {
		ext = tb.opts.Source.Tools(ctx)
	}
	elsewhere := tb.kernelCode(ext)
	noNotebook := tb.opts.Notebook == nil || tb.opts.Notebook() == nil
	out := make([]provider.Tool, 0, len(tb.tools)+len(ext))
	for _, t := range tb.tools {
		if t.name == ToolExecuteCode && elsewhere != "" || noNotebook && IsNotebookTool(t.name) {
			continue
		}
		if (t.name == ToolWaitCode || t.name == ToolInterruptCode) && tb.runs.current() == nil {
			continue // offered while code the agent left running goes on
		}
		spec := t.Spec()
		if t.name == ToolExecuteCode {
			spec.Description = tb.executeCodeDescription()
		}
		out = append(out, spec)
	}
	for _, st := range ext {
		out = append(out, st.Spec)
	}
	return out
}

// kernelCode is the execute_code of a KernelServers server among the
// Source's tools ext, which the toolbox's own steps aside for; "" if none.
func (tb *Toolbox) kernelCode(ext []SourceTool) string {
	for _, srv := range tb.opts.KernelServers {
		want := ExternalPrefix + srv + "__" + ToolExecuteCode
		for _, st := range ext {
			if st.Spec.Name == want {
				return want
			}
		}
	}
	return ""
}

// Lookup returns the tool called name. For a Source's tool it may wait
// while the tool's server starts; see LookupContext.
func (tb *Toolbox) Lookup(name string) (*Tool, bool) {
	return tb.LookupContext(context.Background(), name)
}

// LookupContext is Lookup with a context that bounds the wait for a
// Source's server that is still starting.
func (tb *Toolbox) LookupContext(ctx context.Context, name string) (*Tool, bool) {
	if t, ok := tb.index[name]; ok {
		return t, true
	}
	if tb.opts.Source == nil || !IsExternal(name) {
		return nil, false
	}
	st, ok := tb.opts.Source.Lookup(ctx, name)
	if !ok {
		return nil, false
	}
	return tb.externalTool(st), true
}

// Tool is one tool. Its methods are safe for concurrent use.
type Tool struct {
	name        string
	description string
	class       ToolClass
	params      []param
	inputSchema json.RawMessage
	// subject is the field the permission rules look at: the path of file
	// tools, the code of execute_code, propose_cell and notebook_run_cell
	// (the cell's, which check puts in the input); "" for none.
	subject string
	// check, when set, reads what a call is about before it is decided
	// (the notebook tools' cell; see Toolbox.checkCall).
	check func(ctx context.Context, in map[string]any) (map[string]any, review, error)
	run   func(ctx context.Context, in map[string]any) (Result, error)
	// runCode, set instead of run for execute_code, is also given the
	// running turn's output sink.
	runCode func(ctx context.Context, in map[string]any, out func(CodeOutput)) (Result, error)
	// external is the Source's description of an external tool; nil for
	// the toolbox's own.
	external *SourceTool
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.name }

// Class returns the tool's class.
func (t *Tool) Class() ToolClass { return t.class }

// ReadOnly reports whether the tool changes nothing and runs no code: the
// read and interact classes. Read-only tools are allowed in every mode.
func (t *Tool) ReadOnly() bool { return t.class == ClassRead || t.class == ClassInteract }

// Spec returns the tool as offered to the model.
func (t *Tool) Spec() provider.Tool {
	return provider.Tool{Name: t.name, Description: t.description, InputSchema: t.inputSchema}
}

// Validate checks input against the tool's schema and returns the decoded
// fields (strings, int64s, bools, []string). Errors are *[InputError].
func (t *Tool) Validate(input json.RawMessage) (map[string]any, error) {
	return t.validate(input)
}

// Execute validates input and runs the tool. It always returns a Result the
// loop can send to the model. The error is non-nil when the tool failed
// (invalid input, missing file, no match, the runner failed, ctx was
// cancelled); the Result then has IsError set and Text is the error's
// message. Code that ran and raised is not a tool failure: IsError is set
// with a nil error.
func (t *Tool) Execute(ctx context.Context, input json.RawMessage) (Result, error) {
	return t.execute(ctx, input, nil)
}

// execute is Execute in a turn whose code outputs go to out.
func (t *Tool) execute(ctx context.Context, input json.RawMessage, out func(CodeOutput)) (Result, error) {
	in, err := t.validate(input)
	if err == nil {
		err = ctx.Err()
	}
	var res Result
	switch {
	case err != nil:
	case t.runCode != nil:
		res, err = t.runCode(ctx, in, out)
	default:
		res, err = t.run(ctx, in)
	}
	if err != nil {
		return Result{Text: "Error: " + err.Error(), IsError: true}, err
	}
	return res, nil
}

// subjectOf returns the subject field of a validated input.
func (t *Tool) subjectOf(in map[string]any) string {
	if t.subject == "" {
		return ""
	}
	s, _ := in[t.subject].(string)
	return s
}

// ---- helpers ----

// resolve resolves path in the workspace and refuses protected paths (the
// policy refuses them too; this keeps the tools safe on their own).
func (tb *Toolbox) resolve(path string) (string, error) {
	abs, err := tb.ws.Resolve(path)
	if err != nil {
		return "", err
	}
	if why := protectedEither(tb.ws.lexicalRel(path, abs), tb.ws.Rel(abs)); why != "" {
		return "", fmt.Errorf("path %q: protected (%s)", path, why)
	}
	return abs, nil
}

// resolveFile resolves the path of a file to read: one that exists on
// disk, or, when Files is set (an editor's buffers), any path in the
// workspace that is not a directory on disk: the editor knows files the
// disk does not yet (an unsaved buffer), and says so when it does not.
func (tb *Toolbox) resolveFile(path string) (string, error) {
	if tb.opts.Files == nil {
		return tb.resolveExisting(path, false)
	}
	abs, err := tb.resolve(path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return "", fmt.Errorf("path %q: is a directory", path)
	}
	return abs, nil
}

// resolveExisting resolves path and checks that it exists and is (or is
// not) a directory.
func (tb *Toolbox) resolveExisting(path string, dir bool) (string, error) {
	abs, err := tb.resolve(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("path %q: does not exist", path)
		}
		return "", fmt.Errorf("path %q: %w", path, err)
	}
	if dir && !fi.IsDir() {
		return "", fmt.Errorf("path %q: not a directory", path)
	}
	if !dir && fi.IsDir() {
		return "", fmt.Errorf("path %q: is a directory (use list_files)", path)
	}
	return abs, nil
}

// capText caps s at MaxOutputChars characters, keeping the head and the
// tail and saying how much was cut.
func (tb *Toolbox) capText(s string) string { return capText(s, tb.opts.MaxOutputChars) }

// CapText caps s at limit characters, keeping its head and tail and
// saying how much was cut, as every tool result is capped.
func CapText(s string, limit int) string { return capText(s, limit) }

// HumanBytes formats a size: "512 B", "23 KB", "1.5 MB".
func HumanBytes(n int) string { return humanBytes(n) }

func capText(s string, limit int) string {
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	r := []rune(s)
	note := fmt.Sprintf("\n[... %d characters cut ...]\n", n-limit)
	keep := max(limit-utf8.RuneCountInString(note), 0)
	head := keep / 2
	tail := keep - head
	return string(r[:head]) + note + string(r[n-tail:])
}

func truncateRunes(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	return string([]rune(s)[:limit]) + "…"
}

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

func stripANSI(s string) string { return ansiRE.ReplaceAllString(s, "") }

func humanBytes(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%d KB", (n+512)/1024)
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
}

func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// matchLines returns the line numbers where search starts, at most ten.
func matchLines(text, search string) string {
	var lines []string
	off := 0
	for len(lines) < 10 {
		i := strings.Index(text[off:], search)
		if i < 0 {
			break
		}
		lines = append(lines, fmt.Sprint(strings.Count(text[:off+i], "\n")+1))
		off += i + len(search)
	}
	return strings.Join(lines, ", ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
