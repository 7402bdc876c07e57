package session

import (
	"context"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/internal/protect"
	"github.com/agentkernel/agentkernel/messages"
)

// The completion list of an @-mention being typed (the panel's prompt
// box): what CompleteMention offers for the letters after the @. It
// reads what the mentions themselves read (mentions.go): the kernel's
// namespace (the host's cached read, context.go), the notebook's cells,
// the workspace's files one directory at a time. Bounded in what it
// reads and returns, and quick: the namespace read waits at most
// mentionNamespaceWait, the notebook's at most cellsWait.

const (
	// MaxMentionCompletions caps what CompleteMention returns.
	MaxMentionCompletions = 50
	// maxMentionDirEntries bounds how much of one directory is read.
	maxMentionDirEntries = 2000
	// maxCompletionDetail caps a completion's detail, in bytes.
	maxCompletionDetail = 80
	// mentionNamespaceWait bounds the namespace's read for a completion
	// (when it is not cached: code ran since the last read); a kernel
	// busy with a cell and without subshells offers no variables.
	mentionNamespaceWait = time.Second
	// cellsWait bounds the notebook's read for a completion.
	cellsWait = time.Second
)

// The kinds of MentionCompletion.
const (
	MentionVariable = "variable"
	MentionModule   = "module"
	MentionCell     = "cell"
	MentionFile     = "file"
	MentionDir      = "dir"
)

// MentionCompletion is one completion of an @-mention: Mention is what
// goes after the @ ("df", "cell:3", "data/sales.csv", "data/" for a
// directory, which a pick goes on into), Kind one of the Mention*
// kinds, Detail a short note to show beside it ("DataFrame (3, 2)", a
// cell's first line, a file's size). Every Mention is one that Mentions
// reads back whole; Detail holds no control characters.
type MentionCompletion struct {
	Mention string `json:"mention"`
	Kind    string `json:"kind"`
	Detail  string `json:"detail,omitempty"`
}

// mentionable is what a completion's Mention may be: what mentionRE
// reads whole, and not ending in what Mentions trims.
var mentionable = regexp.MustCompile(`^[A-Za-z0-9_~][A-Za-z0-9_./~:-]*$`)

func isMentionable(s string) bool {
	return len(s) <= 256 && mentionable.MatchString(s) && !strings.ContainsAny(s[len(s)-1:], ".,:;!?")
}

// CompleteMention returns the completions of the mention prefix (what
// was typed after the @, possibly nothing), at most limit of them (0 or
// more than MaxMentionCompletions: MaxMentionCompletions): the kernel's
// variables, then its modules, then the notebook's cells (as cell:N, or
// cell:ID for a cell never run), then the workspace's files and
// directories whose names start with prefix, case aside. A source that
// cannot be read (no kernel running, a busy one, no notebook) offers
// nothing; nothing is started for this.
func (h *Host) CompleteMention(ctx context.Context, prefix string, limit int) []MentionCompletion {
	if limit <= 0 || limit > MaxMentionCompletions {
		limit = MaxMentionCompletions
	}
	var out []MentionCompletion
	add := func(cs []MentionCompletion) {
		for _, c := range cs {
			if len(out) == limit {
				return
			}
			if isMentionable(c.Mention) {
				c.Detail = cleanDetail(c.Detail)
				out = append(out, c)
			}
		}
	}
	if !strings.Contains(prefix, "/") && !strings.Contains(prefix, ":") {
		add(h.variableCompletions(ctx, prefix))
	}
	if hasPrefixFold("cell:", prefix) || hasPrefixFold(prefix, "cell:") {
		add(h.cellCompletions(ctx, prefix))
	}
	add(h.fileCompletions(prefix, limit-len(out)))
	return out
}

// variableCompletions are the kernel's variables, then its modules,
// whose names start with prefix.
func (h *Host) variableCompletions(ctx context.Context, prefix string) []MentionCompletion {
	r := h.quietRunner()
	if r == nil || !r.Running() {
		return nil
	}
	vars, err := h.ns.read(ctx, r, h.kernelGeneration(), h.code.lastSeq(), mentionNamespaceWait)
	if err != nil {
		h.log.Debug("namespace for a mention's completion", "error", err)
		return nil
	}
	var names, modules []MentionCompletion
	for _, v := range vars {
		if !hasPrefixFold(v.Name, prefix) {
			continue
		}
		if v.Type == "module" {
			modules = append(modules, MentionCompletion{Mention: v.Name, Kind: MentionModule, Detail: "module " + v.Repr})
			continue
		}
		d := shortType(v.Type)
		if v.Shape != "" {
			d += " " + v.Shape
		} else if v.Signature != "" {
			d = v.Signature
		} else if v.Repr != "" {
			d += " = " + v.Repr
		}
		names = append(names, MentionCompletion{Mention: v.Name, Kind: MentionVariable, Detail: d})
	}
	return append(names, modules...)
}

// shortType is a type's name without its module: "DataFrame" for
// "pandas.core.frame.DataFrame".
func shortType(t string) string {
	if i := strings.LastIndexByte(t, '.'); i >= 0 {
		return t[i+1:]
	}
	return t
}

// cellCompletions are the notebook's cells whose mention starts with
// prefix: cell:N for a cell that ran (N its execution count), cell:ID
// for one that did not.
func (h *Host) cellCompletions(ctx context.Context, prefix string) []MentionCompletion {
	cells := h.tools.currentCells()
	if cells == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, cellsWait)
	defer cancel()
	v, err := cells.Read(rctx, 1)
	if err != nil {
		h.log.Debug("notebook for a mention's completion", "error", err)
		return nil
	}
	var out []MentionCompletion
	for _, cl := range v.Cells {
		m := "cell:" + cl.ID
		if cl.ExecutionCount > 0 {
			m = "cell:" + strconv.Itoa(cl.ExecutionCount)
		}
		if !hasPrefixFold(m, prefix) {
			continue
		}
		line, _, _ := strings.Cut(strings.TrimSpace(cl.Source), "\n")
		d := string(cl.Kind)
		if cl.ExecutionCount > 0 {
			d = fmt.Sprintf("[%d]", cl.ExecutionCount)
		}
		if line != "" {
			d += " " + line
		}
		out = append(out, MentionCompletion{Mention: m, Kind: MentionCell, Detail: d})
		if len(out) == MaxMentionCompletions {
			break
		}
	}
	return out
}

// fileCompletions are the entries of prefix's directory in the
// workspace whose names start with prefix's last element: directories
// first, hidden ones only when that element starts with a dot, protected
// ones never (they are not read when mentioned), at most n.
func (h *Host) fileCompletions(prefix string, n int) []MentionCompletion {
	if n <= 0 || h.cfg.Workspace == "" || strings.Contains(prefix, ":") {
		return nil
	}
	dir, base := path.Split(prefix)
	if dir != "" && (strings.HasPrefix(dir, "/") || slices.Contains(strings.Split(dir, "/"), "..")) {
		return nil
	}
	ws, err := agent.NewWorkspace(h.cfg.Workspace)
	if err != nil {
		return nil
	}
	abs := ws.Root()
	if dir != "" {
		if abs, err = ws.Resolve(dir); err != nil {
			return nil
		}
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil
	}
	entries, _ := f.ReadDir(maxMentionDirEntries)
	f.Close()
	var dirs, files []MentionCompletion
	for _, e := range entries {
		name := e.Name()
		if !hasPrefixFold(name, base) || (strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		rel := dir + name
		if protect.Path(rel) != "" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if e.Type()&os.ModeSymlink != 0 {
			// Followed only where it stays in the workspace.
			real, err := ws.Resolve(rel)
			if err != nil {
				continue
			}
			if info, err = os.Stat(real); err != nil {
				continue
			}
		}
		switch {
		case info.IsDir():
			dirs = append(dirs, MentionCompletion{Mention: rel + "/", Kind: MentionDir, Detail: "folder"})
		case info.Mode().IsRegular():
			files = append(files, MentionCompletion{Mention: rel, Kind: MentionFile, Detail: agent.HumanBytes(int(info.Size()))})
		}
	}
	byMention := func(a, b MentionCompletion) int { return strings.Compare(a.Mention, b.Mention) }
	slices.SortFunc(dirs, byMention)
	slices.SortFunc(files, byMention)
	out := append(dirs, files...)
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// hasPrefixFold reports whether s starts with prefix, case aside.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// cleanDetail is d as a person may be shown it (messages.Printable: one
// line, no escape or control characters), at most maxCompletionDetail
// bytes.
func cleanDetail(d string) string {
	return truncate(messages.Printable(d, 0), maxCompletionDetail)
}
