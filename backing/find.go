package backing

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentkernel/agentkernel/kernel/client"
)

// ErrSelf is wrapped by Find when every kernelspec with the name is an
// agentkernel kernelspec: a kernel cannot be its own backing.
var ErrSelf = errors.New("backing: agentkernel cannot be its own backing kernel")

// binaryName is the base name of the agentkernel binary.
const binaryName = "agentkernel"

// IsAgentKernel reports whether spec starts agentkernel: its metadata has
// the "agentkernel" entry that install writes, or a word of its argv names
// the agentkernel binary (also inside a "sh -c" script).
func IsAgentKernel(spec *client.Spec) bool {
	if _, ok := spec.Metadata[binaryName]; ok {
		return true
	}
	self := selfPath()
	for _, arg := range spec.Argv {
		for _, word := range strings.Fields(arg) {
			word = strings.Trim(word, `"'`)
			if filepath.Base(word) == binaryName || (self != "" && word == self) {
				return true
			}
		}
	}
	return false
}

// selfPath is this executable's path with symlinks resolved, or "".
func selfPath() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		return resolved
	}
	return exe
}

// Find returns the kernelspec that runs code for an agentkernel whose
// backing is name: the first kernelspec with that name on Jupyter's search
// path that is not agentkernel's own. When there is none and name is
// python3 (or python), it is the native kernel of the Python that has
// ipykernel: $AGENTKERNEL_PYTHON, /usr/bin/python3, or python3 on PATH.
// Otherwise the error wraps ErrSelf (only agentkernel's kernelspecs have
// the name) or client.ErrNoSpec.
func Find(name string) (*client.Spec, error) {
	specs, err := client.FindSpecs(name)
	if err != nil && !errors.Is(err, client.ErrNoSpec) {
		return nil, err
	}
	var own []string
	for _, s := range specs {
		if !IsAgentKernel(s) {
			return s, nil
		}
		own = append(own, s.Dir)
	}
	if isNativeName(name) {
		if s, nerr := nativeSpec(); nerr == nil {
			return s, nil
		} else if len(own) == 0 {
			return nil, errors.Join(err, nerr)
		}
	}
	if len(own) > 0 {
		return nil, fmt.Errorf("%w: %q is agentkernel's own kernelspec (%s); pick a real kernel with --backing (jupyter kernelspec list shows them)", ErrSelf, name, strings.Join(own, ", "))
	}
	return nil, err
}

// isNativeName reports whether jupyter_client would serve name from its
// own Python when no kernelspec has it.
func isNativeName(name string) bool {
	switch strings.ToLower(name) {
	case "python3", "python":
		return true
	}
	return false
}

// pythonCandidates lists the Pythons tried for the native kernel, in order.
func pythonCandidates() []string {
	var out []string
	if p := os.Getenv("AGENTKERNEL_PYTHON"); p != "" {
		out = append(out, p)
	}
	out = append(out, "/usr/bin/python3")
	if p, err := exec.LookPath("python3"); err == nil {
		out = append(out, p)
	}
	return out
}

// nativeSpec is jupyter_client's native python3 kernelspec for the first
// Python that can import ipykernel.
func nativeSpec() (*client.Spec, error) {
	var tried []string
	for _, py := range pythonCandidates() {
		if contains(tried, py) {
			continue
		}
		tried = append(tried, py)
		check := exec.Command(py, "-c", "import importlib.util as u, sys; sys.exit(u.find_spec('ipykernel') is None)")
		if check.Run() != nil {
			continue
		}
		return &client.Spec{
			Name:        "python3",
			Argv:        []string{py, "-m", "ipykernel_launcher", "-f", "{connection_file}"},
			DisplayName: "Python 3 (ipykernel)",
			Language:    "python",
			Metadata:    map[string]any{"debugger": true},
		}, nil
	}
	return nil, fmt.Errorf("backing: no Python with ipykernel for the native python3 kernel (tried %s; set AGENTKERNEL_PYTHON)",
		strings.Join(tried, ", "))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
