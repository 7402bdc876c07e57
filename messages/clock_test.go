package messages

import (
	"sync"
	"testing"
	"time"
)

func TestClockUniqueUnderConcurrency(t *testing.T) {
	frozen := time.UnixMilli(1_700_000_000_000)
	c := NewClock(func() time.Time { return frozen }) // every call in the same millisecond
	const workers, per = 8, 5000
	results := make([][]int64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				results[w] = append(results[w], c.Next())
			}
		}()
	}
	wg.Wait()
	seen := make(map[int64]bool, workers*per)
	for w, rs := range results {
		for i, ts := range rs {
			if seen[ts] {
				t.Fatalf("ts %d handed out twice", ts)
			}
			seen[ts] = true
			if i > 0 && ts <= rs[i-1] {
				t.Fatalf("worker %d: %d after %d", w, ts, rs[i-1])
			}
		}
	}
	if got, want := c.Last(), frozen.UnixMilli()+workers*per-1; got != want {
		t.Fatalf("Last = %d, want %d (no gaps)", got, want)
	}
}

func TestClockRealTime(t *testing.T) {
	var c Clock // zero value reads time.Now
	before := time.Now().UnixMilli()
	a, b := c.Next(), c.Next()
	if a < before || b <= a {
		t.Fatalf("Next = %d, %d (before %d)", a, b, before)
	}
}

func TestClockObserveAndBackwards(t *testing.T) {
	now := time.UnixMilli(1000)
	c := NewClock(func() time.Time { return now })
	if got := c.Next(); got != 1000 {
		t.Fatalf("Next = %d", got)
	}
	c.Observe(5000) // a loaded history from the "future"
	c.Observe(10)   // ignored
	if got := c.Next(); got != 5001 {
		t.Fatalf("after Observe(5000): Next = %d", got)
	}
	now = time.UnixMilli(900) // wall clock steps back
	if got := c.Next(); got != 5002 {
		t.Fatalf("after step back: Next = %d", got)
	}
	now = time.UnixMilli(9000)
	if got := c.Next(); got != 9000 {
		t.Fatalf("after step forward: Next = %d", got)
	}
	c.ObserveHistory([]UIMessage{{TS: 9500}}, []APIMessage{{TS: 12000}, {}})
	if got := c.Next(); got != 12001 {
		t.Fatalf("after ObserveHistory: Next = %d", got)
	}
}
