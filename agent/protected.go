package agent

import (
	"path/filepath"
	"strings"

	"github.com/agentkernel/agentkernel/internal/protect"
)

// This file: the protected paths every mode refuses (the list is
// internal/protect's, which the checkpoints share).

// protectedEither checks a path as written and as resolved.
func protectedEither(lex, real string) string {
	if why := protect.Path(lex); why != "" {
		return why
	}
	if why := protect.Path(real); why != "" {
		return why + " (reached through a symlink)"
	}
	return ""
}

// lexicalRel returns p relative to the root as written, without resolving
// symlinks. abs is p as Resolve returned it: its relative form stands in
// when p is absolute through another spelling of the root.
func (w *Workspace) lexicalRel(p, abs string) string {
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(w.root, filepath.Clean(p))
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return w.Rel(abs)
		}
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(filepath.Clean(p))
}
