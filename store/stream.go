package store

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentkernel/agentkernel/messages"
)

type streamKey struct {
	session string
	ts      int64
}

type pendingUpdate struct {
	msg messages.UIMessage
	due time.Time
}

// streamer holds the newest version of each streaming UI message and writes
// it at most Options.Debounce after it first became dirty (a trailing-edge
// throttle: a long stream is still written every interval, so a crash loses
// at most one interval of text). Every update of a streaming message only
// replaces the version held here (a model's chunk costs no write); what is
// due is written in one transaction per session. sem serialises every
// write of a streamed row, so a debounced partial version can never land
// after the final one.
type streamer struct {
	s    *Store
	wake chan struct{} // capacity 1: "the earliest due time may have changed"
	sem  chan struct{} // capacity 1: held while streamed rows are written

	mu      sync.Mutex
	pending map[streamKey]pendingUpdate
	err     error // first background write error since the last flush

	// rows counts the versions of streamed messages written (partial
	// and final), for the tests of the coalescing.
	rows atomic.Int64
}

func newStreamer(s *Store) *streamer {
	return &streamer{
		s:       s,
		wake:    make(chan struct{}, 1),
		sem:     make(chan struct{}, 1),
		pending: map[streamKey]pendingUpdate{},
	}
}

func (st *streamer) lock(ctx context.Context) error {
	select {
	case st.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (st *streamer) unlock() { <-st.sem }

// set records msg as the newest version of its row.
func (st *streamer) set(session string, msg messages.UIMessage) {
	k := streamKey{session, msg.TS}
	st.mu.Lock()
	p, ok := st.pending[k]
	if !ok {
		p.due = time.Now().Add(st.s.opts.Debounce)
	}
	p.msg = msg
	st.pending[k] = p
	st.mu.Unlock()
	if !ok {
		select {
		case st.wake <- struct{}{}:
		default:
		}
	}
}

// take removes and returns the pending updates selected by keep, grouped
// by session.
func (st *streamer) take(keep func(streamKey, pendingUpdate) bool) map[string][]messages.UIMessage {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := map[string][]messages.UIMessage{}
	for k, p := range st.pending {
		if keep(k, p) {
			out[k.session] = append(out[k.session], p.msg)
			delete(st.pending, k)
		}
	}
	return out
}

// forget drops the pending updates of a session (it is being purged).
func (st *streamer) forget(session string) {
	st.take(func(k streamKey, _ pendingUpdate) bool { return k.session == session })
}

// run is the background writer; it returns when done is closed.
func (st *streamer) run(done <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		st.mu.Lock()
		var next time.Time
		for _, p := range st.pending {
			if next.IsZero() || p.due.Before(next) {
				next = p.due
			}
		}
		st.mu.Unlock()
		wait := time.Hour
		if !next.IsZero() {
			wait = max(time.Until(next), 0)
		}
		timer.Reset(wait)
		select {
		case <-done:
			return
		case <-st.wake:
			// Recompute the earliest due time; Reset (Go ≥1.23) drops any
			// stale tick, so no drain is needed.
		case <-timer.C:
			now := time.Now()
			err := st.write(context.Background(), func(_ streamKey, p pendingUpdate) bool { return !p.due.After(now) })
			if err != nil {
				st.s.log.Error("debounced write failed", "error", err)
				st.mu.Lock()
				if st.err == nil {
					st.err = err
				}
				st.mu.Unlock()
			}
		}
	}
}

// write takes the selected pending updates and writes them, one transaction
// per session. A row that no longer exists (its session was rewound or
// purged meanwhile) is skipped.
func (st *streamer) write(ctx context.Context, sel func(streamKey, pendingUpdate) bool) error {
	if err := st.lock(ctx); err != nil {
		return st.s.wrap("write streamed messages", err)
	}
	defer st.unlock()
	var errs []error
	for session, msgs := range st.take(sel) {
		errs = append(errs, st.writeSession(ctx, session, msgs))
	}
	return errors.Join(errs...)
}

// writeSession writes msgs, versions of streamed rows of session, in one
// transaction; when a row is gone, the others one by one. The caller holds
// sem.
func (st *streamer) writeSession(ctx context.Context, session string, msgs []messages.UIMessage) error {
	err := st.writeRows(ctx, session, msgs)
	if !errors.Is(err, ErrNotFound) || len(msgs) == 1 {
		if errors.Is(err, ErrNotFound) {
			st.s.log.Debug("streamed message gone before its write", "session", session, "ts", msgs[0].TS)
			return nil
		}
		return err
	}
	var errs []error
	for _, m := range msgs {
		errs = append(errs, st.writeSession(ctx, session, []messages.UIMessage{m}))
	}
	return errors.Join(errs...)
}

// writeRows writes msgs in one transaction and counts them.
func (st *streamer) writeRows(ctx context.Context, session string, msgs []messages.UIMessage) error {
	err := st.s.writeTx(ctx, "update ui "+session, func(tx *sql.Tx) error {
		return updateUIRows(ctx, tx, session, msgs, st.s.nowMS())
	})
	if err == nil {
		st.rows.Add(int64(len(msgs)))
	}
	return err
}

// flush writes everything pending and returns (and clears) the first
// background error as well.
func (st *streamer) flush(ctx context.Context) error {
	err := st.write(ctx, func(streamKey, pendingUpdate) bool { return true })
	st.mu.Lock()
	bg := st.err
	st.err = nil
	st.mu.Unlock()
	return errors.Join(bg, err)
}

// flushSessionLocked writes the pending updates of one session while the caller
// holds sem (ApplyRewind, Export).
func (st *streamer) flushSessionLocked(ctx context.Context, session string) error {
	for _, msgs := range st.take(func(k streamKey, _ pendingUpdate) bool { return k.session == session }) {
		if err := st.writeSession(ctx, session, msgs); err != nil {
			return err
		}
	}
	return nil
}

// writeFinal commits the complete version of a streamed message, replacing
// any pending partial version.
func (st *streamer) writeFinal(ctx context.Context, session string, msg messages.UIMessage) error {
	if err := st.lock(ctx); err != nil {
		return st.s.wrap("update ui "+session, err)
	}
	defer st.unlock()
	st.take(func(k streamKey, _ pendingUpdate) bool { return k.session == session && k.ts == msg.TS })
	return st.writeRows(ctx, session, []messages.UIMessage{msg})
}
