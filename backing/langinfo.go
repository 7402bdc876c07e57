package backing

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
)

// The backing kernel's language_info is cached on disk so that kernel_info
// can answer before the backing kernel is up (ipykernel needs ~0.5 s).

// CacheDir is where agentkernel keeps caches: $XDG_CACHE_HOME/agentkernel,
// else ~/.cache/agentkernel.
func CacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "agentkernel")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "agentkernel-cache")
	}
	return filepath.Join(home, ".cache", "agentkernel")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func langInfoPath(spec string) string {
	return filepath.Join(CacheDir(), "language_info", unsafeName.ReplaceAllString(spec, "_")+".json")
}

// loadLangInfo returns the cached language_info of a backing kernelspec,
// or nil.
func loadLangInfo(spec string) json.RawMessage {
	b, err := os.ReadFile(langInfoPath(spec))
	if err != nil || !json.Valid(b) {
		return nil
	}
	return b
}

// saveLangInfo caches language_info; failures only cost speed next time.
func saveLangInfo(spec string, info json.RawMessage) error {
	path := langInfoPath(spec)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, info, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
