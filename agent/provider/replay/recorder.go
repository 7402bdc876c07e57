package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// RecorderOptions configures a Recorder. The zero value works.
type RecorderOptions struct {
	// Secrets are scrubbed wherever they appear (pass the configured API
	// keys). Strings shorter than 8 bytes are ignored.
	Secrets []string
	// NoEnvSecrets turns off scrubbing the values of environment
	// variables named *_API_KEY, *_TOKEN, *_SECRET and *_PASSWORD.
	NoEnvSecrets bool
	// Now stamps the header; default time.Now.
	Now func() time.Time
}

// Recorder is a Provider that passes calls to another Provider and writes
// each call — the request digest and the normalised events, or how it
// failed — to a cassette, scrubbed of secrets. The task loop adds tool
// results and approval answers with RecordToolResult and RecordApproval.
//
// All methods are safe for concurrent use. Each line is written with one
// Write as soon as it is complete (a call when its stream ends or is
// closed), so a crash loses at most the calls still streaming. Close is
// idempotent; lines completed after Close are dropped.
type Recorder struct {
	inner provider.Provider
	sc    *scrubber

	mu     sync.Mutex // guards w, calls, closed, err
	w      io.Writer
	closer io.Closer // the file opened by Create, or nil
	calls  int
	closed bool
	err    error // the first write error
}

var _ provider.Provider = (*Recorder)(nil)

// NewRecorder records the calls of p to w, starting with the header line.
// w is not closed by Close.
func NewRecorder(p provider.Provider, w io.Writer, opts *RecorderOptions) (*Recorder, error) {
	var o RecorderOptions
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &Recorder{inner: p, w: w, sc: newScrubber(o.Secrets, o.NoEnvSecrets)}
	info := p.Model()
	info.ID = r.sc.scrub(info.ID)
	hdr := line{Kind: kindHeader, Version: Version, Provider: p.Name(), Model: toModelJSON(info),
		Created: o.Now().UTC().Format(time.RFC3339)}
	if err := r.write(hdr); err != nil {
		return nil, err
	}
	return r, nil
}

// Create records the calls of p to a new cassette file at path (mode 0600,
// truncated if it exists). Close closes the file.
func Create(path string, p provider.Provider, opts *RecorderOptions) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("replay: create cassette: %w", err)
	}
	r, err := NewRecorder(p, f, opts)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// Name returns the recorded provider's name.
func (r *Recorder) Name() string { return r.inner.Name() }

// Model returns the recorded provider's model info.
func (r *Recorder) Model() provider.ModelInfo { return r.inner.Model() }

// Stream starts a call on the recorded provider and records it.
func (r *Recorder) Stream(ctx context.Context, req provider.Request) (provider.Stream, error) {
	r.mu.Lock()
	r.calls++
	n := r.calls
	r.mu.Unlock()
	d := digest(req, r.sc)
	s, err := r.inner.Stream(ctx, req)
	if err != nil {
		aborted := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
		_ = r.write(line{Kind: kindCall, Call: n, Request: &d, Error: r.sc.errorJSON(err, true, aborted)})
		return nil, err
	}
	return &recStream{r: r, inner: s, n: n, digest: d}, nil
}

// RecordToolResult records the result the task loop gave the model for
// tool call id.
func (r *Recorder) RecordToolResult(id, text string) error {
	return r.write(line{Kind: kindToolResult, ID: id, Text: r.sc.scrub(text)})
}

// RecordApproval records the answer given to an approval ask.
func (r *Recorder) RecordApproval(ask, answer string) error {
	return r.write(line{Kind: kindApproval, Ask: r.sc.scrub(ask), Answer: r.sc.scrub(answer)})
}

// Err returns the first error writing the cassette, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Close stops recording and closes the file opened by Create. A second
// call returns net.ErrClosed.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return net.ErrClosed
	}
	r.closed = true
	if r.closer != nil {
		if err := r.closer.Close(); err != nil && r.err == nil {
			r.err = fmt.Errorf("replay: close cassette: %w", err)
		}
	}
	return r.err
}

func (r *Recorder) write(l line) error {
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("replay: encode cassette line: %w", err)
	}
	b = append(b, '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("replay: record after Close: %w", net.ErrClosed)
	}
	if r.err != nil {
		return r.err
	}
	if _, err := r.w.Write(b); err != nil {
		r.err = fmt.Errorf("replay: write cassette: %w", err)
		return r.err
	}
	return nil
}

// recStream passes a stream's events on and records them when it ends.
type recStream struct {
	r      *Recorder
	inner  provider.Stream
	n      int
	digest Digest

	mu       sync.Mutex // guards events, finished (Close may come from another goroutine)
	events   []provider.Event
	finished bool
}

func (s *recStream) Next() (provider.Event, error) {
	ev, err := s.inner.Next()
	switch {
	case err == nil:
		s.mu.Lock()
		if !s.finished {
			s.events = append(s.events, s.r.sc.event(ev))
		}
		s.mu.Unlock()
		if ev.Type == provider.EventDone {
			// The turn is complete: a caller may Close without reading
			// io.EOF, and that is not an abort.
			s.finish(nil, false)
		}
	case err == io.EOF:
		s.finish(nil, false)
	default:
		s.finish(err, errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
	}
	return ev, err
}

func (s *recStream) Close() error {
	err := s.inner.Close()
	s.finish(errors.New("stream closed"), true)
	return err
}

// finish writes the call's line once.
func (s *recStream) finish(err error, aborted bool) {
	s.mu.Lock()
	if s.finished {
		s.mu.Unlock()
		return
	}
	s.finished = true
	l := line{Kind: kindCall, Call: s.n, Request: &s.digest, Events: s.events}
	s.mu.Unlock()
	if err != nil {
		l.Error = s.r.sc.errorJSON(err, false, aborted)
	}
	_ = s.r.write(l) // kept in r.err, reported by Err and Close
}
