package backing

import (
	"context"
	"encoding/json"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// Quiet is a Runner whose shell requests do not wait behind the user's
// running cell when the kernel can answer beside it: on a kernel with
// kernel subshells (protocol 5.5; ipykernel 7), they go to a subshell of
// Quiet's own, made on first use (and again for each new kernel), which
// shares the interpreter's namespace; elsewhere they go to the main shell
// as Runner.Do sends them. What reads the namespace quietly (Namespace,
// Inspect) goes through it. Safe for concurrent use.
type Quiet struct {
	Runner

	// lock is held (a token taken) while the subshell is looked up or
	// made: a channel, so that a wait for it ends with the caller's ctx.
	lock chan struct{}
	gen  int    // the kernel generation the subshell is of
	id   string // its subshell_id; "" when none

	// The comm quiet reads go through where the kernel has no subshells
	// (quietcomm.go): its id, the generation it is of, and whether that
	// kernel refused one.
	commID     string
	commGen    int
	commFailed bool
}

// NewQuiet is a Quiet over r.
func NewQuiet(r Runner) *Quiet { return &Quiet{Runner: r, lock: make(chan struct{}, 1)} }

// subshells is a Runner that says whether its kernel offers subshells
// (Local, Remote).
type subshells interface{ Subshells() bool }

// Beside reports whether a shell request can be answered while a cell
// runs: the kernel offers subshells.
func (q *Quiet) Beside() bool {
	s, ok := q.Runner.(subshells)
	return ok && s.Subshells()
}

// Do implements Runner: a shell request goes to Quiet's subshell when the
// kernel has subshells and is running; anything else as r.Do sends it.
func (q *Quiet) Do(ctx context.Context, req client.Request, h client.Handlers) (*wire.Message, error) {
	if req.Channel == wire.Control || req.Header != nil || !q.Running() || !q.Beside() {
		return q.Runner.Do(ctx, req, h)
	}
	id := q.subshell(ctx)
	if id == "" {
		return q.Runner.Do(ctx, req, h)
	}
	hdr := wire.NewHeader("", "", req.MsgType) // the client fills in its session and user
	hdr.SubshellID = id
	req.Header = &hdr
	return q.Runner.Do(ctx, req, h)
}

// subshell returns the subshell of the running kernel, making one if
// there is none yet; "" when it cannot be made (the request then goes to
// the main shell).
func (q *Quiet) subshell(ctx context.Context) string {
	gen, ok := q.acquire(ctx)
	if !ok {
		return ""
	}
	defer q.release()
	if q.id != "" && q.gen == gen {
		return q.id
	}
	q.id = ""
	reply, err := q.Runner.Do(ctx, client.Request{Channel: wire.Control, MsgType: wire.MsgCreateSubshellRequest}, client.Handlers{})
	if err != nil {
		return ""
	}
	var rep struct {
		Status     string `json:"status"`
		SubshellID string `json:"subshell_id"`
	}
	if json.Unmarshal(reply.Content, &rep) != nil || rep.Status != "ok" || rep.SubshellID == "" {
		return ""
	}
	q.id, q.gen = rep.SubshellID, gen
	return q.id
}

// acquire takes Quiet's lock, or gives up when ctx ends (false), and
// returns the running kernel's generation (0 for a Runner that does not
// count them). release gives the lock back.
func (q *Quiet) acquire(ctx context.Context) (gen int, ok bool) {
	if g, ok := q.Runner.(Generations); ok {
		gen = g.Generation()
	}
	select {
	case q.lock <- struct{}{}:
		return gen, true
	case <-ctx.Done():
		return 0, false
	}
}

func (q *Quiet) release() { <-q.lock }
