package backing

import (
	"context"
	"fmt"
	"net"
	"sync"
)

// starter is the lifecycle every Runner shares: a kernel is started on
// first use (or at start), one start at a time, and handed out while it
// lives; one that died is replaced at the next use; a failed start is
// tried again at the next use; an interrupt ends the waits for a start.
// K is the runner's handle of a kernel; its zero value means none.
type starter[K comparable] struct {
	launch func() (K, error) // starts one kernel
	alive  func(K) bool      // reports whether a kernel still runs
	// discard shuts down a kernel that a start finished after close.
	discard func(K)
	wg      *sync.WaitGroup // the runner's: start goroutines join it

	mu          sync.Mutex // never held across a start
	k           K
	ch          chan struct{} // non-nil while a start runs; closed at its end
	err         error         // of the last start
	interrupted chan struct{} // closed by interrupt while a start runs; then replaced
	waiting     int           // callers waiting for a start
	closed      bool
	gen         int // kernels run so far: see Generations
}

func newStarter[K comparable](wg *sync.WaitGroup, launch func() (K, error), alive func(K) bool, discard func(K)) *starter[K] {
	return &starter[K]{launch: launch, alive: alive, discard: discard, wg: wg, interrupted: make(chan struct{})}
}

// start begins a start in the background unless a kernel runs or starts.
func (s *starter[K]) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero K
	if !s.closed && (s.k == zero || !s.alive(s.k)) {
		s.beginLocked()
	}
}

func (s *starter[K]) beginLocked() chan struct{} {
	if s.ch != nil {
		return s.ch
	}
	done := make(chan struct{})
	s.ch = done
	s.wg.Add(1)
	go func() { // owned by the runner's wg
		defer s.wg.Done()
		k, err := s.launch()
		s.mu.Lock()
		closed := s.closed
		if !closed {
			s.k, s.err = k, err
			if err == nil {
				s.gen++
			}
		}
		s.ch = nil
		s.mu.Unlock()
		var zero K
		if closed && k != zero {
			s.discard(k)
		}
		close(done)
	}()
	return done
}

// get returns a live kernel, starting one if none runs.
func (s *starter[K]) get(ctx context.Context) (K, error) {
	var zero K
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return zero, fmt.Errorf("backing: %w", net.ErrClosed)
		}
		if s.k != zero {
			if s.alive(s.k) {
				k := s.k
				s.mu.Unlock()
				return k, nil
			}
			s.k = zero // dead: start another below
		}
		wait := s.ch
		if wait == nil {
			s.err = nil // the last start failed: try again for this request
			wait = s.beginLocked()
		}
		intr := s.interrupted
		s.waiting++
		s.mu.Unlock()
		var werr error
		select {
		case <-wait:
		case <-intr:
			werr = ErrInterrupted
		case <-ctx.Done():
			werr = ctx.Err()
		}
		s.mu.Lock()
		s.waiting--
		k, err := s.k, s.err
		s.mu.Unlock()
		switch {
		case werr != nil:
			return zero, werr
		case err != nil:
			return zero, err
		case k != zero:
			return k, nil
		}
	}
}

// current returns the running kernel, if any.
func (s *starter[K]) current() (K, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero K
	return s.k, s.k != zero && s.alive(s.k)
}

// interrupt ends the waits for a running start and returns the kernel to
// interrupt, if one runs.
func (s *starter[K]) interrupt() (K, bool) {
	s.mu.Lock()
	if s.ch != nil {
		close(s.interrupted)
		s.interrupted = make(chan struct{})
	}
	s.mu.Unlock()
	return s.current()
}

// replace makes k the kernel and returns the one it replaces (zero if
// none). After close it returns k itself, for the caller to shut down.
func (s *starter[K]) replace(k K) (old K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return k
	}
	old, s.k, s.err = s.k, k, nil
	s.gen++
	return old
}

// restarted counts a kernel restarted in place (its state is gone).
func (s *starter[K]) restarted() {
	s.mu.Lock()
	s.gen++
	s.mu.Unlock()
}

// generation is how many kernels have run: see Generations.
func (s *starter[K]) generation() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// drop forgets k if it is the kernel (it died).
func (s *starter[K]) drop(k K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero K
	if s.k == k {
		s.k = zero
	}
}

// starting returns the channel of a start under way, or nil.
func (s *starter[K]) starting() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

// waiters returns how many callers wait for a start.
func (s *starter[K]) waiters() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

// close marks the starter closed and returns the kernel to shut down; ok
// is false when it was closed already.
func (s *starter[K]) close() (k K, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return k, false
	}
	s.closed = true
	k = s.k
	var zero K
	s.k = zero
	return k, true
}
