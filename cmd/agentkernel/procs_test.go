package main

import (
	"runtime"
	"testing"
)

// TestProcsLend: loans of a processor beside the kernel's raise GOMAXPROCS
// by one while any is out, however many overlap, and set it back when the
// last is returned; a release called twice counts once.
func TestProcsLend(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: nothing to lend")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(1)
	p := &procs{base: 1}
	a, b := p.lend(), p.lend()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Fatalf("two loans: GOMAXPROCS %d, want 2", got)
	}
	a()
	a()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Fatalf("one loan left: GOMAXPROCS %d, want 2", got)
	}
	b()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("all returned: GOMAXPROCS %d, want 1", got)
	}
	// GOMAXPROCS set by the user is not touched.
	fixed := &procs{fixed: true}
	fixed.lend()()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("a fixed GOMAXPROCS changed to %d", got)
	}
}
