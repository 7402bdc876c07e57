package agent

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// This file: the protected paths every mode refuses.

var privateKeyNames = []string{
	"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk",
}

// ProtectedPath returns why the workspace-relative path p is protected, or
// "" if it is not. Every element of the path is checked, ignoring case, so a
// file inside a protected directory is protected too:
//
//   - ".env" and ".env.*" (".env.local", ".env.example"; not "env.py",
//     ".envrc" or "environment.yml");
//   - anything containing "secret", "credential" or "password": a substring
//     match, deliberately, so "secretary.md" and "my_passwords/" are
//     protected (a false refusal costs a rename; a leak costs more);
//   - private keys: id_rsa, id_dsa, id_ecdsa, id_ed25519 (and the _sk
//     variants), *.pem, *.key, *.p12, *.pfx (not "id_rsa.pub" or "keys.py");
//   - ".git" and everything inside it (not ".gitignore" or ".github/").
func ProtectedPath(p string) string {
	for _, el := range strings.Split(filepath.ToSlash(p), "/") {
		e := strings.ToLower(el)
		switch {
		case e == "" || e == "." || e == "..":
		case e == ".git":
			return ".git internals"
		case e == ".env" || strings.HasPrefix(e, ".env."):
			return fmt.Sprintf("%q is an environment file", el)
		case strings.Contains(e, "secret"):
			return fmt.Sprintf("%q matches *secret*", el)
		case strings.Contains(e, "credential"):
			return fmt.Sprintf("%q matches *credential*", el)
		case strings.Contains(e, "password"):
			return fmt.Sprintf("%q matches *password*", el)
		case slices.Contains(privateKeyNames, e):
			return fmt.Sprintf("%q is a private key", el)
		case slices.Contains([]string{".pem", ".key", ".p12", ".pfx"}, path.Ext(e)):
			return fmt.Sprintf("%q is a key or certificate file (%s)", el, path.Ext(e))
		}
	}
	return ""
}

// protectedEither checks a path as written and as resolved.
func protectedEither(lex, real string) string {
	if why := ProtectedPath(lex); why != "" {
		return why
	}
	if why := ProtectedPath(real); why != "" {
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
