package agent

import (
	"slices"
	"sync"
	"testing"
)

// TestListeners: listeners are called in registration order; a removed
// one is not called again, also when it removes itself during an Emit;
// Add, remove and Emit may run at once (go test -race).
func TestListeners(t *testing.T) {
	var l Listeners
	l.Emit(Event{Kind: EventTaskStarted}) // none yet
	var got []string
	rec := func(name string) func(Event) { return func(Event) { got = append(got, name) } }
	removeA := l.Add(rec("a"))
	var removeB func()
	removeB = l.Add(func(e Event) {
		got = append(got, "b")
		removeB() // removes itself while Emit runs
	})
	removeC := l.Add(rec("c"))
	l.Emit(Event{})
	l.Emit(Event{})
	removeA()
	removeA() // twice is harmless
	l.Emit(Event{})
	if want := []string{"a", "b", "c", "a", "c", "c"}; !slices.Equal(got, want) {
		t.Fatalf("calls %q, want %q", got, want)
	}

	removeC()
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	l.Add(func(Event) { mu.Lock(); n++; mu.Unlock() })
	for range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 200 {
				rm := l.Add(func(Event) { mu.Lock(); n++; mu.Unlock() })
				rm()
			}
		}()
		go func() {
			defer wg.Done()
			for range 200 {
				l.Emit(Event{Kind: EventMessageUpdated})
			}
		}()
	}
	wg.Wait()
	if len(l.current()) != 1 || n < 4*200 {
		t.Fatalf("%d listeners left, want 1; %d calls, want at least 800", len(l.current()), n)
	}
}
