package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentkernel/agentkernel/internal/home"
	"github.com/agentkernel/agentkernel/internal/pyenv"
)

// KernelSpec is the content of a kernel.json.
type KernelSpec struct {
	Argv          []string          `json:"argv"`
	DisplayName   string            `json:"display_name"`
	Language      string            `json:"language"`
	InterruptMode string            `json:"interrupt_mode,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Metadata      map[string]any    `json:"metadata,omitempty"`
	// KernelProtocolVersion is the messaging protocol the kernel speaks
	// (a kernelspec field since protocol 5.5).
	KernelProtocolVersion string `json:"kernel_protocol_version,omitempty"`
}

// Scope says where a kernelspec is installed.
type Scope int

// The install scopes, as `jupyter kernelspec install` has them.
const (
	// ScopeUser: the user's Jupyter data dir ($JUPYTER_DATA_DIR or
	// ~/.local/share/jupyter).
	ScopeUser Scope = iota
	// ScopeSysPrefix: the share/jupyter of the Python that runs Jupyter.
	ScopeSysPrefix
	// ScopePrefix: PREFIX/share/jupyter.
	ScopePrefix
)

// UserDataDir is Jupyter's per-user data directory.
func UserDataDir() (string, error) {
	if d := os.Getenv("JUPYTER_DATA_DIR"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "jupyter"), nil
	}
	h, err := home.Dir()
	if err != nil {
		return "", fmt.Errorf("kernel: find home directory: %w", err)
	}
	return filepath.Join(h, ".local", "share", "jupyter"), nil
}

// SysPrefix returns sys.prefix of the Python that runs Jupyter: that of
// $AGENTKERNEL_PYTHON; else the environment pip installed this executable
// into (PREFIX/bin/agentkernel: `pip install agentkernel` then
// `agentkernel install --sys-prefix` puts the kernel into that
// environment's Jupyter); else /usr/bin/python3's (Debian's Jupyter), else
// that of python3 on PATH.
func SysPrefix() (string, error) {
	py := os.Getenv("AGENTKERNEL_PYTHON")
	if py == "" {
		if prefix, ok := pyenv.Own(); ok {
			return prefix, nil
		}
		py = "/usr/bin/python3"
		if _, err := os.Stat(py); err != nil {
			py = "python3"
		}
	}
	out, err := exec.Command(py, "-c", "import sys; print(sys.prefix)").Output()
	if err != nil {
		return "", fmt.Errorf("kernel: ask %s for sys.prefix: %w", py, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// SpecsDir returns the kernels directory for scope (prefix is used by
// ScopePrefix only).
func SpecsDir(scope Scope, prefix string) (string, error) {
	switch scope {
	case ScopeUser:
		d, err := UserDataDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(d, "kernels"), nil
	case ScopeSysPrefix:
		p, err := SysPrefix()
		if err != nil {
			return "", err
		}
		return filepath.Join(p, "share", "jupyter", "kernels"), nil
	case ScopePrefix:
		if prefix == "" {
			return "", errors.New("kernel: --prefix needs a directory")
		}
		abs, err := filepath.Abs(prefix)
		if err != nil {
			return "", fmt.Errorf("kernel: prefix: %w", err)
		}
		return filepath.Join(abs, "share", "jupyter", "kernels"), nil
	}
	return "", fmt.Errorf("kernel: unknown install scope %d", scope)
}

var specName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// InstallSpec writes kernels/NAME/kernel.json and the given files (logos)
// under dir, replacing an existing spec of that name. It returns the spec
// directory.
func InstallSpec(dir, name string, spec KernelSpec, files map[string][]byte) (string, error) {
	if !specName.MatchString(name) {
		return "", fmt.Errorf("kernel: kernelspec name %q: use letters, digits, '.', '_' and '-'", name)
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return "", fmt.Errorf("kernel: encode kernel.json: %w", err)
	}
	target := filepath.Join(dir, strings.ToLower(name))
	if err := os.MkdirAll(target, 0o755); err != nil {
		return "", fmt.Errorf("kernel: install kernelspec: %w", err)
	}
	files = mapsWith(files, "kernel.json", append(b, '\n'))
	for fname, data := range files {
		if err := os.WriteFile(filepath.Join(target, fname), data, 0o644); err != nil {
			return "", fmt.Errorf("kernel: install kernelspec: %w", err)
		}
	}
	return target, nil
}

func mapsWith(m map[string][]byte, k string, v []byte) map[string][]byte {
	out := make(map[string][]byte, len(m)+1)
	for kk, vv := range m {
		out[kk] = vv
	}
	out[k] = v
	return out
}
