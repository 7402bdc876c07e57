package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// SDKStream is what the SDKs' server-sent-event streams offer (their
// ssestream.Stream[T]), and Events.
type SDKStream[T any] interface {
	Next() bool
	Current() T
	Err() error
	Close() error
}

// Decoder is what the SDKs' SSE decoders offer (their ssestream.Decoder):
// the raw events of a response body, one at a time.
type Decoder[E any] interface {
	Next() bool
	Event() E
	Err() error
	Close() error
}

// Events is an SDK's SSE decoder as a Pump's source: a provider decodes
// each raw event itself, or hands it to the SDK's decoding (Replay).
type Events[E any] struct{ Decoder Decoder[E] }

// Next, Current, Err and Close implement SDKStream.
func (e Events[E]) Next() bool   { return e.Decoder.Next() }
func (e Events[E]) Current() E   { return e.Decoder.Event() }
func (e Events[E]) Err() error   { return e.Decoder.Err() }
func (e Events[E]) Close() error { return e.Decoder.Close() }

// Replay returns a response like resp (its status, header and request)
// whose body holds one server-sent event: typ and data as an SDK's decoder
// handed them out (each data line ended by a newline). An SDK's stream over
// it decodes that event as it would have in place, errors included. Lines
// end in CRLF: the SDKs' line scanner drops one CR before the LF, so a line
// that ends in a CR of its own keeps it.
func Replay(resp *http.Response, typ string, data []byte) *http.Response {
	var b bytes.Buffer
	b.Grow(len(typ) + len(data) + 32)
	if typ != "" {
		b.WriteString("event: ")
		b.WriteString(typ)
		b.WriteString("\r\n")
	}
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		b.WriteString("data: ")
		b.Write(line)
		b.WriteString("\r\n")
		data = rest
	}
	b.WriteString("\r\n")
	return &http.Response{Status: resp.Status, StatusCode: resp.StatusCode, Proto: resp.Proto,
		ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor, Header: resp.Header, Request: resp.Request,
		Body: io.NopCloser(&b), ContentLength: int64(b.Len())}
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

	pending []Event // queued; Next hands out pending[head:]
	head    int
	done    bool  // Finish was called
	err     error // sticky
}

// Push queues events for Next.
func (p *Pump[T]) Push(evs ...Event) {
	if p.head == len(p.pending) {
		// Drained: reuse the array instead of growing a new one per event.
		p.pending, p.head = p.pending[:0], 0
	}
	p.pending = append(p.pending, evs...)
}

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
		if p.head < len(p.pending) {
			ev := p.pending[p.head]
			p.pending[p.head] = Event{} // let go of its text
			p.head++
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
