package client

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// script is a prober that returns its looks in turn, the last one again
// and again.
type script struct {
	mu    sync.Mutex
	looks []look
}

func (s *script) probe(*wire.ConnectionInfo, int) (look, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.looks[0]
	if len(s.looks) > 1 {
		s.looks = s.looks[1:]
	}
	return l, nil
}

func boundOf(chs ...wire.Channel) map[wire.Channel]bool {
	m := map[wire.Channel]bool{}
	for _, ch := range chs {
		m[ch] = true
	}
	return m
}

// TestWatchBinding: the rules that tell a kernel that cannot bind its ports
// from one that is slow, on scripted looks.
func TestWatchBinding(t *testing.T) {
	nothing := look{}
	zmq := look{binding: true}
	three := look{bound: boundOf(wire.Shell, wire.Stdin, wire.Control)}
	all := look{bound: boundOf(wire.Channels()...)}
	iopubHeld := func(ino uint64, bound ...wire.Channel) look {
		return look{bound: boundOf(bound...), holders: map[wire.Channel]uint64{wire.IOPub: ino}}
	}
	for _, tc := range []struct {
		name  string
		looks []look
		want  string // in the error; "" for no failure
	}{
		{"nothing bound yet (a slow import)", []look{nothing}, ""},
		{"all bound, not answering yet (slow but alive)", []look{three, all}, ""},
		{"held while binding", []look{iopubHeld(7, wire.Shell), iopubHeld(7, wire.Shell)},
			"held by another process: iopub (tcp://127.0.0.1:2); not bound after"},
		{"held, then the kernel binds it", []look{iopubHeld(7), iopubHeld(7), all}, ""},
		{"held a moment, then a slow import", []look{iopubHeld(7), nothing}, ""},
		{"held long, the kernel not binding yet", []look{iopubHeld(7)}, "held by another process: iopub"},
		{"another socket each time (opening or closing)", []look{iopubHeld(7, wire.Shell), iopubHeld(8, wire.Shell), all}, ""},
		{"part bound, the rest never", []look{three}, "not bound after"},
		{"ZeroMQ runs, nothing bound (ipykernel after a failed bind)", []look{zmq}, "not bound after"},
		{"ZeroMQ runs, binding is quick", []look{zmq, all}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &script{looks: tc.looks}
			conn := &wire.ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", ShellPort: 1, IOPubPort: 2, StdinPort: 3, ControlPort: 4, HBPort: 5}
			// Long enough for the scripted looks, short for the test.
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			var got error
			watchBinding(ctx, conn, 1, s.probe, time.Second, func(err error) { got = err })
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("failed: %v", got)
			case tc.want != "" && (got == nil || !errors.Is(got, ErrBind) || !strings.Contains(got.Error(), tc.want)):
				t.Fatalf("got %v, want ErrBind saying %q", got, tc.want)
			}
		})
	}
}
