package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// ErrExhausted is wrapped by the error of a call the cassette does not
// hold, and of an approval it does not hold.
var ErrExhausted = errors.New("cassette exhausted")

// DivergenceError says where a replayed conversation went another way than
// the recorded one.
type DivergenceError struct {
	Cassette string // the cassette's name (its path for Open)
	Call     int    // 1-based model call; 0 for an approval
	Approval int    // 1-based approval, when Call is 0
	What     string // what differs: "last user message", "tools", "approval ask"
	Recorded string
	Got      string
}

func (e *DivergenceError) Error() string {
	where := fmt.Sprintf("call %d", e.Call)
	if e.Call == 0 {
		where = fmt.Sprintf("approval %d", e.Approval)
	}
	return fmt.Sprintf("replay: %s: %s diverged from the recording: the %s differs:\n  recorded: %q\n  got:      %q",
		e.Cassette, where, e.What, excerpt(e.Recorded, 300), excerpt(e.Got, 300))
}

// Player is a Provider that plays a cassette back: the n-th Stream call
// gets the n-th recorded call's events (and error), provided the request's
// digest matches the recorded one. It also answers the recorded tool
// results and approvals. All methods are safe for concurrent use; calls
// are matched in the order Stream is called.
type Player struct {
	name     string
	provider string
	model    provider.ModelInfo
	calls    []line // by call number: calls[i].Call == i+1
	results  map[string]string
	sc       *scrubber // scrubs what is compared, as recording did

	mu        sync.Mutex
	next      int // index into calls
	approvals []line
	nextAsk   int
}

var _ provider.Provider = (*Player)(nil)

// Open loads the cassette at path.
func Open(path string) (*Player, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay: open cassette: %w", err)
	}
	defer f.Close()
	return Load(f, path)
}

// Load reads a whole cassette from r; name is used in error messages.
// Every line is checked: a missing or unknown header, a line that is not
// JSON, an unknown kind, a call number out of sequence or an event of an
// unknown type is an error naming the line.
func Load(r io.Reader, name string) (*Player, error) {
	p := &Player{name: name, results: map[string]string{}, sc: newScrubber(nil, false)}
	br := bufio.NewReader(r)
	byNum := map[int]line{}
	n := 0
	for {
		raw, rerr := br.ReadBytes('\n')
		if len(bytes.TrimSpace(raw)) > 0 {
			n++
			if err := p.addLine(n, raw, byNum); err != nil {
				return nil, fmt.Errorf("replay: cassette %s line %d: %w", name, n, err)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, fmt.Errorf("replay: read cassette %s: %w", name, rerr)
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("replay: cassette %s is empty", name)
	}
	nums := make([]int, 0, len(byNum))
	for k := range byNum {
		nums = append(nums, k)
	}
	sort.Ints(nums)
	for i, k := range nums {
		if k != i+1 {
			return nil, fmt.Errorf("replay: cassette %s: call %d is missing (calls go up to %d)", name, i+1, nums[len(nums)-1])
		}
		p.calls = append(p.calls, byNum[k])
	}
	return p, nil
}

func (p *Player) addLine(n int, raw []byte, byNum map[int]line) error {
	var l line
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if n == 1 {
		if l.Kind != kindHeader {
			return fmt.Errorf("the first line is a %q line, want the header (is this a cassette?)", l.Kind)
		}
		if l.Version != Version {
			return fmt.Errorf("cassette version %d, this build reads version %d", l.Version, Version)
		}
		p.provider = l.Provider
		p.model = l.Model.info()
		return nil
	}
	switch l.Kind {
	case kindHeader:
		return errors.New("a second header")
	case kindCall:
		if l.Call < 1 {
			return fmt.Errorf("call number %d", l.Call)
		}
		if _, dup := byNum[l.Call]; dup {
			return fmt.Errorf("call %d recorded twice", l.Call)
		}
		if l.Request == nil {
			return fmt.Errorf("call %d has no request digest", l.Call)
		}
		for i, ev := range l.Events {
			if err := checkEvent(ev); err != nil {
				return fmt.Errorf("call %d event %d: %w", l.Call, i+1, err)
			}
		}
		byNum[l.Call] = l
	case kindToolResult:
		if l.ID == "" {
			return errors.New("tool_result without an id")
		}
		p.results[l.ID] = l.Text
	case kindApproval:
		p.approvals = append(p.approvals, l)
	default:
		return fmt.Errorf("unknown line kind %q", l.Kind)
	}
	return nil
}

func checkEvent(ev provider.Event) error {
	switch ev.Type {
	case provider.EventText, provider.EventReasoning:
	case provider.EventToolCall:
		if ev.ToolCall == nil || ev.ToolCall.ID == "" || ev.ToolCall.Name == "" {
			return errors.New("tool_call without id or name")
		}
		if !json.Valid(ev.ToolCall.Input) {
			return errors.New("tool_call input is not JSON")
		}
	case provider.EventUsage:
		if ev.Usage == nil {
			return errors.New("usage event without usage")
		}
	case provider.EventDone:
	default:
		return fmt.Errorf("unknown event type %q", ev.Type)
	}
	return nil
}

// Name returns "replay".
func (p *Player) Name() string { return "replay" }

// Model returns the recorded model's info (so costs replay too).
func (p *Player) Model() provider.ModelInfo { return p.model }

// RecordedProvider returns the name of the provider the cassette was
// recorded from.
func (p *Player) RecordedProvider() string { return p.provider }

// Calls returns the number of recorded model calls.
func (p *Player) Calls() int { return len(p.calls) }

// Remaining returns the number of recorded calls not played yet.
func (p *Player) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls) - p.next
}

// ToolResult returns the recorded result of tool call id.
func (p *Player) ToolResult(id string) (string, bool) {
	t, ok := p.results[id]
	return t, ok
}

// NextApproval returns the answer recorded for the next approval, checking
// that it was asked the same question (scrubbed as when recorded).
func (p *Player) NextApproval(ask string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nextAsk >= len(p.approvals) {
		return "", fmt.Errorf("replay: %s: approval %d asked (%q) but the cassette holds %d: %w",
			p.name, p.nextAsk+1, excerpt(ask, 200), len(p.approvals), ErrExhausted)
	}
	a := p.approvals[p.nextAsk]
	if got := p.sc.scrub(ask); got != a.Ask {
		return "", &DivergenceError{Cassette: p.name, Approval: p.nextAsk + 1, What: "approval ask", Recorded: a.Ask, Got: got}
	}
	p.nextAsk++
	return a.Answer, nil
}

// Stream plays the next recorded call. It fails, without moving on, when
// the request's digest differs from the recorded one (*DivergenceError) or
// the cassette holds no more calls (ErrExhausted).
func (p *Player) Stream(ctx context.Context, req provider.Request) (provider.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	got := digest(req, p.sc)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= len(p.calls) {
		return nil, fmt.Errorf("replay: %s: call %d requested (last user message %q) but the cassette holds %d calls: %w",
			p.name, p.next+1, excerpt(got.Last, 200), len(p.calls), ErrExhausted)
	}
	rec := p.calls[p.next]
	want := rec.Request
	if got.LastSHA256 != want.LastSHA256 {
		return nil, &DivergenceError{Cassette: p.name, Call: rec.Call, What: "last user message", Recorded: want.Last, Got: got.Last}
	}
	if !equalStrings(got.Tools, want.Tools) {
		return nil, &DivergenceError{Cassette: p.name, Call: rec.Call, What: "tools", Recorded: fmt.Sprint(want.Tools), Got: fmt.Sprint(got.Tools)}
	}
	p.next++
	if rec.Error != nil && rec.Error.AtStart {
		return nil, rec.Error.err(rec.Call)
	}
	return &playStream{ctx: ctx, rec: rec}, nil
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// playStream plays one recorded call.
type playStream struct {
	ctx    context.Context
	rec    line
	i      int
	closed atomic.Bool
}

func (s *playStream) Next() (provider.Event, error) {
	if s.closed.Load() {
		return provider.Event{}, fmt.Errorf("replay: stream closed: %w", context.Canceled)
	}
	if err := s.ctx.Err(); err != nil {
		return provider.Event{}, fmt.Errorf("replay: %w", err)
	}
	if s.i < len(s.rec.Events) {
		ev := s.rec.Events[s.i]
		s.i++
		if ev.ToolCall != nil {
			tc := *ev.ToolCall
			tc.Input = append(json.RawMessage(nil), tc.Input...)
			ev.ToolCall = &tc
		}
		if ev.Usage != nil {
			u := *ev.Usage
			ev.Usage = &u
		}
		return ev, nil
	}
	if s.rec.Error != nil {
		return provider.Event{}, s.rec.Error.err(s.rec.Call)
	}
	if n := len(s.rec.Events); n == 0 || s.rec.Events[n-1].Type != provider.EventDone {
		return provider.Event{}, fmt.Errorf("replay: call %d: the recording ends without a done event", s.rec.Call)
	}
	return provider.Event{}, io.EOF
}

// Close ends the stream; safe from any goroutine, idempotent.
func (s *playStream) Close() error {
	s.closed.Store(true)
	return nil
}
