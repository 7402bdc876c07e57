// Package protect names the files that hold secrets: environment files,
// private keys, credentials, tokens, version control internals. It is the
// one list that the agent's file tools refuse, that the workspace
// checkpoints never keep the contents of, and that the session store is
// cleaned of; it imports nothing of ours.
//
// Path decides by name, and is what every caller uses; Content also
// recognises a private key by its first bytes, for a key whose name says
// nothing (a "deploy" file holding "-----BEGIN OPENSSH PRIVATE KEY-----").
package protect

import (
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

var privateKeyNames = []string{
	"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk",
}

// tokenFiles are files whose usual content is a token or a password for
// another service, or (.mcp.json) the commands and environment of MCP
// servers, whose env often carries an API key.
var tokenFiles = []string{
	".mcp.json", ".netrc", "_netrc", ".pgpass", ".pypirc", ".npmrc",
}

// Path returns why the workspace-relative path p is protected, or "" if it
// is not. Every element of the path is checked, ignoring case, so a file
// inside a protected directory is protected too:
//
//   - ".env" and ".env.*" (".env.local", ".env.example"; not "env.py",
//     ".envrc" or "environment.yml");
//   - anything containing "secret", "credential" or "password": a substring
//     match, deliberately, so "secretary.md" and "my_passwords/" are
//     protected (a false refusal costs a rename; a leak costs more);
//   - private keys: id_rsa, id_dsa, id_ecdsa, id_ed25519 (and the _sk
//     variants), *.pem, *.key, *.p12, *.pfx (not "id_rsa.pub" or "keys.py");
//   - files of tokens: .mcp.json, .netrc, .pgpass, .pypirc, .npmrc;
//   - ".git" and everything inside it (not ".gitignore" or ".github/").
func Path(p string) string {
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
		case slices.Contains(tokenFiles, e):
			return fmt.Sprintf("%q holds tokens", el)
		}
	}
	return ""
}

// pemPrivate ends the armour line of every PEM private key: "-----BEGIN
// PRIVATE KEY-----", "… RSA PRIVATE KEY-----", "… OPENSSH PRIVATE KEY-----",
// "… ENCRYPTED PRIVATE KEY-----".
var pemPrivate = []byte("PRIVATE KEY-----")

// Content returns why a file whose first bytes are head holds a secret, or
// "": a PEM private key, whatever the file is called. head may be the whole
// content; only its first 4 KiB are looked at.
func Content(head []byte) string {
	head = head[:min(len(head), 4096)]
	if i := bytes.Index(head, []byte("-----BEGIN ")); i >= 0 && bytes.Contains(head[i:], pemPrivate) {
		return "it holds a private key"
	}
	return ""
}
