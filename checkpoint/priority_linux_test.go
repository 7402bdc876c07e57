package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// threads returns the nice value of each thread of this process.
func threads(t *testing.T) map[string]int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skip("no /proc")
	}
	out := map[string]int{}
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		nice, _ := strconv.Atoi(fields[16]) // field 19 of stat
		out[task.Name()] = nice
	}
	return out
}

// TestBackgroundBaselineLeavesThreads: the background baseline runs at a
// low priority on a thread of the runtime's and gives it back as it was:
// no thread ends (a child started from it with Pdeathsig, as MCP servers
// are, would be signalled) and none stays at the low priority.
func TestBackgroundBaselineLeavesThreads(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.txt", "a")
	before := threads(t)
	for range 20 {
		tr := newTracker(t, root, openStore(t), Options{})
		if _, err := tr.Baseline(context.Background(), true); err != nil {
			t.Fatal(err)
		}
	}
	after := threads(t)
	for id, nice := range after {
		if nice != 0 {
			t.Errorf("thread %s is left at nice %d", id, nice)
		}
	}
	for id := range before {
		if _, ok := after[id]; !ok {
			t.Errorf("thread %s ended", id)
		}
	}
}
