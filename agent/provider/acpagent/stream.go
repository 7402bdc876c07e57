package acpagent

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// This file: a turn's stream of events, as the task loop reads it.

// stream is one turn's events, queued without bound (the agent's
// notifications must never wait on the task, which may be waiting for
// the user), and read by the task loop.
type stream struct {
	mu     sync.Mutex
	cond   *sync.Cond
	queue  []provider.Event
	err    error // after the queue: io.EOF or the turn's error
	ended  bool
	closed bool
	done   chan struct{}
	calls  map[string]*provider.Activity
}

func (s *stream) push(e provider.Event) {
	s.mu.Lock()
	if !s.ended && !s.closed {
		s.queue = append(s.queue, e)
		s.cond.Signal()
	}
	s.mu.Unlock()
}

// end ends the stream after what is queued, with err (nil: io.EOF).
func (s *stream) end(err error) {
	if err == nil {
		err = io.EOF
	}
	s.mu.Lock()
	if !s.ended {
		s.ended, s.err = true, err
		close(s.done)
		s.cond.Broadcast()
	}
	s.mu.Unlock()
}

// Next implements provider.Stream.
func (s *stream) Next() (provider.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) == 0 && !s.ended && !s.closed {
		s.cond.Wait()
	}
	if len(s.queue) > 0 && !s.closed {
		e := s.queue[0]
		s.queue = s.queue[1:]
		return e, nil
	}
	if s.closed {
		return provider.Event{}, context.Canceled
	}
	return provider.Event{}, s.err
}

// Close implements provider.Stream. The turn itself ends when the agent
// answers the cancel that the turn's context sent.
func (s *stream) Close() error {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	return nil
}

// activity merges an update of the tool call id into what is known of it.
func (s *stream) activity(id, title, kind string, input any, status string, content []sdk.ToolCallContent) provider.Activity {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[string]*provider.Activity{}
	}
	a := s.calls[id]
	if a == nil {
		a = &provider.Activity{ID: id}
		s.calls[id] = a
	}
	if title != "" {
		a.Title = title
	}
	if kind != "" {
		a.Kind = kind
	}
	if input != nil {
		if b, err := json.Marshal(input); err == nil && string(b) != "null" && string(b) != "{}" {
			a.Input = b
		}
	}
	if status != "" {
		a.Status = status
	}
	if t := contentText(content); t != "" {
		a.Output = t
	}
	if a.Title == "" {
		a.Title = "tool call"
	}
	return *a
}

// contentText is the text of a tool call's content.
func contentText(cs []sdk.ToolCallContent) string {
	var parts []string
	for _, c := range cs {
		switch {
		case c.Content != nil && c.Content.Content.Text != nil:
			parts = append(parts, c.Content.Content.Text.Text)
		case c.Diff != nil:
			parts = append(parts, "edited "+c.Diff.Path)
		}
	}
	return strings.Join(parts, "\n")
}
