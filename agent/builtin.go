package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentkernel/agentkernel/internal/protect"
	"github.com/agentkernel/agentkernel/messages"
)

// This file: the tools themselves.

func (tb *Toolbox) define() []*Tool {
	tools := tb.builtins()
	if tb.opts.Runner != nil || tb.opts.Notebook != nil {
		tools = append(tools, tb.runTools()...)
	}
	if tb.opts.Variables != nil {
		tools = append(tools, tb.variableTools()...)
	}
	if tb.opts.Notebook != nil {
		tools = append(tools, tb.notebookTools()...)
	}
	if w := tb.opts.WebFetch; w != nil && len(w.Allow) > 0 {
		tools = append(tools, &Tool{
			name: ToolWebFetch, class: ClassFetch,
			description: "Fetch a web page of an allowed site (" + strings.Join(w.Allow, ", ") + ") as text (HTML without " +
				"its markup): it reads at most " + strconv.Itoa(w.maxBytes()) + " bytes, returns at most " +
				strconv.Itoa(tb.opts.MaxOutputChars) + " characters (head and tail). Other sites are refused.",
			params: []param{{name: "url", typ: tString, required: true, desc: "The http or https URL."}},
			run:    tb.webFetch,
		})
	}
	return tools
}

// builtins are the tools every toolbox has: execute_code, the file
// tools and the tools that talk to the user, in the order they are offered.
func (tb *Toolbox) builtins() []*Tool {
	return slices.Concat([]*Tool{tb.executeCodeTool()}, tb.fileTools(), tb.interactionTools())
}

// executeCodeTool runs code in the backing kernel.
func (tb *Toolbox) executeCodeTool() *Tool {
	return &Tool{
		name: ToolExecuteCode, class: ClassExecute, subject: "code",
		description: "Run code in the kernel. Variables persist between calls.", // executeCodeDescription, when offered
		params: []param{
			{name: "code", typ: tString, required: true, desc: "The code to run."},
			timeoutParam,
		},
		runCode: tb.executeCode,
	}
}

// fileTools read and change the workspace's files.
func (tb *Toolbox) fileTools() []*Tool {
	pathParam := func(desc string) param {
		return param{name: "path", typ: tString, required: true, desc: desc}
	}
	return []*Tool{
		{
			name: ToolReadFile, class: ClassRead, subject: "path",
			description: "Read a text file in the workspace. Lines are numbered (\"12 | text\"); " +
				"the numbers are not part of the file. One read returns at most " + strconv.Itoa(tb.readLimit()) +
				" characters of whole lines; a longer file says where to read on (start_line). A PNG, JPEG or GIF " +
				"comes back as an image, a notebook (.ipynb) as its cells.",
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
	}
}

// interactionTools ask the user, end the task and propose a cell.
func (tb *Toolbox) interactionTools() []*Tool {
	return []*Tool{
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

// The variable tools.
const (
	ToolListVariables   = "list_variables"
	ToolInspectVariable = "inspect_variable"
)

// variableTools read the user's namespace without running code: read
// class, so that ask and plan modes have them.
func (tb *Toolbox) variableTools() []*Tool {
	return []*Tool{
		{
			name: ToolListVariables, class: ClassRead,
			description: "List the live kernel's variables: name, type, shape, a table's columns and dtypes, a " +
				"function's signature, a short value. Runs no cell.",
			run: func(ctx context.Context, _ map[string]any) (Result, error) {
				s, err := tb.opts.Variables.List(ctx)
				if err != nil {
					return Result{}, fmt.Errorf("list_variables: %w", err)
				}
				return Result{Text: s}, nil
			},
		},
		{
			name: ToolInspectVariable, class: ClassRead,
			description: "Describe a variable of the live kernel without running a cell: a DataFrame's shape, " +
				"dtypes, nulls, head and describe(); an array's dtype, shape and values; a container's length and " +
				"sample; a function's signature and docstring. At most 8,000 characters.",
			params: []param{{name: "name", typ: tString, required: true,
				desc: "The variable's name, or name.attribute (df.columns); not an expression."}},
			run: func(ctx context.Context, in map[string]any) (Result, error) {
				s, err := tb.opts.Variables.Inspect(ctx, in["name"].(string))
				if err != nil {
					return Result{}, fmt.Errorf("inspect_variable: %w", err)
				}
				return Result{Text: s}, nil
			},
		},
	}
}

// readLimit is how many characters of lines (numbers included) one
// read_file returns: MaxReadBytes, within what a tool result may hold
// (MaxOutputChars, less room for the note), so that a read ends at a whole
// line the model can read on from, never cut in its middle.
func (tb *Toolbox) readLimit() int {
	return min(tb.opts.MaxReadBytes, tb.opts.MaxOutputChars-200)
}

// lineMark is the length of read_file's "N | " before line n.
func lineMark(n int64) int { return len(strconv.FormatInt(n, 10)) + 3 }

// executeCodeDescription is execute_code's description in the toolbox's
// Environment: the kernel's language, whose variables they are, that the
// code is not kept, and the cap on what it returns.
func (tb *Toolbox) executeCodeDescription() string {
	env := tb.environment()
	lang := languageName(env.Language)
	var b strings.Builder
	b.WriteString("Run ")
	if lang != "" {
		b.WriteString(lang + " ")
	}
	if env.Cells != "" {
		b.WriteString("code in the user's live kernel, the notebook's: their variables are there, and what the code " +
			"defines stays. The code itself is not kept in the notebook.")
	} else {
		b.WriteString("code in the session's kernel. Variables persist between calls.")
	}
	if lang == "Python" {
		b.WriteString(" IPython syntax works (`!cmd`, `%%bash`).")
	}
	fmt.Fprintf(&b, " Returns its output, result, images (summarised) and any error with its traceback; past %d "+
		"characters, the head and tail are kept.", tb.opts.MaxOutputChars)
	return b.String()
}

func (tb *Toolbox) executeCode(ctx context.Context, in map[string]any, out func(CodeOutput)) (Result, error) {
	if tb.opts.Source != nil && len(tb.opts.KernelServers) > 0 {
		if other := tb.kernelCode(tb.opts.Source.Tools(ctx)); other != "" {
			return Result{}, fmt.Errorf("execute_code runs in a kernel of this agent's own, not the user's: call %s, "+
				"which runs the code in the user's kernel (the notebook's), where their variables are", other)
		}
	}
	if tb.opts.Runner == nil {
		return Result{}, errors.New("execute_code: no backing kernel is available")
	}
	code := in["code"].(string)
	res, err := tb.runCode(ctx, in, out, func(ctx context.Context, out func(CodeOutput)) (CodeResult, error) {
		return tb.opts.Runner.Run(ctx, code, out)
	})
	if err != nil {
		return Result{}, fmt.Errorf("execute_code: %w", err)
	}
	return res, nil
}

// timeoutParam is the timeout of the tools that run code.
var timeoutParam = param{name: "timeout", typ: tInteger, min: 1,
	desc: "Seconds to wait, then \"still running\" and the output so far (the code goes on). Default 120, at most 3600."}

// codeResult is what code that ran tells the model: its streams, result,
// images (the first few as images too) and error.
func (tb *Toolbox) codeResult(cr CodeResult) Result {
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
	var images, shown []string
	var blocks []messages.ContentBlock
	for _, im := range cr.Images {
		images = append(images, im.Summary())
		if u := im.DataURL(); u != "" && len(shown) < maxShownImages {
			shown = append(shown, u)
			blocks = append(blocks, messages.ContentBlock{Type: messages.BlockImage,
				Source: &messages.ImageSource{Type: "base64", MediaType: im.MIME, Data: im.Data}})
		}
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
	return Result{Text: tb.capText(text), IsError: cr.Error != nil, Images: images, Shown: shown, Blocks: blocks}
}

func (tb *Toolbox) readFile(ctx context.Context, in map[string]any) (Result, error) {
	path := in["path"].(string)
	abs, err := tb.resolveFile(path)
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
	if mime := imageType(abs); mime != "" && tb.opts.Files == nil {
		return tb.readImage(path, abs, mime)
	}
	if strings.EqualFold(filepath.Ext(abs), ".ipynb") && tb.opts.NotebookFile != nil {
		return tb.readNotebookFile(ctx, path, abs, in)
	}
	f, closeFile, err := tb.openText(ctx, abs)
	if err != nil {
		return Result{}, fmt.Errorf("read_file %s: %w", path, err)
	}
	defer closeFile()
	head := make([]byte, 8000)
	n, _ := io.ReadFull(f, head)
	if bytes.IndexByte(head[:n], 0) >= 0 {
		return Result{}, fmt.Errorf("read_file %s: binary file; not shown", path)
	}
	r := bufio.NewReader(io.MultiReader(bytes.NewReader(head[:n]), f))
	nl := numberedLines{start: start, end: end, limit: tb.readLimit()}
	if err := nl.read(r); err != nil {
		return Result{}, fmt.Errorf("read_file %s: %w", path, err)
	}
	text := nl.b.String()
	if note := nl.note(); note != "" {
		text = note + "\n" + text
	}
	return Result{Text: tb.capText(strings.TrimRight(text, "\n"))}, nil
}

// openText opens the file at abs for reading: through Files (the
// client's editor) when it is set, else from disk.
func (tb *Toolbox) openText(ctx context.Context, abs string) (io.Reader, func(), error) {
	if files := tb.opts.Files; files != nil {
		text, err := files.ReadTextFile(ctx, abs)
		if err != nil {
			return nil, nil, err
		}
		return strings.NewReader(text), func() {}, nil
	}
	file, err := os.Open(abs)
	if err != nil {
		return nil, nil, err
	}
	return file, func() { file.Close() }, nil
}

// numberedLines is read_file's reading of lines start to end, numbered,
// in at most limit characters of whole lines.
type numberedLines struct {
	start, end int64
	limit      int

	b strings.Builder
	// line is the lines read, first and last those of the range shown.
	line, first, last int64
	// out is the characters shown; capped says the limit stopped the
	// read, eof that it reached the end of the file.
	out         int
	capped, eof bool
}

// read reads r's lines until the range or the limit ends, or the file.
func (nl *numberedLines) read(r *bufio.Reader) error {
	for {
		s, err := r.ReadString('\n')
		if s != "" {
			nl.line++
			if nl.line >= nl.start && nl.line <= nl.end {
				if nl.first != 0 && nl.out+len(s)+lineMark(nl.line) > nl.limit {
					nl.capped = true
					return nil
				}
				if nl.first == 0 {
					nl.first = nl.line
				}
				nl.last = nl.line
				nl.out += utf8.RuneCountInString(s) + lineMark(nl.line)
				fmt.Fprintf(&nl.b, "%d | %s\n", nl.line, strings.TrimRight(s, "\r\n"))
			}
			if nl.line >= nl.end {
				return nil
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return err
			}
			nl.eof = true
			return nil
		}
	}
}

// note is the line before the lines read, that says which they are and
// how to read on; none for a whole file.
func (nl *numberedLines) note() string {
	switch {
	case nl.capped:
		return fmt.Sprintf("[lines %d-%d; stopped at the read limit of %d characters: use start_line=%d to read on]",
			nl.first, nl.last, nl.limit, nl.last+1)
	case nl.line == 0:
		return "[empty file]"
	case nl.first == 0:
		return fmt.Sprintf("[the file has %d lines; none in the range %d-%d]", nl.line, nl.start, nl.end)
	case nl.first == 1 && nl.eof:
		return "" // the whole file
	case nl.eof:
		return fmt.Sprintf("[lines %d-%d of %d]", nl.first, nl.last, nl.line)
	default:
		return fmt.Sprintf("[lines %d-%d]", nl.first, nl.last)
	}
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
		if !d.Type().IsRegular() || protect.Path(rel) != "" {
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

func (tb *Toolbox) writeFile(ctx context.Context, in map[string]any) (Result, error) {
	path, content := in["path"].(string), in["content"].(string)
	abs, err := tb.resolve(path)
	if err != nil {
		return Result{}, err
	}
	if err := tb.notOpenNotebook(ToolWriteFile, path, abs); err != nil {
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
	if err := tb.write(ctx, abs, content, mode); err != nil {
		return Result{}, fmt.Errorf("write_file %s: %w", path, err)
	}
	return Result{Text: fmt.Sprintf("%s %s (%d bytes, %d lines).", strings.ToUpper(verb[:1])+verb[1:],
		tb.ws.Rel(abs), len(content), countLines(content))}, nil
}

func (tb *Toolbox) editFile(ctx context.Context, in map[string]any) (Result, error) {
	path, search, replace := in["path"].(string), in["search"].(string), in["replace"].(string)
	all, _ := in["replace_all"].(bool)
	abs, err := tb.resolveFile(path)
	if err != nil {
		return Result{}, err
	}
	if err := tb.notOpenNotebook(ToolEditFile, path, abs); err != nil {
		return Result{}, err
	}
	tooLarge := func(size int64) error {
		return fmt.Errorf("edit_file %s: file too large (%s; the limit is %s)",
			path, humanBytes(int(size)), humanBytes(int(tb.opts.MaxFileBytes)))
	}
	mode := fs.FileMode(0o644)
	if tb.opts.Files == nil {
		fi, err := os.Stat(abs)
		if err != nil {
			return Result{}, fmt.Errorf("edit_file %s: %w", path, err)
		}
		if fi.Size() > tb.opts.MaxFileBytes {
			return Result{}, tooLarge(fi.Size())
		}
		mode = fi.Mode().Perm()
	}
	text, err := tb.read(ctx, abs)
	if err != nil {
		return Result{}, fmt.Errorf("edit_file %s: %w", path, err)
	}
	if int64(len(text)) > tb.opts.MaxFileBytes {
		return Result{}, tooLarge(int64(len(text)))
	}
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
	if err := tb.write(ctx, abs, text, mode); err != nil {
		return Result{}, fmt.Errorf("edit_file %s: %w", path, err)
	}
	return Result{Text: fmt.Sprintf("Replaced %d occurrence%s in %s.", n, plural(n), tb.ws.Rel(abs))}, nil
}

// read reads a whole text file: through Files when set, else the disk.
func (tb *Toolbox) read(ctx context.Context, abs string) (string, error) {
	if files := tb.opts.Files; files != nil {
		return files.ReadTextFile(ctx, abs)
	}
	data, err := os.ReadFile(abs)
	return string(data), err
}

// write writes a text file: through Files when set, else the disk (with
// mode).
func (tb *Toolbox) write(ctx context.Context, abs, text string, mode fs.FileMode) error {
	if files := tb.opts.Files; files != nil {
		return files.WriteTextFile(ctx, abs, text)
	}
	return os.WriteFile(abs, []byte(text), mode)
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
	return Result{
		Text:         "The code was proposed as the notebook's next cell; it has not been run.",
		SetNextInput: tb.asCode(in["code"].(string)),
	}, nil
}
