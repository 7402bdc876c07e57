package backing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/agentkernel/agentkernel/internal/home"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// The backing kernel's language_info is cached on disk so that kernel_info
// can answer before the backing kernel is up (ipykernel needs ~0.5 s).

// CacheDir is where agentkernel keeps caches: $XDG_CACHE_HOME/agentkernel,
// else ~/.cache/agentkernel.
func CacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "agentkernel")
	}
	h, err := home.Dir()
	if err != nil {
		return filepath.Join(os.TempDir(), "agentkernel-cache")
	}
	return filepath.Join(h, ".cache", "agentkernel")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func langInfoPath(spec string) string {
	return filepath.Join(CacheDir(), "language_info", unsafeName.ReplaceAllString(spec, "_")+".json")
}

// info is what a runner keeps of its backing kernel's kernel_info_reply,
// and caches on disk as JSON of the same shape.
type info struct {
	LanguageInfo json.RawMessage `json:"language_info"`
	Debugger     bool            `json:"debugger"`
	// SupportedFeatures are the protocol 5.5 features the kernel offers
	// ("kernel subshells", "debugger").
	SupportedFeatures []string `json:"supported_features,omitempty"`
}

// subshells reports whether the kernel offers kernel subshells.
func (v info) subshells() bool { return slices.Contains(v.SupportedFeatures, "kernel subshells") }

// CachedDebugger reports whether the backing kernelspec name had a
// debugger when it last ran here (the disk cache; false when unknown).
func CachedDebugger(name string) bool { return newInfoCache(CacheKey(name)).get().Debugger }

// CacheKey is the key of the disk cache of the backing kernelspec name,
// as Find finds it now (see infoKey); the cache is
// CacheDir()/language_info/KEY.json.
func CacheKey(name string) string {
	spec, _ := Find(name) // nil when not found
	return infoKey(name, spec)
}

// infoKey is the disk cache's key of the backing kernelspec name, found
// as spec (nil: not found): the name, and a digest of where the spec is
// and what it runs, so that two environments' kernelspecs of one name
// (Debian's python3 and a venv's, an ipykernel 6 and a 7) never answer
// kernel_info for each other.
func infoKey(name string, spec *client.Spec) string {
	if spec == nil {
		return name
	}
	sum := sha256.Sum256([]byte(spec.Dir + "\x00" + strings.Join(spec.Argv, "\x00")))
	return name + "-" + hex.EncodeToString(sum[:6])
}

// infoCache holds the info of one backing kernelspec: from the running
// kernel, else from the disk cache of an earlier one.
type infoCache struct {
	key string
	mu  sync.Mutex
	v   info
}

func newInfoCache(key string) *infoCache {
	c := &infoCache{key: key}
	b, err := os.ReadFile(langInfoPath(key))
	if err != nil || !json.Valid(b) {
		return c
	}
	if json.Unmarshal(b, &c.v) != nil || len(c.v.LanguageInfo) == 0 {
		// A cache written before the debugger flag was kept: language_info alone.
		c.v = info{LanguageInfo: b}
	}
	return c
}

func (c *infoCache) get() info {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v
}

// learn keeps what a kernel_info_reply says and writes it to the disk
// cache; a failed write only costs speed next time. A kernel has a
// debugger when its reply says so, or its kernelspec's metadata does
// (ipykernel before 6.22 only says so there).
func (c *infoCache) learn(rep *wire.Message, spec *client.Spec) error {
	var v info
	if rep == nil || rep.DecodeContent(&v) != nil || len(v.LanguageInfo) == 0 {
		return nil
	}
	if spec != nil && spec.Metadata["debugger"] == true {
		v.Debugger = true
	}
	c.mu.Lock()
	c.v = v
	c.mu.Unlock()
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	path := langInfoPath(c.key)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// wait returns the info, waiting for a start in progress (starting, nil
// when none) within ctx when none is known yet.
func (c *infoCache) wait(ctx context.Context, starting <-chan struct{}) info {
	if v := c.get(); v.LanguageInfo != nil || starting == nil {
		return v
	}
	select {
	case <-starting:
	case <-ctx.Done():
	}
	return c.get()
}
