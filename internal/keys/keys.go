// Package keys keeps the API keys and the servers' base URLs a user
// enters in the Agent sidebar's settings: one JSON file in the user's
// configuration directory, $XDG_CONFIG_HOME/agentkernel/credentials.json
// (or ~/.config/…), that only they can read (0600, in a 0700 directory),
// written whole and renamed into place. A kernel reads it when it opens a
// model's provider; an environment variable (OPENAI_API_KEY,
// ANTHROPIC_API_KEY, OPENAI_BASE_URL, ANTHROPIC_BASE_URL, OLLAMA_HOST)
// wins over it. A base URL (an OpenAI-compatible server: vLLM, llama.cpp,
// LM Studio, a LiteLLM proxy; an Ollama host) is kept by the same rules as
// a key: in the private file, never logged; it may hold no user name or
// password (those are a key's), so the settings view may show it to its
// user. The file's name says "credential": internal/protect refuses it to
// the agent's file tools and the workspace checkpoints never keep it.
//
// No system keyring: the machines kernels run on (JupyterHub, containers,
// servers over SSH) have none to offer, and a desktop's would ask for a
// password in a window nobody sees. On JupyterHub each user's kernel runs
// as that user, so each user's keys are their own file.
//
// Nothing here logs or returns a key but Lookup; a key is shown as
// Mask says.
package keys

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentkernel/agentkernel/internal/home"
	"github.com/agentkernel/agentkernel/internal/private"
)

// Provider is a model provider whose API key or base URL the file keeps.
type Provider struct {
	// Name is the provider of model strings ("openai" in openai:gpt-4.1).
	Name string
	// Env is the environment variable of its key, which wins over the
	// file's; "" for a provider that takes no key (ollama).
	Env string
	// URLEnv is the environment variable of its server's base URL, which
	// wins over the file's.
	URLEnv string
}

// Providers are the providers whose keys and base URLs the file keeps.
var Providers = []Provider{
	{Name: "openai", Env: "OPENAI_API_KEY", URLEnv: "OPENAI_BASE_URL"},
	{Name: "anthropic", Env: "ANTHROPIC_API_KEY", URLEnv: "ANTHROPIC_BASE_URL"},
	{Name: "ollama", URLEnv: "OLLAMA_HOST"},
}

// ProviderOf returns the provider whose key env is, if any.
func ProviderOf(env string) (Provider, bool) {
	for _, p := range Providers {
		if p.Env != "" && p.Env == env {
			return p, true
		}
	}
	return Provider{}, false
}

// providerOfURL returns the provider whose base URL env is, if any.
func providerOfURL(env string) (Provider, bool) {
	for _, p := range Providers {
		if p.URLEnv == env {
			return p, true
		}
	}
	return Provider{}, false
}

// known returns the provider named name.
func known(name string) (Provider, bool) {
	for _, p := range Providers {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// FileName is the file's base name.
const FileName = "credentials.json"

// maxKey bounds a key's length: real ones are a few hundred bytes.
const maxKey = 1024

// maxURL bounds a base URL's length.
const maxURL = 2048

// maxFile bounds what Read reads of the file.
const maxFile = 64 << 10

// DefaultPath is where the keys are kept: agentkernel/credentials.json in
// $XDG_CONFIG_HOME when it is absolute, else in ~/.config; "" when there
// is no home either.
func DefaultPath() string {
	dir, err := home.ConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "agentkernel", FileName)
}

// File is the keys file at Path. Its methods read or write the file each
// time (it is small, and another kernel of the user may have changed it);
// they are safe for concurrent use within a process. Two processes that
// save at the same moment may lose one of the two saves, never the file.
type File struct {
	// Path is the file; "" is none (every read finds no key, a save
	// fails).
	Path string
}

// Default is the file at DefaultPath.
func Default() *File { return &File{Path: DefaultPath()} }

// doc is the file's content.
type doc struct {
	// Keys are by provider name.
	Keys map[string]string `json:"keys"`
	// URLs are the servers' base URLs, by provider name.
	URLs map[string]string `json:"urls,omitempty"`
}

// read returns the file's content; a missing file has none. A file that
// others can read is an error that says how to mend it (errExposed), with
// what it holds all the same, for a save that mends it.
func (f *File) read() (doc, error) {
	if f.Path == "" {
		return doc{}, nil
	}
	fh, err := os.Open(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return doc{}, nil
	}
	if err != nil {
		return doc{}, fmt.Errorf("keys: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return doc{}, fmt.Errorf("keys: %w", err)
	}
	if !st.Mode().IsRegular() {
		return doc{}, fmt.Errorf("keys: %s is not a regular file", f.Path)
	}
	var exposed error
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		exposed = fmt.Errorf("keys: %s can be read by others (mode %04o): run chmod 600 on it, or save a key again: %w", f.Path, perm, errExposed)
	}
	if st.Size() > maxFile {
		return doc{}, fmt.Errorf("keys: %s is larger than %d bytes", f.Path, maxFile)
	}
	var d doc
	dec := json.NewDecoder(fh)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		// The decoder's message names no value of the file.
		return doc{}, fmt.Errorf("keys: %s: %w", f.Path, err)
	}
	return d, exposed
}

// errExposed is wrapped by read's error for a file others can read.
var errExposed = errors.New("the file is not private")

// Lookup returns what the file holds for the environment variable env: the
// key of the provider whose key variable it is, or the base URL of the one
// whose URL variable it is ("" when there is none).
func (f *File) Lookup(env string) (string, error) {
	p, isKey := ProviderOf(env)
	if !isKey {
		var isURL bool
		if p, isURL = providerOfURL(env); !isURL {
			return "", nil
		}
	}
	d, err := f.read()
	if err != nil {
		return "", err // an exposed file's keys are not used
	}
	if isKey {
		return d.Keys[p.Name], nil
	}
	return d.URLs[p.Name], nil
}

// Values returns every key the file holds (for scrubbers, so also an
// exposed file's); nil when it cannot be read. Base URLs are not among
// them: they are addresses, not secrets, and hold no credential.
func (f *File) Values() []string {
	d, err := f.read()
	if err != nil && !errors.Is(err, errExposed) {
		return nil
	}
	out := make([]string, 0, len(d.Keys))
	for _, k := range d.Keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Check says what is wrong with key as an API key, or nil: it is one line
// of printable ASCII, without spaces, at most 1 KiB. The error never holds
// the key.
func Check(key string) error {
	if key == "" {
		return errors.New("keys: the key is empty")
	}
	if len(key) > maxKey {
		return fmt.Errorf("keys: the key is longer than %d bytes: not an API key", maxKey)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("keys: the key holds a space, a line break or a character that is not printable ASCII (at byte %d): paste the key alone", i+1)
		}
	}
	return nil
}

// CheckURL says what is wrong with u as a server's base URL, or nil: an
// absolute http or https URL with a host, without a user name or password
// (a credential is a key's: it would be shown where the URL is), a query
// or a fragment, of printable ASCII, at most 2 KiB. The error never holds
// the URL.
func CheckURL(u string) error {
	if len(u) > maxURL {
		return fmt.Errorf("keys: the base URL is longer than %d bytes", maxURL)
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("keys: the base URL holds a space, a line break or a character that is not printable ASCII (at byte %d)", i+1)
		}
	}
	p, err := url.Parse(u)
	switch {
	case err != nil:
		return errors.New("keys: the base URL is not a URL: write it as http://host:port/v1")
	case p.Scheme != "http" && p.Scheme != "https":
		return errors.New("keys: the base URL must start with http:// or https://")
	case p.Host == "":
		return errors.New("keys: the base URL has no host: write it as http://host:port/v1")
	case p.User != nil:
		return errors.New("keys: the base URL holds a user name or password: give the credential as the API key")
	case p.RawQuery != "" || p.ForceQuery || p.Fragment != "":
		return errors.New("keys: the base URL holds a query or a fragment: give the server's address only")
	}
	return nil
}

// Set saves key as provider's (its Name), replacing the one saved; an
// empty key removes it. The directory is made 0700 if missing, the file
// written 0600 and renamed into place.
func (f *File) Set(provider, key string) error {
	p, ok := known(provider)
	if !ok || p.Env == "" {
		return fmt.Errorf("keys: unknown provider %q (want %s)", clip(provider), strings.Join(names(func(p Provider) bool { return p.Env != "" }), " or "))
	}
	if key != "" {
		if err := Check(key); err != nil {
			return err
		}
	}
	return f.update(func(d *doc) { put(&d.Keys, provider, key) })
}

// SetURL saves u as the base URL of provider's server, replacing the one
// saved; an empty u removes it (the provider's default server is used).
// A trailing slash is dropped. As Set, the file stays private.
func (f *File) SetURL(provider, u string) error {
	if _, ok := known(provider); !ok {
		return fmt.Errorf("keys: unknown provider %q (want %s)", clip(provider), strings.Join(names(nil), ", "))
	}
	u = strings.TrimRight(u, "/")
	if u != "" {
		if err := CheckURL(u); err != nil {
			return err
		}
	}
	return f.update(func(d *doc) { put(&d.URLs, provider, u) })
}

// put sets m[k] to v, or deletes it when v is "".
func put(m *map[string]string, k, v string) {
	if v == "" {
		delete(*m, k)
		return
	}
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[k] = v
}

// update reads the file, changes it with edit and writes it back.
func (f *File) update(edit func(*doc)) error {
	if f.Path == "" {
		return errors.New("keys: no configuration directory: $HOME and $XDG_CONFIG_HOME are not set")
	}
	d, err := f.read()
	if err != nil && !errors.Is(err, errExposed) { // an exposed file is replaced by a private one
		return err
	}
	edit(&d)
	if d.Keys == nil {
		d.Keys = map[string]string{}
	}
	return f.write(d)
}

// write puts d in the file: a temporary file of mode 0600 beside it,
// renamed over it.
func (f *File) write(d doc) error {
	dir := filepath.Dir(f.Path)
	// The directory is made 0700, or tightened to it, and refused when it
	// is another user's: a key file is only as private as its directory.
	if err := private.Dir(dir); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".credentials-*.tmp") // CreateTemp makes it 0600
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	name := tmp.Name()
	defer os.Remove(name) // after a rename, nothing
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("keys: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("keys: write %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("keys: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	if err := os.Rename(name, f.Path); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	return nil
}

// Source says where a provider's key comes from.
type Source string

// The sources of a key.
const (
	SourceNone Source = ""            // no key
	SourceEnv  Source = "environment" // the environment variable, which wins
	SourceFile Source = "file"        // the keys file
)

// Status is what may be shown of a provider's key and base URL: where
// each comes from, the key's mask (never the key) and the URL.
type Status struct {
	Provider string
	// Env is the key's variable; "" for a provider that takes no key.
	Env    string
	Source Source
	// Mask is Mask(key): "set", or "set, ends in abcd".
	Mask string
	// Shadowed: the file holds a key too, which the environment's hides.
	Shadowed bool
	// URLEnv is the base URL's variable.
	URLEnv string
	// URL is the base URL in use ("": the provider's default server),
	// URLSource where it comes from.
	URL       string
	URLSource Source
	// URLShadowed: the file holds a base URL too, which the
	// environment's hides.
	URLShadowed bool
}

// Statuses returns every provider's Status, getenv reading the
// environment, and the error of a file that cannot be read (the statuses
// then know the environment only).
func (f *File) Statuses(getenv func(string) string) ([]Status, error) {
	d, err := f.read()
	if err != nil {
		d = doc{} // not used, so not shown
	}
	out := make([]Status, 0, len(Providers))
	for _, p := range Providers {
		s := Status{Provider: p.Name, Env: p.Env, URLEnv: p.URLEnv}
		if p.Env != "" {
			env, file := getenv(p.Env), d.Keys[p.Name]
			switch {
			case env != "":
				s.Source, s.Mask, s.Shadowed = SourceEnv, Mask(env), file != ""
			case file != "":
				s.Source, s.Mask = SourceFile, Mask(file)
			}
		}
		env, file := getenv(p.URLEnv), d.URLs[p.Name]
		switch {
		case env != "":
			s.URL, s.URLSource, s.URLShadowed = shownURL(env), SourceEnv, file != ""
		case file != "":
			s.URL, s.URLSource = file, SourceFile
		}
		out = append(out, s)
	}
	return out, err
}

// shownURL is what may be shown of a base URL from the environment, which
// CheckURL did not see: without its user name and password, query and
// fragment.
func shownURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme == "" && p.Host == "") {
		if strings.ContainsAny(u, "@?#") {
			return "set"
		}
		return u // OLLAMA_HOST may be host:port
	}
	p.User, p.RawQuery, p.ForceQuery, p.Fragment = nil, "", false, ""
	return p.String()
}

// Mask is what may be shown of a key: "set, ends in " and its last 4
// characters when it is long enough that they give nothing away (20
// characters or more), else "set"; "" for no key.
func Mask(key string) string {
	switch {
	case key == "":
		return ""
	case len(key) < 20:
		return "set"
	}
	return "set, ends in " + key[len(key)-4:]
}

// names are the names of the providers that keep (nil: all of them).
func names(keep func(Provider) bool) []string {
	var out []string
	for _, p := range Providers {
		if keep == nil || keep(p) {
			out = append(out, p.Name)
		}
	}
	return out
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
