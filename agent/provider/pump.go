package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// SDKStream is what the SDKs' server-sent-event streams offer (their
// ssestream.Stream[T]).
type SDKStream[T any] interface {
	Next() bool
	Current() T
	Err() error
	Close() error
}

// Pump is the part of a Stream that both SDK adapters share: it pulls the
// SDK's events through Decode, hands out the events Decode queued (Push) in
// order, then the first failure for good, or io.EOF once Finish was called.
// Cancelling Ctx aborts the stream. Embed it and set every field.
type Pump[T any] struct {
	Name     string // the provider's, for errors
	Ctx      context.Context
	Cancel   context.CancelFunc // cancels Ctx; Close calls it
	SDK      SDKStream[T]
	MapError func(context.Context, error) error // the SDK's errors to *APIError
	// Decode turns one SDK event into queued events; an error ends the
	// stream with it.
	Decode func(T) error
	// End is called when the SDK stream ends without error before Finish:
	// it queues the last events and calls Finish, or says why an end here
	// is an error.
	End func() error

	pending []Event
	done    bool  // Finish was called
	err     error // sticky
}

// Push queues events for Next.
func (p *Pump[T]) Push(evs ...Event) { p.pending = append(p.pending, evs...) }

// Finish marks the stream complete: Next returns io.EOF after the queued
// events. It releases the SDK stream.
func (p *Pump[T]) Finish() {
	p.done = true
	_ = p.SDK.Close()
	p.Cancel()
}

// Next implements Stream.
func (p *Pump[T]) Next() (Event, error) {
	for {
		if len(p.pending) > 0 {
			ev := p.pending[0]
			p.pending = p.pending[1:]
			return ev, nil
		}
		if p.err != nil {
			return Event{}, p.err
		}
		if p.done {
			return Event{}, io.EOF
		}
		if p.Ctx.Err() != nil {
			p.fail(fmt.Errorf("%s: stream aborted: %w", p.Name, context.Cause(p.Ctx)))
			continue
		}
		if !p.SDK.Next() {
			switch {
			case p.SDK.Err() != nil:
				p.fail(p.MapError(p.Ctx, p.SDK.Err()))
			case p.Ctx.Err() != nil:
				// aborted, not ended: reported at the top of the loop
			default:
				if err := p.End(); err != nil {
					p.fail(err)
				} else if !p.done {
					p.fail(errors.New(p.Name + ": stream ended and End did not finish it"))
				}
			}
			continue
		}
		if err := p.Decode(p.SDK.Current()); err != nil {
			p.fail(err)
		}
	}
}

func (p *Pump[T]) fail(err error) {
	p.err = err
	_ = p.SDK.Close()
	p.Cancel()
}

// Close aborts the stream; safe from any goroutine, idempotent.
func (p *Pump[T]) Close() error {
	p.Cancel()
	return nil
}
