package keys

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/internal/protect"
)

const openaiKey = "sk-test-0123456789abcdefWXYZ"

// TestSetAndLookup: a saved key is read back by its environment variable's
// name; the directory is 0700 and the file 0600 whatever the umask; a
// second provider's save keeps the first; an empty key removes one.
func TestSetAndLookup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "config", "agentkernel")
	f := &File{Path: filepath.Join(dir, FileName)}
	if k, err := f.Lookup("OPENAI_API_KEY"); err != nil || k != "" {
		t.Fatalf("no file: %q %v", k, err)
	}
	if err := f.Set("openai", openaiKey); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("anthropic", "sk-ant-test-0123456789"); err != nil {
		t.Fatal(err)
	}
	if k, err := f.Lookup("OPENAI_API_KEY"); err != nil || k != openaiKey {
		t.Fatalf("openai: %q %v", k, err)
	}
	if k, _ := f.Lookup("ANTHROPIC_API_KEY"); k != "sk-ant-test-0123456789" {
		t.Fatalf("anthropic: %q", k)
	}
	if k, _ := f.Lookup("OLLAMA_HOST"); k != "" {
		t.Fatalf("a variable that is no key: %q", k)
	}
	mode := func(p string) os.FileMode {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode().Perm()
	}
	if m := mode(dir); m != 0o700 {
		t.Errorf("directory mode %04o", m)
	}
	if m := mode(f.Path); m != 0o600 {
		t.Errorf("file mode %04o", m)
	}
	if err := f.Set("openai", ""); err != nil {
		t.Fatal(err)
	}
	if k, _ := f.Lookup("OPENAI_API_KEY"); k != "" {
		t.Errorf("removed, still %q", k)
	}
	if k, _ := f.Lookup("ANTHROPIC_API_KEY"); k == "" {
		t.Error("removing openai's removed anthropic's")
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".credentials-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestExposedFile: a file others can read is not used (its keys are not
// looked up, the status says how to mend it), and a save makes it private
// again, keeping the other keys.
func TestExposedFile(t *testing.T) {
	f := &File{Path: filepath.Join(t.TempDir(), FileName)}
	if err := f.Set("anthropic", "sk-ant-test-0123456789"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Lookup("ANTHROPIC_API_KEY"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("an exposed file was used: %v", err)
	}
	st, err := f.Statuses(func(string) string { return "" })
	if err == nil || st[1].Source != SourceNone {
		t.Fatalf("statuses %+v %v", st, err)
	}
	if got := f.Values(); len(got) != 1 {
		t.Errorf("scrubbers must still know an exposed file's keys: %d", len(got))
	}
	if err := f.Set("openai", openaiKey); err != nil {
		t.Fatal(err)
	}
	if k, err := f.Lookup("ANTHROPIC_API_KEY"); err != nil || k != "sk-ant-test-0123456789" {
		t.Errorf("after a save: %q %v", k, err)
	}
}

// TestBadInput: keys that are no keys, unknown providers, a broken file and
// no configuration directory get clear errors that never hold the key.
func TestBadInput(t *testing.T) {
	f := &File{Path: filepath.Join(t.TempDir(), FileName)}
	for _, tt := range []struct{ provider, key, want string }{
		{"openai", "sk-with space-0123456789", "space"},
		{"openai", "sk-two\nlines-0123456789", "line break"},
		{"openai", "sk-" + strings.Repeat("x", 2000), "longer than"},
		{"openai", "sk-ünïcode-0123456789", "printable ASCII"},
		{"ollama", openaiKey, "unknown provider"},
	} {
		err := f.Set(tt.provider, tt.key)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Set(%q, …) = %v, want %q", tt.provider, err, tt.want)
		}
		if err != nil && len(tt.key) > 8 && strings.Contains(err.Error(), tt.key[3:10]) {
			t.Errorf("the error holds the key: %v", err)
		}
	}
	if err := os.WriteFile(f.Path, []byte(`{"keys": {"openai": `+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Lookup("OPENAI_API_KEY"); err == nil || !strings.Contains(err.Error(), f.Path) {
		t.Errorf("a broken file: %v", err)
	}
	if err := (&File{}).Set("openai", openaiKey); err == nil || !strings.Contains(err.Error(), "no configuration directory") {
		t.Errorf("no path: %v", err)
	}
}

// TestStatusesAndMask: the environment wins and says it hides the file's
// key; a mask shows at most the last 4 characters, and none of a short key.
func TestStatusesAndMask(t *testing.T) {
	f := &File{Path: filepath.Join(t.TempDir(), FileName)}
	if err := f.Set("openai", openaiKey); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("anthropic", "sk-ant-test-0123456789"); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-env-abcdefghijklmnop"}
	st, err := f.Statuses(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s := st[0]; s.Provider != "openai" || s.Source != SourceFile || s.Mask != "set, ends in WXYZ" || s.Shadowed {
		t.Errorf("openai %+v", s)
	}
	if s := st[1]; s.Source != SourceEnv || s.Mask != "set, ends in mnop" || !s.Shadowed {
		t.Errorf("anthropic %+v", s)
	}
	if Mask("sk-short") != "set" || Mask("") != "" {
		t.Error("a short key's mask shows some of it")
	}
}

// TestProtected: the file's name is one internal/protect refuses to the
// agent's file tools and keeps out of checkpoints.
func TestProtected(t *testing.T) {
	if protect.Path(filepath.Join(".config", "agentkernel", FileName)) == "" {
		t.Errorf("%s is not protected", FileName)
	}
}

// TestDefaultPath follows $XDG_CONFIG_HOME when it is absolute, else ~/.config.
func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/x/config")
	if p := DefaultPath(); p != "/x/config/agentkernel/credentials.json" {
		t.Errorf("XDG: %s", p)
	}
	t.Setenv("XDG_CONFIG_HOME", "relative")
	t.Setenv("HOME", "/home/u")
	if p := DefaultPath(); p != "/home/u/.config/agentkernel/credentials.json" {
		t.Errorf("HOME: %s", p)
	}
}

// TestWidenedDirTightened: a config directory that already exists open to
// others (made 0755 by something else) is tightened to 0700 when a key is
// saved in it: the key file is only as private as its directory.
func TestWidenedDirTightened(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agentkernel")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &File{Path: filepath.Join(dir, FileName)}
	if err := f.Set("openai", openaiKey); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o700 {
		t.Fatalf("the key's directory is %04o, want 0700", perm)
	}
}

// TestBaseURL: a base URL is saved beside the keys, in the same private
// file, and read back by its variable's name (OPENAI_BASE_URL,
// ANTHROPIC_BASE_URL, OLLAMA_HOST); saving one keeps the keys, and a key's
// save keeps it; the environment's wins in the statuses; an empty one
// removes it; a URL that holds a credential, a query or no scheme is
// refused with an error that does not repeat it.
func TestBaseURL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agentkernel")
	f := &File{Path: filepath.Join(dir, FileName)}
	if err := f.Set("openai", openaiKey); err != nil {
		t.Fatal(err)
	}
	if err := f.SetURL("openai", "http://127.0.0.1:8000/v1/"); err != nil {
		t.Fatal(err)
	}
	if err := f.SetURL("ollama", "http://gpu-box:11434"); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("anthropic", "sk-ant-test-0123456789"); err != nil {
		t.Fatal(err)
	}
	for env, want := range map[string]string{
		"OPENAI_BASE_URL":    "http://127.0.0.1:8000/v1", // the trailing slash dropped
		"OLLAMA_HOST":        "http://gpu-box:11434",
		"ANTHROPIC_BASE_URL": "",
		"OPENAI_API_KEY":     openaiKey,
	} {
		if got, err := f.Lookup(env); err != nil || got != want {
			t.Errorf("Lookup(%s) = %q %v, want %q", env, got, err, want)
		}
	}
	st, err := os.Stat(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mode().Perm(); m != 0o600 {
		t.Errorf("file mode %04o", m)
	}
	if v := f.Values(); len(v) != 2 {
		t.Errorf("Values holds %d strings, want the 2 keys", len(v))
	}

	env := map[string]string{"ANTHROPIC_BASE_URL": "https://user:pw@proxy.example/anthropic?k=1"}
	sts, err := f.Statuses(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Status{}
	for _, s := range sts {
		byName[s.Provider] = s
	}
	if s := byName["openai"]; s.URL != "http://127.0.0.1:8000/v1" || s.URLSource != SourceFile || s.URLEnv != "OPENAI_BASE_URL" {
		t.Errorf("openai %+v", s)
	}
	if s := byName["anthropic"]; s.URL != "https://proxy.example/anthropic" || s.URLSource != SourceEnv {
		t.Errorf("anthropic: the environment's URL is shown as %q (%s); its credential must not be", s.URL, s.URLSource)
	}
	if s := byName["ollama"]; s.Env != "" || s.Source != SourceNone || s.URL != "http://gpu-box:11434" {
		t.Errorf("ollama %+v", s)
	}

	if err := f.SetURL("openai", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.Lookup("OPENAI_BASE_URL"); got != "" {
		t.Errorf("removed, still %q", got)
	}
	if got, _ := f.Lookup("OPENAI_API_KEY"); got != openaiKey {
		t.Errorf("removing the URL removed the key: %q", got)
	}

	for _, tt := range []struct{ provider, url, want string }{
		{"openai", "http://alice:s3cretpw@host/v1", "user name or password"},
		{"openai", "http://host/v1?api_key=s3cretpw", "query"},
		{"openai", "host:8000/v1", "http://"},
		{"openai", "ftp://host/v1", "http://"},
		{"openai", "http:///v1", "no host"},
		{"openai", "http://host/v1 s3cretpw", "space"},
		{"mistral", "http://host/v1", "unknown provider"},
	} {
		err := f.SetURL(tt.provider, tt.url)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("SetURL(%q, %q) = %v, want %q", tt.provider, tt.url, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cretpw") {
			t.Errorf("the error repeats the URL: %v", err)
		}
	}
}
