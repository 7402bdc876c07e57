package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
)

// The context block: what the kernel tells the model at the head of each
// user message, tagged <notebook_context> (the system prompt explains the
// tag): the host's notes (a rewind), a kernel that restarted, the cells
// the user ran since the last message, the cell the user is in, and the
// live namespace — read silently, as completions read it, only when code
// ran since it was last read, and given whole the first time, then as
// what changed. Bounded: maxContextChars in all, maxNamespaceChars of it
// the variables.

const (
	// maxContextChars caps a context block (about 6,000 tokens).
	maxContextChars = 24000
	// maxNamespaceChars caps its variables (about 1,000 tokens).
	maxNamespaceChars = 4000
	// maxVariableLine caps one variable's line (a table of many columns).
	maxVariableLine = 600
	// contextNamespaceWait bounds the wait for the namespace: a kernel
	// busy with a cell answers after it, and the block goes without.
	contextNamespaceWait = 300 * time.Millisecond
)

// Focus is a Cells that knows where the user is: the cell they are in
// and the text selected there ("" each when not known). The frontend's
// notebook comm is one.
type Focus interface {
	Focus() (active, selection string)
}

// seenKernel is what the current session's model was last told of the
// kernel: its generation (backing.Generations), the code log's seq when
// the namespace was read, and the namespace's lines by name.
type seenKernel struct {
	gen, seq int64
	started  bool              // the first prompt's block was written
	told     bool              // the model was told of this kernel's namespace: vars is what it was told
	vars     map[string]string // name → line
}

// takeContext is the agent's Config.Context of session c: the context
// block of the next user message (and the images of the cells it names,
// for a model that takes images). It returns "" when there is nothing to
// say.
func (h *Host) takeContext(c *current) func(ctx context.Context, prompt string) (string, []agent.Image) {
	return func(ctx context.Context, prompt string) (string, []agent.Image) {
		notes, cells, images := c.takeCells()
		var parts []string
		parts = append(parts, notes...)
		if k := h.kernelNote(c); k != "" {
			parts = append(parts, k)
		}
		if cells != "" {
			parts = append(parts, cells)
		}
		if f := h.focusNote(); f != "" {
			parts = append(parts, f)
		}
		if ns := h.namespaceNote(ctx, c); ns != "" {
			parts = append(parts, ns)
		}
		if m := h.mentionsNote(ctx, c, prompt); m != "" {
			parts = append(parts, m)
		}
		if len(parts) == 0 {
			return "", images
		}
		return "<notebook_context>\n" + capText(strings.Join(parts, "\n\n"), maxContextChars) + "\n</notebook_context>", images
	}
}

// kernelNote says that the kernel restarted (or was replaced after it
// died) since the session's last message, or that this session, resumed
// from an earlier process, talks to a new kernel: the variables the model
// knew of are gone.
func (h *Host) kernelNote(c *current) string {
	gen := h.kernelGeneration()
	c.mu.Lock()
	defer c.mu.Unlock()
	first := !c.seen.started
	c.seen.started = true
	prev := c.seen.gen
	if gen > 0 {
		c.seen.gen = gen
	}
	switch {
	case first && c.resumed && len(c.task.API()) > 0:
		c.forgetNamespace()
		return "The kernel is new since this session's last message (the session was resumed): the variables defined then are gone, unless their cells run again."
	case prev > 0 && gen > prev:
		c.forgetNamespace()
		return "The kernel restarted since the last message: the variables defined before are gone, unless their cells run again."
	}
	return ""
}

// kernelGeneration is the backing runner's generation, 0 when it does
// not count them.
func (h *Host) kernelGeneration() int64 {
	if g, ok := h.cfg.Runner.(backing.Generations); ok {
		return int64(g.Generation())
	}
	return 0
}

// forgetNamespace makes the next namespace read be told whole; c.mu is
// held.
func (c *current) forgetNamespace() {
	c.seen.vars, c.seen.seq, c.seen.told = nil, 0, false
}

// focusNote names the cell the user is in and what they selected, when
// the notebook the agent works in knows.
func (h *Host) focusNote() string {
	f, ok := h.tools.currentCells().(Focus)
	if !ok {
		return ""
	}
	active, sel := f.Focus()
	if active == "" {
		return ""
	}
	s := "The user is in cell " + active + "."
	if sel != "" {
		s += fmt.Sprintf(" Selected there: %q", capText(sel, 1000))
	}
	return s
}

// namespaceNote is the live namespace for the model: whole the first time
// (and after a restart), then what changed; "" when no code ran since the
// last read, the kernel is not running (it is not started for this), or
// it does not answer within contextNamespaceWait.
func (h *Host) namespaceNote(ctx context.Context, c *current) string {
	r := h.quietRunner()
	if r == nil || !r.Running() {
		return ""
	}
	seq := h.code.lastSeq()
	c.mu.Lock()
	same := c.seen.told && c.seen.seq == seq
	c.mu.Unlock()
	if same {
		return "" // nothing ran since: the model has it
	}
	vars, err := h.ns.read(ctx, r, h.kernelGeneration(), seq, contextNamespaceWait)
	if err != nil {
		h.log.Debug("namespace for the context", "error", err)
		return ""
	}
	now := map[string]string{}
	var order []string
	var modules []string
	for _, v := range vars {
		if v.Type == "module" {
			modules = append(modules, v.Name+" ("+v.Repr+")")
			continue
		}
		now[v.Name] = truncate(v.Describe(), maxVariableLine)
		order = append(order, v.Name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	note := describeNamespace(c.seen.vars, c.seen.told, now, order, modules)
	c.seen.seq = seq
	// An empty namespace told the model nothing: the first one it is
	// told is given whole, however early the kernel was up.
	if note != "" || c.seen.told {
		c.seen.vars, c.seen.told = now, true
	}
	return note
}

// describeNamespace writes the namespace now (order: its names as the
// kernel listed them) for the model: whole, or as what changed since prev
// when diff, within maxNamespaceChars.
func describeNamespace(prev map[string]string, diff bool, now map[string]string, order, modules []string) string {
	var lines []string
	head := "Variables in the kernel (name: type, shape, columns, value):"
	if diff {
		head = "Variables in the kernel that are new or changed since the last message:"
		for _, name := range order {
			if prev[name] != now[name] {
				lines = append(lines, now[name])
			}
		}
		var gone []string
		for name := range prev {
			if _, ok := now[name]; !ok {
				gone = append(gone, name)
			}
		}
		slices.Sort(gone)
		if len(lines) == 0 && len(gone) == 0 {
			return ""
		}
		if len(gone) > 0 {
			lines = append(lines, "Gone: "+strings.Join(gone, ", "))
		}
	} else {
		for _, name := range order {
			lines = append(lines, now[name])
		}
		if len(lines) == 0 && len(modules) == 0 {
			return "" // an empty namespace: nothing to tell
		}
		if len(modules) > 0 {
			lines = append(lines, "Modules: "+strings.Join(modules, ", "))
		}
	}
	var b strings.Builder
	b.WriteString(head)
	for i, l := range lines {
		if b.Len()+len(l)+1 > maxNamespaceChars {
			fmt.Fprintf(&b, "\n[… %d more: inspect_variable or list_variables give them]", len(lines)-i)
			break
		}
		b.WriteString("\n" + l)
	}
	return b.String()
}

// truncate cuts s to at most n bytes (at a rune), marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + " …"
}

// namespaceCache is the host's last read of its kernel's namespace, by
// the kernel generation and code log seq it was read at: every session of
// the host shares it (the namespace is the kernel's), so that a new
// session's first prompt, or a prompt after one that made no change, asks
// the kernel nothing.
type namespaceCache struct {
	mu       sync.Mutex
	gen, seq int64
	vars     []backing.Variable
	ok       bool
}

// read returns the namespace at (gen, seq): the cached one, else read
// from r within wait.
func (nc *namespaceCache) read(ctx context.Context, r backing.Runner, gen, seq int64, wait time.Duration) ([]backing.Variable, error) {
	nc.mu.Lock()
	if nc.ok && nc.gen == gen && nc.seq == seq {
		vars := nc.vars
		nc.mu.Unlock()
		return vars, nil
	}
	nc.mu.Unlock()
	nctx, cancel := context.WithTimeout(ctx, wait)
	vars, err := backing.Namespace(nctx, r)
	cancel()
	if err != nil {
		return nil, err
	}
	nc.mu.Lock()
	nc.gen, nc.seq, nc.vars, nc.ok = gen, seq, vars, true
	nc.mu.Unlock()
	return vars, nil
}
