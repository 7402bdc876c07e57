package client

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// ErrBind is wrapped by the error of a start whose kernel could not bind
// its ports: another process held one of them, or the kernel bound some
// and not the rest within Options.BindTimeout (ipykernel, its iopub port
// taken, hangs instead of exiting). Start tries again with fresh ports.
// Test with errors.Is.
var ErrBind = errors.New("client: kernel could not bind its ports")

// bindPoll is how often a start looks at the kernel's ports.
const bindPoll = 100 * time.Millisecond

// look is what a prober saw of a starting kernel's ports.
type look struct {
	bound   map[wire.Channel]bool   // the kernel's process group listens there
	holders map[wire.Channel]uint64 // another process listens there: its socket's inode
	// binding: the kernel runs ZeroMQ (libzmq's I/O threads): it is past
	// its start-up and binds its sockets now, or has failed to.
	binding bool
}

// prober looks at the ports of conn for the kernel whose process group is
// pgid; nil when this system cannot tell.
type prober func(conn *wire.ConnectionInfo, pgid int) (look, error)

// proberFor returns the prober of conn's transport: ipc sockets are files
// in the kernel's private directory (nobody else can bind them); who
// listens on a tcp port the system tells, when it does (tcpProber).
func proberFor(conn *wire.ConnectionInfo) prober {
	if conn.Transport == TransportIPC {
		return probeIPC
	}
	return tcpProber()
}

func probeIPC(conn *wire.ConnectionInfo, pgid int) (look, error) {
	l := look{bound: map[wire.Channel]bool{}, binding: runsZMQ(pgid)}
	for _, ch := range wire.Channels() {
		fi, err := os.Lstat(conn.IPCPath(conn.Port(ch)))
		switch {
		case err == nil && fi.Mode().Type() == fs.ModeSocket:
			l.bound[ch] = true
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return look{}, err
		}
	}
	return l, nil
}

// watchBinding follows the ports of a starting kernel (process group pgid)
// until all five are bound by it or ctx ends, and calls fail (once) with
// an error wrapping ErrBind when it sees that the kernel cannot bind them:
//
//   - a port held by another process (the same socket at two looks in a
//     row: not one the kernel is opening or closing) once the kernel binds
//     (it has bound one of its ports, or runs ZeroMQ);
//   - a port not bound by the kernel timeout after it began to bind (it
//     bound its first port or started ZeroMQ), or after another process
//     was first seen holding one (at two looks: a probe for a free port
//     holds one for a moment): a kernel binds its sockets together, so a
//     missing one failed. ipykernel whose bind failed closes the others
//     and hangs with ZeroMQ running and nothing bound.
//
// A kernel that has not begun to bind is left alone (a cold start of a
// Python kernel imports for seconds first), and so is one that has bound
// all five and does not answer yet: it is alive, and Options.StartTimeout
// bounds its start.
func watchBinding(ctx context.Context, conn *wire.ConnectionInfo, pgid int, probe prober, timeout time.Duration, fail func(error)) {
	t := time.NewTicker(bindPoll)
	defer t.Stop()
	var first time.Time // when the kernel began to bind, or a port was held
	var before map[wire.Channel]uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l, err := probe(conn, pgid)
		if err != nil {
			continue // nothing known this time
		}
		if len(l.bound) == len(wire.Channels()) {
			return
		}
		held := map[wire.Channel]bool{}
		for ch, ino := range l.holders {
			if before[ch] == ino {
				held[ch] = true
			}
		}
		binding := len(l.bound) > 0 || l.binding
		if first.IsZero() && (binding || len(held) > 0) {
			first = time.Now()
		}
		if len(held) > 0 && binding || !first.IsZero() && time.Since(first) >= timeout {
			fail(bindError(conn, l.bound, held, time.Since(first)))
			return
		}
		before = l.holders
	}
}

// bindError says which ports the kernel has not bound, and why when known;
// waited is the time since it began to.
func bindError(conn *wire.ConnectionInfo, bound, held map[wire.Channel]bool, waited time.Duration) error {
	var heldBy, missing, ok []string
	for _, ch := range wire.Channels() {
		name := fmt.Sprintf("%s (%s)", ch, conn.Addr(conn.Port(ch)))
		switch {
		case bound[ch]:
			ok = append(ok, string(ch))
		case held[ch]:
			heldBy = append(heldBy, name)
		default:
			missing = append(missing, name)
		}
	}
	var why []string
	if len(heldBy) > 0 {
		why = append(why, "held by another process: "+strings.Join(heldBy, ", "))
	}
	if len(missing) > 0 {
		why = append(why, fmt.Sprintf("not bound after %v: %s", waited.Round(time.Millisecond), strings.Join(missing, ", ")))
	}
	boundList := "none"
	if len(ok) > 0 {
		boundList = strings.Join(ok, ", ")
	}
	return fmt.Errorf("%w: %s (bound: %s)", ErrBind, strings.Join(why, "; "), boundList)
}
