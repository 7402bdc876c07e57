package checkpoint

import (
	"path"
	"strings"

	"github.com/agentkernel/agentkernel/internal/protect"
)

// pattern is one .gitignore line, in the subset Tracker understands:
// comments and blank lines, "dir/" (directories only), "/anchored" (from
// the workspace root), globs with * ? [...] within a path element, and
// "**/" and "/**" across elements. Negation ("!") is not supported: such
// lines are skipped, so the files they would bring back stay ignored.
type pattern struct {
	glob     string
	dirOnly  bool
	anchored bool // matched against the whole path, not any suffix
	name     bool // one element (no "/"): matched against the last element
	literal  bool // no glob characters: compared, not matched
}

func parsePattern(line string) (pattern, bool) {
	line = strings.TrimRight(line, " \t\r")
	if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!") {
		return pattern{}, false
	}
	var p pattern
	if strings.HasSuffix(line, "/") {
		p.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if strings.HasPrefix(line, "/") {
		p.anchored = true
		line = strings.TrimLeft(line, "/")
	} else if strings.Contains(line, "/") && !strings.HasPrefix(line, "**/") {
		p.anchored = true // a slash inside anchors it, as git does
	}
	line = strings.TrimPrefix(line, "**/")
	if line == "" {
		return pattern{}, false
	}
	p.glob = line
	p.name = !p.anchored && !strings.Contains(line, "/")
	p.literal = !strings.ContainsAny(line, "*?[\\")
	return p, true
}

// match reports whether rel (slash-separated) is matched.
func (p pattern) match(rel string, isDir bool) bool {
	if p.dirOnly && !isDir {
		return false
	}
	if p.name { // the common case: a file or directory name anywhere
		base := rel[strings.LastIndexByte(rel, '/')+1:]
		if p.literal {
			return base == p.glob
		}
		ok, _ := path.Match(p.glob, base)
		return ok
	}
	if p.anchored {
		return globMatch(p.glob, rel)
	}
	// Unanchored: the pattern may match the last elements of the path.
	parts := strings.Split(rel, "/")
	n := strings.Count(p.glob, "/") + 1
	if n > len(parts) {
		return false
	}
	return globMatch(p.glob, strings.Join(parts[len(parts)-n:], "/"))
}

// globMatch is path.Match with "**" matching any number of elements.
func globMatch(glob, name string) bool {
	if !strings.Contains(glob, "**") {
		ok, _ := path.Match(glob, name)
		return ok
	}
	head, tail, _ := strings.Cut(glob, "**")
	head = strings.TrimSuffix(head, "/")
	tail = strings.TrimPrefix(tail, "/")
	parts := strings.Split(name, "/")
	for i := 0; i <= len(parts); i++ {
		pre, post := strings.Join(parts[:i], "/"), strings.Join(parts[i:], "/")
		if (head == "" || globMatch(head, pre)) && (tail == "" || matchSuffix(tail, post)) {
			return true
		}
	}
	return false
}

func matchSuffix(glob, name string) bool {
	parts := strings.Split(name, "/")
	for i := range parts {
		if globMatch(glob, strings.Join(parts[i:], "/")) {
			return true
		}
	}
	return false
}

func parsePatterns(lines []string) []pattern {
	var out []pattern
	for _, l := range lines {
		if p, ok := parsePattern(l); ok {
			out = append(out, p)
		}
	}
	return out
}

func matchAny(ps []pattern, rel string, isDir bool) bool {
	for _, p := range ps {
		if p.match(rel, isDir) {
			return true
		}
	}
	return false
}

// ignored reports whether the workspace path rel is left out of scans.
func (t *Tracker) ignored(rel string, isDir bool) bool {
	return matchAny(t.ignore, rel, isDir) || matchAny(t.never, rel, isDir)
}

// withheld reports whether the content of the workspace file rel is never
// kept: a protected path, or one the user's Ignore names (also through a
// directory it names).
func (t *Tracker) withheld(rel string) bool {
	if protect.Path(rel) != "" {
		return true
	}
	if matchAny(t.never, rel, false) {
		return true
	}
	for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
		if matchAny(t.never, d, true) {
			return true
		}
	}
	return false
}
