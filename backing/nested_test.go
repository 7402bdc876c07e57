package backing

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestCheckNested(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		ppid   int
		nested bool
	}{
		{"no mark", map[string]string{"JPY_PARENT_PID": "100"}, 100, false},
		{"launched directly", map[string]string{EnvMark: "1:100:agent", "JPY_PARENT_PID": "100"}, 100, true},
		{"through a wrapper script", map[string]string{EnvMark: "1:100:agent", "JPY_PARENT_PID": "100"}, 555, true},
		{"wrapper that dropped JPY_PARENT_PID", map[string]string{EnvMark: "1:100:agent"}, 100, true},
		{"a notebook run from a backing kernel", map[string]string{EnvMark: "1:100:agent", "JPY_PARENT_PID": "777"}, 777, false},
		{"two levels deep", map[string]string{EnvMark: "2:100:agent", "JPY_PARENT_PID": "777"}, 777, true},
		{"malformed mark", map[string]string{EnvMark: "garbage"}, 1, true},
		{"zero pid", map[string]string{EnvMark: "1:0:x"}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkNested(func(k string) string { return tt.env[k] }, tt.ppid)
			var ne *NestedError
			if got := errors.As(err, &ne); got != tt.nested {
				t.Fatalf("checkNested = %v, want nested %v", err, tt.nested)
			}
			if tt.nested && !strings.Contains(err.Error(), "pick a real kernel with --backing") {
				t.Fatalf("message %q does not say what to do", err)
			}
		})
	}
}

func TestNestedErrorNamesTheParent(t *testing.T) {
	err := checkNested(func(k string) string {
		return map[string]string{EnvMark: "1:4242:agent-code", "JPY_PARENT_PID": "4242"}[k]
	}, 1)
	want := "this kernel was started as the backing kernel of another agentkernel (pid 4242, kernelspec agent-code)"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error = %v, want it to start with %q", err, want)
	}
}

func TestMarkDepth(t *testing.T) {
	t.Setenv(EnvMark, "")
	os.Unsetenv(EnvMark)
	pid := strconv.Itoa(os.Getpid())
	if got, want := Mark("agent"), EnvMark+"=1:"+pid+":agent"; got != want {
		t.Fatalf("Mark at the top = %q, want %q", got, want)
	}
	t.Setenv(EnvMark, "1:99:outer")
	if got, want := Mark(""), EnvMark+"=2:"+pid+":"; got != want {
		t.Fatalf("Mark one level down = %q, want %q", got, want)
	}
}
