//go:build linux

package procguard

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv("PROCGUARD_TEST_PARENT") == "1" {
		os.Exit(parent())
	}
	goleak.VerifyTestMain(m)
}

// parent is the process the test kills: it starts children that start
// children, prints their groups, and waits to be killed.
func parent() int {
	var groups []int
	for _, script := range []string{
		"sleep 1000 & exec sleep 1000",               // a child and its child
		"trap '' TERM; sleep 1000 & exec sleep 1000", // deaf to SIGTERM
		"sleep 1000 >/dev/null 2>&1 &",               // a leader that ends at once, its job lingers
		"exit 0",                                     // one that ends
	} {
		cmd := exec.Command("/bin/sh", "-c", script)
		if err := Start(cmd); err != nil {
			fmt.Println("start:", err)
			return 1
		}
		groups = append(groups, cmd.Process.Pid)
		if strings.HasSuffix(script, "&") || strings.HasPrefix(script, "exit") {
			_ = cmd.Wait()
			Release(cmd)
		}
	}
	fmt.Println(strings.Trim(fmt.Sprint(groups), "[]"))
	time.Sleep(time.Hour)
	return 0
}

// TestChildrenEndWithParent: a process that started children through the
// guard is SIGKILLed; within 5 s no process of their groups is left, one
// deaf to SIGTERM included, and one whose leader had ended.
func TestChildrenEndWithParent(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PROCGUARD_TEST_PARENT=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var procs []proc
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		for _, p := range alive(procs) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the parent said %q: %v", line, err)
	}
	var groups []int
	for _, f := range strings.Fields(line) {
		pgid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("the parent said %q", line)
		}
		groups = append(groups, pgid)
	}
	// Two processes in each of the first two groups, one lingering in the
	// third.
	deadline := time.Now().Add(10 * time.Second)
	for {
		procs = inGroups(groups)
		if len(procs) == 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(procs) != 5 {
		t.Fatalf("the children's groups hold %v, want 5 processes", procs)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for len(alive(procs)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := alive(procs); len(left) > 0 {
		t.Fatalf("alive 5 s after their parent was killed: %v", left)
	}
}

// TestWatcherForgetsReleasedGroups: the watcher ends the groups it still
// lists when its input ends, not those it was told are over.
func TestWatcherForgetsReleasedGroups(t *testing.T) {
	var groups []int
	var exited []chan error
	for range 3 {
		cmd := exec.Command("sleep", "1000")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-done
		})
		groups, exited = append(groups, cmd.Process.Pid), append(exited, done)
	}
	w := exec.Command("/bin/sh", "-c", watcher)
	w.Stdin = strings.NewReader(fmt.Sprintf("+%d\n+%d\n+%d\n-%d\n-99999999\n", groups[0], groups[1], groups[2], groups[1]))
	if out, err := w.CombinedOutput(); err != nil {
		t.Fatalf("the watcher: %v\n%s", err, out)
	}
	for i, done := range exited {
		select {
		case err := <-done:
			if i == 1 {
				t.Errorf("the group it was told is over was ended: %v", err)
			} else if !strings.Contains(fmt.Sprint(err), "terminated") {
				t.Errorf("group %d of 3 ended by %v, want SIGTERM", i+1, err)
			}
			done <- err
		case <-time.After(time.Second):
			if i != 1 {
				t.Errorf("group %d of 3 is alive after the watcher ended", i+1)
			}
		}
	}
}

// TestReleaseForgetsGroups: a released child's group is forgotten at once
// when it is empty, at a later call when a lingering process ends; the
// starter's goroutine ends with the last child (goleak checks it).
func TestReleaseForgetsGroups(t *testing.T) {
	run := func(script string) int {
		cmd := exec.Command("/bin/sh", "-c", script)
		if err := Start(cmd); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		Release(cmd)
		Release(cmd) // again: nothing
		return cmd.Process.Pid
	}
	run("exit 0")
	lingering := run("sleep 0.2 >/dev/null 2>&1 &")
	std.mu.Lock()
	if len(std.live) != 0 || !std.lingering[lingering] || std.starter != nil {
		t.Errorf("live %v, lingering %v (want %d), starter %v", std.live, std.lingering, lingering, std.starter)
	}
	std.mu.Unlock()
	for groupAlive(lingering) {
		time.Sleep(20 * time.Millisecond)
	}
	run("exit 0")
	std.mu.Lock()
	defer std.mu.Unlock()
	if len(std.lingering) != 0 {
		t.Errorf("lingering %v after its group ended", std.lingering)
	}
}

// TestThreadEndDoesNotKill: a child started from a goroutine whose thread
// then ends (it returns locked) keeps running: Linux sends the death
// signal when the thread that forked the child ends, and that thread is
// the starter's.
func TestThreadEndDoesNotKill(t *testing.T) {
	cmd := exec.Command("sleep", "1000")
	errc := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		errc <- Start(cmd)
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("the child ended when the thread it was started from did: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	_ = cmd.Process.Kill()
	<-exited
	Release(cmd)
}

// proc is a process: its pid and its start time, as a pid can be reused.
type proc struct {
	pid   int
	start string
}

// stat returns a process's state, process group and start time from
// /proc/PID/stat.
func stat(pid int) (state byte, pgid int, start string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, "", false
	}
	i := strings.LastIndexByte(string(b), ')') // comm may hold anything
	if i < 0 {
		return 0, 0, "", false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, 0, "", false
	}
	pgid, err = strconv.Atoi(f[2])
	return f[0][0], pgid, f[19], err == nil
}

// inGroups lists the live processes of groups.
func inGroups(groups []int) []proc {
	var out []proc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, pgid, start, ok := stat(pid); ok && st != 'Z' && slices.Contains(groups, pgid) {
			out = append(out, proc{pid, start})
		}
	}
	return out
}

// alive returns the processes of ps that still run (zombies do not).
func alive(ps []proc) []proc {
	return slices.DeleteFunc(slices.Clone(ps), func(p proc) bool {
		st, _, start, ok := stat(p.pid)
		return !ok || start != p.start || st == 'Z' || st == 'X'
	})
}
