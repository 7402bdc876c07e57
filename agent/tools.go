package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentkernel/agentkernel/agent/provider"
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
	default:
		return "unknown"
	}
}

// CodeRunner runs code in the backing kernel. The bridge implements it. Run
// blocks until the code has finished; cancelling ctx must interrupt the
// kernel and make Run return promptly. A Python exception is not an error of
// Run: it is reported in CodeResult.Error. Run returns an error only when
// the code could not be run (no kernel, the kernel died, ctx cancelled).
type CodeRunner interface {
	Run(ctx context.Context, code string) (CodeResult, error)
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
	// SetNextInput is propose_cell's code: the frontend puts it into a new
	// cell (Jupyter's set_next_input payload).
	SetNextInput string
	// Completion is set by attempt_completion: the task ends with it.
	Completion *Completion
	// Followup is set by ask_followup_question: the loop asks the user and
	// sends the answer to the model as the tool result instead of Text.
	Followup *Followup
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

// Tools returns the tools as offered to the model, in a fixed order.
func (tb *Toolbox) Tools() []provider.Tool {
	out := make([]provider.Tool, len(tb.tools))
	for i, t := range tb.tools {
		out[i] = t.Spec()
	}
	return out
}

// Lookup returns the tool called name.
func (tb *Toolbox) Lookup(name string) (*Tool, bool) {
	t, ok := tb.index[name]
	return t, ok
}

// Tool is one tool. Its methods are safe for concurrent use.
type Tool struct {
	name        string
	description string
	class       ToolClass
	params      []param
	inputSchema json.RawMessage
	// subject is the field the permission rules look at: the path of file
	// tools, the code of execute_code and propose_cell; "" for none.
	subject string
	run     func(ctx context.Context, in map[string]any) (Result, error)
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
	in, err := t.validate(input)
	if err == nil {
		err = ctx.Err()
	}
	var res Result
	if err == nil {
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

// ---- schema and validation ----

type paramType int

const (
	tString paramType = iota
	tInteger
	tBoolean
	tStrings
)

type param struct {
	name     string
	typ      paramType
	required bool
	desc     string
	min      int64 // integers
	// blank allows an empty or all-space required string (file content,
	// a replacement); other required strings must have text.
	blank bool
}

func (t *Tool) schema() (json.RawMessage, error) {
	props := map[string]any{}
	required := []string{}
	for _, p := range t.params {
		s := map[string]any{"description": p.desc}
		switch p.typ {
		case tString:
			s["type"] = "string"
		case tInteger:
			s["type"] = "integer"
			s["minimum"] = p.min
		case tBoolean:
			s["type"] = "boolean"
		case tStrings:
			s["type"] = "array"
			s["items"] = map[string]any{"type": "string"}
		}
		props[p.name] = s
		if p.required {
			required = append(required, p.name)
		}
	}
	return json.Marshal(map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	})
}

func (t *Tool) validate(input json.RawMessage) (map[string]any, error) {
	bad := func(field, format string, args ...any) error {
		return &InputError{Tool: t.name, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	raw := map[string]json.RawMessage{}
	trimmed := bytes.TrimSpace(input)
	if len(trimmed) != 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' {
			return nil, bad("", "want a JSON object")
		}
		if err := json.Unmarshal(trimmed, &raw); err != nil {
			return nil, bad("", "not valid JSON: %v", err)
		}
	}
	names := make([]string, len(t.params))
	for i, p := range t.params {
		names[i] = p.name
	}
	extra := []string{}
	for k := range raw {
		if !slices.Contains(names, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return nil, bad(extra[0], "unknown field (the fields are: %s)", strings.Join(names, ", "))
	}
	out := map[string]any{}
	for _, p := range t.params {
		v, ok := raw[p.name]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			if p.required {
				return nil, bad(p.name, "missing (required)")
			}
			continue
		}
		switch p.typ {
		case tString:
			var s string
			if json.Unmarshal(v, &s) != nil {
				return nil, bad(p.name, "want a string, got %s", jsonKind(v))
			}
			if p.required && !p.blank && strings.TrimSpace(s) == "" {
				return nil, bad(p.name, "empty")
			}
			out[p.name] = s
		case tInteger:
			var f float64
			if json.Unmarshal(v, &f) != nil {
				return nil, bad(p.name, "want an integer, got %s", jsonKind(v))
			}
			if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return nil, bad(p.name, "want an integer, got %s", v)
			}
			if int64(f) < p.min {
				return nil, bad(p.name, "must be at least %d, got %d", p.min, int64(f))
			}
			out[p.name] = int64(f)
		case tBoolean:
			var b bool
			if json.Unmarshal(v, &b) != nil {
				return nil, bad(p.name, "want a boolean, got %s", jsonKind(v))
			}
			out[p.name] = b
		case tStrings:
			var ss []string
			if json.Unmarshal(v, &ss) != nil {
				return nil, bad(p.name, "want an array of strings, got %s", jsonKind(v))
			}
			out[p.name] = ss
		}
	}
	return out, nil
}

func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// ---- the tools ----

func (tb *Toolbox) define() []*Tool {
	pathParam := func(desc string) param {
		return param{name: "path", typ: tString, required: true, desc: desc}
	}
	return []*Tool{
		{
			name: ToolExecuteCode, class: ClassExecute, subject: "code",
			description: "Run code in the notebook's backing kernel (Python with IPython by default: " +
				"`!cmd` and `%%bash` work). Variables persist between calls. Returns stdout, stderr, " +
				"the result, a summary of images, and the error with its traceback if the code raised.",
			params: []param{{name: "code", typ: tString, required: true, desc: "The code to run."}},
			run:    tb.executeCode,
		},
		{
			name: ToolReadFile, class: ClassRead, subject: "path",
			description: "Read a text file in the workspace. Lines are numbered (\"12 | text\"); " +
				"the numbers are not part of the file. Use start_line/end_line for large files.",
			params: []param{
				pathParam("File path, relative to the workspace root."),
				{name: "start_line", typ: tInteger, min: 1, desc: "First line to read (1-based). Default 1."},
				{name: "end_line", typ: tInteger, min: 1, desc: "Last line to read (inclusive). Default: the end."},
			},
			run: tb.readFile,
		},
		{
			name: ToolListFiles, class: ClassRead, subject: "path",
			description: "List a directory of the workspace, sorted; directories end in \"/\". " +
				".git is skipped.",
			params: []param{
				pathParam("Directory, relative to the workspace root (\".\" for the root)."),
				{name: "recursive", typ: tBoolean, desc: "List subdirectories too. Default false."},
			},
			run: tb.listFiles,
		},
		{
			name: ToolSearchFiles, class: ClassRead, subject: "path",
			description: "Search files under a directory of the workspace for a regular expression " +
				"(Go RE2 syntax). Returns \"file:line: text\" for each matching line.",
			params: []param{
				pathParam("Directory to search, relative to the workspace root."),
				{name: "regex", typ: tString, required: true, desc: "Regular expression (RE2)."},
				{name: "file_pattern", typ: tString, desc: "Glob on file names, e.g. \"*.py\". Default: all files."},
			},
			run: tb.searchFiles,
		},
		{
			name: ToolWriteFile, class: ClassEdit, subject: "path",
			description: "Write a file in the workspace, replacing it if it exists; missing " +
				"directories are created.",
			params: []param{
				pathParam("File path, relative to the workspace root."),
				{name: "content", typ: tString, required: true, blank: true, desc: "The complete new content."},
			},
			run: tb.writeFile,
		},
		{
			name: ToolEditFile, class: ClassEdit, subject: "path",
			description: "Replace text in a file of the workspace. `search` must match exactly once " +
				"(include enough context) unless replace_all is true.",
			params: []param{
				pathParam("File path, relative to the workspace root."),
				{name: "search", typ: tString, required: true, desc: "Exact text to find."},
				{name: "replace", typ: tString, required: true, blank: true, desc: "Text to put in its place."},
				{name: "replace_all", typ: tBoolean, desc: "Replace every occurrence. Default false."},
			},
			run: tb.editFile,
		},
		{
			name: ToolAskFollowupQuestion, class: ClassInteract,
			description: "Ask the user a question when you need information to go on. Offer " +
				"suggested answers when you can.",
			params: []param{
				{name: "question", typ: tString, required: true, desc: "The question."},
				{name: "suggestions", typ: tStrings, desc: "Suggested answers."},
			},
			run: tb.askFollowup,
		},
		{
			name: ToolAttemptCompletion, class: ClassInteract,
			description: "Finish the task and present the result to the user.",
			params: []param{
				{name: "result", typ: tString, required: true, desc: "The final result, for the user."},
			},
			run: tb.attemptCompletion,
		},
		{
			name: ToolProposeCell, class: ClassInteract, subject: "code",
			description: "Propose code as the notebook's next cell. It is not run: the user " +
				"reviews and runs it.",
			params: []param{{name: "code", typ: tString, required: true, desc: "The cell's code."}},
			run:    tb.proposeCell,
		},
	}
}

func (tb *Toolbox) executeCode(ctx context.Context, in map[string]any) (Result, error) {
	if tb.opts.Runner == nil {
		return Result{}, errors.New("execute_code: no backing kernel is available")
	}
	cr, err := tb.opts.Runner.Run(ctx, in["code"].(string))
	if err != nil {
		return Result{}, fmt.Errorf("execute_code: %w", err)
	}
	var b strings.Builder
	section := func(name, text string) {
		if text == "" {
			return
		}
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[%s]\n%s", name, text)
	}
	section("stdout", cr.Stdout)
	section("stderr", cr.Stderr)
	section("result", cr.Result)
	var images []string
	for _, im := range cr.Images {
		images = append(images, im.Summary())
	}
	section("images", strings.Join(images, "\n"))
	if e := cr.Error; e != nil {
		text := e.EName + ": " + e.EValue
		if len(e.Traceback) > 0 {
			text += "\n" + stripANSI(strings.Join(e.Traceback, "\n"))
		}
		section("error", text)
	}
	text := b.String()
	if text == "" {
		text = "(no output)"
	}
	return Result{Text: tb.capText(text), IsError: cr.Error != nil, Images: images}, nil
}

func (tb *Toolbox) readFile(_ context.Context, in map[string]any) (Result, error) {
	path := in["path"].(string)
	abs, err := tb.resolveExisting(path, false)
	if err != nil {
		return Result{}, err
	}
	start, end := int64(1), int64(math.MaxInt64)
	if v, ok := in["start_line"]; ok {
		start = v.(int64)
	}
	if v, ok := in["end_line"]; ok {
		end = v.(int64)
	}
	if end < start {
		return Result{}, fmt.Errorf("read_file %s: end_line %d is before start_line %d", path, end, start)
	}
	f, err := os.Open(abs)
	if err != nil {
		return Result{}, fmt.Errorf("read_file %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, 8000)
	n, _ := io.ReadFull(f, head)
	if bytes.IndexByte(head[:n], 0) >= 0 {
		return Result{}, fmt.Errorf("read_file %s: binary file; not shown", path)
	}
	r := bufio.NewReader(io.MultiReader(bytes.NewReader(head[:n]), f))
	var b strings.Builder
	var line, first, last int64
	out, capped, eof := 0, false, false
	for {
		s, err := r.ReadString('\n')
		if s != "" {
			line++
			if line >= start && line <= end {
				if first != 0 && out+len(s) > tb.opts.MaxReadBytes {
					capped = true
					break
				}
				if first == 0 {
					first = line
				}
				last = line
				out += len(s)
				fmt.Fprintf(&b, "%d | %s\n", line, strings.TrimRight(s, "\r\n"))
			}
			if line >= end {
				break
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return Result{}, fmt.Errorf("read_file %s: %w", path, err)
			}
			eof = true
			break
		}
	}
	var note string
	switch {
	case capped:
		note = fmt.Sprintf("[lines %d-%d; stopped at the %s read limit: use start_line=%d to read on]",
			first, last, humanBytes(tb.opts.MaxReadBytes), last+1)
	case line == 0:
		note = "[empty file]"
	case first == 0:
		note = fmt.Sprintf("[the file has %d lines; none in the range %d-%d]", line, start, end)
	case first == 1 && eof:
		// the whole file: no note
	case eof:
		note = fmt.Sprintf("[lines %d-%d of %d]", first, last, line)
	default:
		note = fmt.Sprintf("[lines %d-%d]", first, last)
	}
	text := b.String()
	if note != "" {
		text = note + "\n" + text
	}
	return Result{Text: tb.capText(strings.TrimRight(text, "\n"))}, nil
}

func (tb *Toolbox) listFiles(_ context.Context, in map[string]any) (Result, error) {
	path := in["path"].(string)
	recursive, _ := in["recursive"].(bool)
	abs, err := tb.resolveExisting(path, true)
	if err != nil {
		return Result{}, err
	}
	var entries []string
	more := false
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == abs {
				return err
			}
			return nil // unreadable entries are skipped
		}
		if p == abs {
			return nil
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if len(entries) >= tb.opts.MaxEntries {
			more = true
			return filepath.SkipAll
		}
		name := tb.ws.Rel(p)
		if d.IsDir() {
			name += "/"
		} else if d.Type()&fs.ModeSymlink != 0 {
			name += "@"
		}
		entries = append(entries, name)
		if d.IsDir() && !recursive {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("list_files %s: %w", path, err)
	}
	slices.Sort(entries)
	text := strings.Join(entries, "\n")
	if len(entries) == 0 {
		text = "(empty directory)"
	}
	if more {
		text += fmt.Sprintf("\n[listing stopped after %d entries; list a subdirectory]", tb.opts.MaxEntries)
	}
	return Result{Text: tb.capText(text)}, nil
}

func (tb *Toolbox) searchFiles(ctx context.Context, in map[string]any) (Result, error) {
	path := in["path"].(string)
	re, err := regexp.Compile(in["regex"].(string))
	if err != nil {
		return Result{}, fmt.Errorf("search_files: invalid regex: %w", err)
	}
	pattern, _ := in["file_pattern"].(string)
	if pattern != "" {
		if _, err := filepath.Match(pattern, "x"); err != nil {
			return Result{}, fmt.Errorf("search_files: invalid file_pattern %q: %w", pattern, err)
		}
	}
	abs, err := tb.resolveExisting(path, true)
	if err != nil {
		return Result{}, err
	}
	var out []string
	files, more := 0, false
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == abs {
				return err
			}
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		rel := tb.ws.Rel(p)
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		// Symlinks are not followed, and protected files are never read.
		if !d.Type().IsRegular() || ProtectedPath(rel) != "" {
			return nil
		}
		if pattern != "" {
			if ok, _ := filepath.Match(pattern, d.Name()); !ok {
				return nil
			}
		}
		if fi, err := d.Info(); err != nil || fi.Size() > tb.opts.MaxFileBytes {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil || bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
			return nil
		}
		files++
		for i, line := range strings.Split(string(data), "\n") {
			if !re.MatchString(line) {
				continue
			}
			if len(out) >= tb.opts.MaxMatches {
				more = true
				return filepath.SkipAll
			}
			out = append(out, fmt.Sprintf("%s:%d: %s", rel, i+1, truncateRunes(strings.TrimRight(line, "\r"), 300)))
		}
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("search_files %s: %w", path, err)
	}
	text := strings.Join(out, "\n")
	if len(out) == 0 {
		text = fmt.Sprintf("No matches (%d files searched).", files)
	}
	if more {
		text += fmt.Sprintf("\n[search stopped after %d matches; narrow the path, regex or file_pattern]", tb.opts.MaxMatches)
	}
	return Result{Text: tb.capText(text)}, nil
}

func (tb *Toolbox) writeFile(_ context.Context, in map[string]any) (Result, error) {
	path, content := in["path"].(string), in["content"].(string)
	abs, err := tb.resolve(path)
	if err != nil {
		return Result{}, err
	}
	mode, verb := fs.FileMode(0o644), "created"
	if fi, err := os.Stat(abs); err == nil {
		if fi.IsDir() {
			return Result{}, fmt.Errorf("write_file %s: is a directory", path)
		}
		mode, verb = fi.Mode().Perm(), "overwrote"
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return Result{}, fmt.Errorf("write_file %s: %w", path, err)
	}
	if err := os.WriteFile(abs, []byte(content), mode); err != nil {
		return Result{}, fmt.Errorf("write_file %s: %w", path, err)
	}
	return Result{Text: fmt.Sprintf("%s %s (%d bytes, %d lines).", strings.ToUpper(verb[:1])+verb[1:],
		tb.ws.Rel(abs), len(content), countLines(content))}, nil
}

func (tb *Toolbox) editFile(_ context.Context, in map[string]any) (Result, error) {
	path, search, replace := in["path"].(string), in["search"].(string), in["replace"].(string)
	all, _ := in["replace_all"].(bool)
	abs, err := tb.resolveExisting(path, false)
	if err != nil {
		return Result{}, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return Result{}, fmt.Errorf("edit_file %s: %w", path, err)
	}
	if fi.Size() > tb.opts.MaxFileBytes {
		return Result{}, fmt.Errorf("edit_file %s: file too large (%s; the limit is %s)",
			path, humanBytes(int(fi.Size())), humanBytes(int(tb.opts.MaxFileBytes)))
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return Result{}, fmt.Errorf("edit_file %s: %w", path, err)
	}
	text := string(data)
	n := strings.Count(text, search)
	switch {
	case n == 0:
		hint := ""
		if strings.Contains(text, strings.TrimSpace(search)) {
			hint = " (it does occur with different leading or trailing whitespace)"
		}
		return Result{}, fmt.Errorf("edit_file %s: search text not found%s; read the file and copy the text exactly",
			path, hint)
	case n > 1 && !all:
		return Result{}, fmt.Errorf("edit_file %s: search text found %d times (lines %s); include more "+
			"surrounding text to make it unique, or set replace_all", path, n, matchLines(text, search))
	}
	if all {
		text = strings.ReplaceAll(text, search, replace)
	} else {
		text = strings.Replace(text, search, replace, 1)
	}
	if err := os.WriteFile(abs, []byte(text), fi.Mode().Perm()); err != nil {
		return Result{}, fmt.Errorf("edit_file %s: %w", path, err)
	}
	return Result{Text: fmt.Sprintf("Replaced %d occurrence%s in %s.", n, plural(n), tb.ws.Rel(abs))}, nil
}

func (tb *Toolbox) askFollowup(_ context.Context, in map[string]any) (Result, error) {
	q := in["question"].(string)
	sug, _ := in["suggestions"].([]string)
	text := q
	if len(sug) > 0 {
		text += "\nSuggestions: " + strings.Join(sug, " | ")
	}
	return Result{Text: text, Followup: &Followup{Question: q, Suggestions: sug}}, nil
}

func (tb *Toolbox) attemptCompletion(_ context.Context, in map[string]any) (Result, error) {
	r := in["result"].(string)
	return Result{Text: r, Completion: &Completion{Result: r}}, nil
}

func (tb *Toolbox) proposeCell(_ context.Context, in map[string]any) (Result, error) {
	code := in["code"].(string)
	return Result{
		Text:         "The code was proposed as the notebook's next cell; it has not been run.",
		SetNextInput: code,
	}, nil
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
