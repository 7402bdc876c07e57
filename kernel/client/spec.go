package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/agentkernel/agentkernel/internal/home"
	"github.com/agentkernel/agentkernel/internal/pyenv"
)

// ErrNoSpec is wrapped by FindSpec when no kernelspec has the name.
var ErrNoSpec = errors.New("client: no such kernelspec")

// Spec is a kernelspec: the content of a kernel.json plus where it was found.
type Spec struct {
	// Name is the kernel name (the directory name, lower case).
	Name string `json:"-"`
	// Dir is the resource directory holding kernel.json (and logos).
	Dir string `json:"-"`

	Argv          []string          `json:"argv"`
	DisplayName   string            `json:"display_name"`
	Language      string            `json:"language"`
	InterruptMode string            `json:"interrupt_mode,omitempty"` // "signal" (default) or "message"
	Env           map[string]string `json:"env,omitempty"`
	Metadata      map[string]any    `json:"metadata,omitempty"`
}

// sysPrefixDirs is sys.prefix/share/jupyter of the Pythons whose
// kernelspecs are ours to see, as jupyter_core's ENV_JUPYTER_PATH: the
// environment this executable was installed into (pip puts a wheel's
// binary in PREFIX/bin, beside the kernelspecs in PREFIX/share/jupyter),
// then Debian's /usr/bin/python3 (sys.prefix /usr).
// It is worked out when first needed, not at every process's start.
var sysPrefixDirs = sync.OnceValue(func() []string { return append(ownPrefixDirs(), "/usr/share/jupyter") })

// ownPrefixDirs is PREFIX/share/jupyter when this executable is
// PREFIX/bin/NAME of a Python environment.
func ownPrefixDirs() []string {
	if prefix, ok := pyenv.Own(); ok {
		return []string{filepath.Join(prefix, "share", "jupyter")}
	}
	return nil
}

// pythonArg0 matches the argv[0] that jupyter_client replaces with its own
// sys.executable: python, python3, python3.12.
var pythonArg0 = regexp.MustCompile(`^python(\d+(\.\d+)?)?$`)

// resolvePython is what a kernelspec's bare "python" means, as
// jupyter_client makes it mean its own interpreter: the Python of the
// environment the kernelspec is installed in (PREFIX/share/jupyter/kernels/NAME
// → PREFIX/bin/python), else the name as it is (looked up on PATH). pip's
// ipykernel writes "python" into its kernelspec.
func resolvePython(arg0, specDir string) string {
	if !pythonArg0.MatchString(arg0) || specDir == "" {
		return arg0
	}
	prefix := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(specDir))))
	if filepath.Base(filepath.Dir(specDir)) != "kernels" {
		return arg0
	}
	for _, name := range []string{arg0, "python3", "python"} {
		p := filepath.Join(prefix, "bin", name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return arg0
}

// systemDirs is jupyter_core's SYSTEM_JUPYTER_PATH on Linux.
var systemDirs = []string{"/usr/local/share/jupyter", "/usr/share/jupyter"}

// InSystemDirs reports whether the kernelspec directory dir is in one of
// the system data directories, which every environment searches (a
// kernel started without $HOME or $JUPYTER_PATH, by a gateway, still
// finds it).
func InSystemDirs(dir string) bool {
	for _, d := range systemDirs {
		if filepath.Dir(filepath.Clean(dir)) == filepath.Join(d, "kernels") {
			return true
		}
	}
	return false
}

// DataDirs returns the Jupyter data search path in order, as jupyter_core's
// jupyter_path does: the $JUPYTER_PATH entries, the user data dir
// ($JUPYTER_DATA_DIR, else $XDG_DATA_HOME/jupyter, else
// ~/.local/share/jupyter, plus ~/.local/share/jupyter as Python's user base),
// the sys-prefix dir unless it is also a system dir (with
// $JUPYTER_PREFER_ENV_PATH set it comes before the user dirs), then the
// system dirs /usr/local/share/jupyter and /usr/share/jupyter. Duplicates
// are removed, keeping the first.
func DataDirs() []string {
	var dirs []string
	if jp := os.Getenv("JUPYTER_PATH"); jp != "" {
		for _, d := range filepath.SplitList(jp) {
			if d = strings.TrimRight(d, string(os.PathSeparator)); d != "" {
				dirs = append(dirs, d)
			}
		}
	}
	user := []string{userDataDir()}
	if h, err := home.Dir(); err == nil {
		user = append(user, filepath.Join(h, ".local", "share", "jupyter"))
	}
	var env []string
	for _, d := range sysPrefixDirs() {
		if !contains(systemDirs, d) {
			env = append(env, d)
		}
	}
	if v := os.Getenv("JUPYTER_PREFER_ENV_PATH"); v != "" && v != "0" && !strings.EqualFold(v, "false") && !strings.EqualFold(v, "no") {
		dirs = append(dirs, env...)
		dirs = append(dirs, user...)
	} else {
		dirs = append(dirs, user...)
		dirs = append(dirs, env...)
	}
	dirs = append(dirs, systemDirs...)
	out := dirs[:0]
	for _, d := range dirs {
		if d != "" && !contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// userDataDir is jupyter_core's jupyter_data_dir on Linux.
func userDataDir() string {
	if d := os.Getenv("JUPYTER_DATA_DIR"); d != "" {
		return d
	}
	xdg := os.Getenv("XDG_DATA_HOME")
	if xdg == "" {
		h, err := home.Dir()
		if err != nil {
			return ""
		}
		xdg = filepath.Join(h, ".local", "share")
	}
	return filepath.Join(xdg, "jupyter")
}

// RuntimeDir is jupyter_core's jupyter_runtime_dir: $JUPYTER_RUNTIME_DIR,
// else the user data dir's runtime subdirectory. Connection files go there.
func RuntimeDir() string {
	if d := os.Getenv("JUPYTER_RUNTIME_DIR"); d != "" {
		return d
	}
	return filepath.Join(userDataDir(), "runtime")
}

// validName is the kernel name pattern jupyter_client accepts.
var validName = regexp.MustCompile(`^[a-z0-9._-]+$`)

// FindSpec returns the first kernelspec called name (case-insensitive) on
// the DataDirs search path. The error wraps ErrNoSpec and lists the
// directories searched when there is none.
func FindSpec(name string) (*Spec, error) {
	specs, err := FindSpecs(name)
	if err != nil {
		return nil, err
	}
	return specs[0], nil
}

// FindSpecs returns every kernelspec called name (case-insensitive) on the
// DataDirs search path, the one Jupyter would pick first. A caller that
// must pass over some of them (agentkernel skips its own) takes the first
// it accepts. The error wraps ErrNoSpec and lists the directories searched
// when there is none; a malformed kernel.json where Jupyter would look
// first is an error, as it is in Jupyter, and one further down is left out.
func FindSpecs(name string) ([]*Spec, error) {
	lname := strings.ToLower(name)
	dirs := DataDirs()
	var specs []*Spec
	if validName.MatchString(lname) {
		for _, d := range dirs {
			kdir := filepath.Join(d, "kernels")
			entries, err := os.ReadDir(kdir)
			if err != nil {
				continue
			}
			for _, e := range entries {
				if strings.ToLower(e.Name()) != lname {
					continue
				}
				dir := filepath.Join(kdir, e.Name())
				if _, err := os.Stat(filepath.Join(dir, "kernel.json")); err != nil {
					continue
				}
				s, err := readSpec(lname, dir)
				if err != nil {
					if len(specs) == 0 {
						return nil, err
					}
					continue
				}
				specs = append(specs, s)
			}
		}
	}
	if len(specs) > 0 {
		return specs, nil
	}
	searched := make([]string, len(dirs))
	for i, d := range dirs {
		searched[i] = filepath.Join(d, "kernels")
	}
	return nil, fmt.Errorf("%w: %q (searched %s)", ErrNoSpec, name, strings.Join(searched, ", "))
}

// ReadSpec reads the kernelspec in dir (which holds kernel.json), naming it
// after the directory.
func ReadSpec(dir string) (*Spec, error) {
	return readSpec(strings.ToLower(filepath.Base(dir)), dir)
}

func readSpec(name, dir string) (*Spec, error) {
	path := filepath.Join(dir, "kernel.json")
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNoSpec, path)
		}
		return nil, fmt.Errorf("client: read kernelspec: %w", err)
	}
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("client: parse kernelspec %s: %w", path, err)
	}
	if len(s.Argv) == 0 {
		return nil, fmt.Errorf("client: kernelspec %s: empty argv", path)
	}
	switch s.InterruptMode {
	case "", "signal", "message":
	default:
		return nil, fmt.Errorf("client: kernelspec %s: unknown interrupt_mode %q", path, s.InterruptMode)
	}
	s.Name, s.Dir = name, dir
	return &s, nil
}
