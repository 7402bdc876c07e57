package kernel

import (
	"os/exec"
	"testing"
	"time"
)

func noPidfd(int) (func() bool, func(), bool) { return nil, nil, false }

func TestParentWatcher(t *testing.T) {
	// Polling sees a process that is not our parent go only once it is
	// reaped (a zombie answers kill(pid, 0)); our own parent it sees by
	// being reparented. A pidfd sees the exit itself.
	for _, tt := range []struct {
		name   string
		waiter func(int) (func() bool, func(), bool)
		reap   []bool
	}{
		{"pidfd", pidWaiter, []bool{true, false}},
		{"polling", noPidfd, []bool{true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, reap := range tt.reap {
				cmd := exec.Command("sleep", "60")
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				w := watch(cmd.Process.Pid, tt.waiter)
				select {
				case <-w.Gone():
					t.Fatal("Gone closed while the process runs")
				case <-time.After(50 * time.Millisecond):
				}
				cmd.Process.Kill()
				if reap {
					cmd.Wait()
				}
				select {
				case <-w.Gone():
				case <-time.After(10 * time.Second):
					t.Fatalf("Gone not closed after the process was killed (reaped: %v)", reap)
				}
				w.Close()
				if !reap {
					cmd.Wait()
				}
			}
		})
	}
}

func TestParentWatcherCloseStops(t *testing.T) {
	for _, waiter := range []func(int) (func() bool, func(), bool){pidWaiter, noPidfd} {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w := watch(cmd.Process.Pid, waiter)
		w.Close()
		w.Close() // idempotent
		select {
		case <-w.Gone():
			t.Fatal("Gone closed by Close")
		default:
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
}

func TestParentPID(t *testing.T) {
	for _, tt := range []struct {
		env  string
		want int
	}{{"", 0}, {"1", 0}, {"x", 0}, {"-4", 0}, {"4242", 4242}} {
		t.Setenv("JPY_PARENT_PID", tt.env)
		if got := ParentPID(); got != tt.want {
			t.Errorf("JPY_PARENT_PID=%q: ParentPID() = %d, want %d", tt.env, got, tt.want)
		}
	}
}
