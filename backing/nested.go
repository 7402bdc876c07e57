package backing

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// EnvMark is the environment variable set for every backing kernel that
// agentkernel launches: "DEPTH:PID:KERNEL", where PID is the launching
// agentkernel, KERNEL its own kernelspec name ("" when unknown) and DEPTH
// how many agentkernels are above the backing kernel (1 for a backing
// kernel of a top-level one). The backing kernel's children inherit it.
const EnvMark = "AGENTKERNEL_BACKING_OF"

// maxDepth is the depth at which an agentkernel refuses to proxy even when
// it was not launched directly by another: agentkernel, its ipykernel, code
// there that runs a notebook on an agentkernel (one level, allowed), its
// ipykernel, code there that starts yet another agentkernel (refused).
const maxDepth = 2

// Mark returns the KEY=VALUE environment entry for a backing kernel that
// this process launches; name is this kernel's own kernelspec name.
func Mark(name string) string {
	depth := 1
	if m, err := parseMark(os.Getenv(EnvMark)); err == nil && m.depth > 0 {
		depth = m.depth + 1
	}
	return fmt.Sprintf("%s=%d:%d:%s", EnvMark, depth, os.Getpid(), name)
}

// NestedError is what CheckNested returns: this process was launched as
// the backing kernel of another agentkernel.
type NestedError struct {
	// Parent is the process id of the agentkernel that launched the chain's
	// last link, and ParentKernel its kernelspec name ("" when unknown).
	Parent       int
	ParentKernel string
	// Depth is how many agentkernels are above this one.
	Depth int
	// Mark is the raw value of EnvMark.
	Mark string
}

func (e *NestedError) Error() string {
	who := "pid " + strconv.Itoa(e.Parent)
	if e.Parent == 0 {
		who = EnvMark + "=" + strconv.Quote(e.Mark)
	}
	if e.ParentKernel != "" {
		who += ", kernelspec " + e.ParentKernel
	}
	levels := ""
	if e.Depth > 1 {
		levels = fmt.Sprintf(", %d levels down", e.Depth)
	}
	return fmt.Sprintf("this kernel was started as the backing kernel of another agentkernel (%s%s); "+
		"it will not start a backing kernel of its own: pick a real kernel with --backing", who, levels)
}

// CheckNested returns a *NestedError when this process must not act as a
// proxy: EnvMark is set and names the process that launched it (directly,
// or through a wrapper script: JPY_PARENT_PID or the parent process), or
// the chain is maxDepth deep. A mark left in the environment of code that
// a backing kernel runs (a notebook run from inside one) is not a chain
// and passes. A malformed mark is refused: it can only come from a chain.
func CheckNested() error {
	return checkNested(os.Getenv, os.Getppid())
}

func checkNested(getenv func(string) string, ppid int) error {
	raw := getenv(EnvMark)
	if raw == "" {
		return nil
	}
	m, err := parseMark(raw)
	if err != nil {
		return &NestedError{Mark: raw, Depth: 1}
	}
	ne := &NestedError{Parent: m.pid, ParentKernel: m.kernel, Depth: m.depth, Mark: raw}
	if m.depth >= maxDepth || m.pid == ppid {
		return ne
	}
	if jpy, err := strconv.Atoi(getenv("JPY_PARENT_PID")); err == nil && jpy == m.pid {
		return ne
	}
	return nil
}

type mark struct {
	depth, pid int
	kernel     string
}

func parseMark(s string) (mark, error) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 {
		return mark{}, fmt.Errorf("backing: malformed %s %q", EnvMark, s)
	}
	depth, err1 := strconv.Atoi(parts[0])
	pid, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || depth < 1 || pid < 1 {
		return mark{}, fmt.Errorf("backing: malformed %s %q", EnvMark, s)
	}
	return mark{depth: depth, pid: pid, kernel: parts[2]}, nil
}
