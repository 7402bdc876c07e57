package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/checkpoint"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/rewind"
	"github.com/agentkernel/agentkernel/store"
)

// The world beside the conversation: the workspace's files and the
// backing kernel's state. The host records what each step did to them
// (world implements agent.World) and turns it back in a rewind.

// World is what a rewind turns back beside the conversation: the
// workspace's files (through a checkpoint.Tracker, made on first use and
// learning the workspace in the background), the notebooks' cells, and
// the backing kernel's state (the code log replayed).
type World struct {
	set       worldSettings
	host      worldHost
	openStore storeOf
	code      *CodeLog // what the kernel ran: a replay starts it again
	frontends *Tools   // the notebooks frontends show, whose cells are put back
	lis       *agent.Listeners
	log       hclog.Logger

	mu       sync.Mutex // guards what follows; held while the tracker is made
	track    *checkpoint.Tracker
	baseline *baseline // the tracker's, in the background
	closed   bool
}

// worldSettings are what the world is made of (Config).
type worldSettings struct {
	workspace    string
	checkpoints  checkpoint.Options
	runner       backing.Runner // nil: no kernel here
	openNotebook func(path string) (FileCells, error)
}

// worldHost is what the world asks of the host: its sessions, and to make
// a fork it stored current (Fork, Copy).
type worldHost interface {
	sessions
	resume(ctx context.Context, ref string, offer, forkOthers bool) (Info, error)
}

// steps records the steps of one session (agent.World).
type steps struct {
	world *World
	c     *current
}

// tracker returns the host's workspace tracker, made on first use (ctx
// bounds opening the store).
func (w *World) tracker(ctx context.Context) (*checkpoint.Tracker, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.track != nil {
		return w.track, nil
	}
	if w.closed {
		return nil, ErrClosed
	}
	st, err := w.openStore(ctx)
	if err != nil {
		return nil, err
	}
	opts := w.set.checkpoints
	opts.Ignore = append(append([]string(nil), opts.Ignore...), ownFiles(w.set.workspace, st)...)
	t, err := checkpoint.New(w.set.workspace, trackerStore{st}, opts)
	if err != nil {
		return nil, err
	}
	w.track = t
	return t, nil
}

// ownFiles are the ignore patterns of agentkernel's own files when they are
// in the workspace (a data directory under it, as in a workspace that is
// the home directory): the store changes at every step, and a rewind must
// never put back an older database under the running one.
func ownFiles(workspace string, st *store.Store) []string {
	if st.Postgres() {
		return nil
	}
	dir := CanonicalWorkspace(filepath.Dir(st.Path()))
	rel, err := filepath.Rel(workspace, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	if rel == "." {
		base := filepath.Base(st.Path())
		return []string{"/" + base, "/" + base + "-wal", "/" + base + "-shm", "/" + base + "-journal", "/logs/"}
	}
	return []string{"/" + filepath.ToSlash(rel) + "/"}
}

// trackerStore is the store as the tracker's blobs and index.
type trackerStore struct{ *store.Store }

func (s trackerStore) LoadIndex(ctx context.Context, root string) ([]checkpoint.IndexEntry, error) {
	rows, err := s.Store.LoadIndex(ctx, root)
	out := make([]checkpoint.IndexEntry, len(rows))
	for i, r := range rows {
		out[i] = checkpoint.IndexEntry(r)
	}
	return out, err
}

func (s trackerStore) SaveIndex(ctx context.Context, root string, put []checkpoint.IndexEntry, del []string) error {
	rows := make([]store.FileStat, len(put))
	for i, r := range put {
		rows[i] = store.FileStat(r)
	}
	return s.Store.SaveIndex(ctx, root, rows, del)
}

// StartTracking starts learning the workspace (the tracker's baseline) in
// the background, once, so that the first step that may change files
// finds it done; the kernel does when it starts. When wait is given (the
// backing kernel's Ready) the baseline begins once it returns: code cannot
// run before, and the kernel's start-up and first prompt are left alone.
// Without it (a one-shot ask), the first code run learns the workspace
// while its kernel starts, and a run that changes no file never does.
// Close stops it.
func (w *World) StartTracking(wait func(context.Context) error) {
	w.mu.Lock()
	if w.closed || w.baseline != nil {
		w.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &baseline{cancel: cancel, done: make(chan struct{})}
	w.baseline = b
	w.mu.Unlock()
	go func() { // owned by the host: Close cancels it and waits
		defer close(b.done)
		if wait != nil {
			wait(ctx) // a kernel that does not start leaves files to track
			if ctx.Err() != nil {
				return
			}
		}
		t, err := w.tracker(ctx)
		if err != nil {
			if !errors.Is(err, ErrClosed) {
				w.log.Warn("workspace tracking", "error", err)
			}
			return
		}
		start := time.Now()
		rep, err := t.Baseline(ctx, true)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			w.log.Warn("workspace baseline", "error", err)
		default:
			w.log.Debug("workspace baseline", "took", time.Since(start), "unkept", len(rep.Unkept), "unreadable", len(rep.Unreadable))
		}
	}()
}

// baseline is the background learning of the workspace.
type baseline struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// stop stops the baseline and the tracker (the host's Close); none is
// made after.
func (w *World) stop() {
	w.mu.Lock()
	b, t := w.baseline, w.track
	w.closed = true
	w.mu.Unlock()
	if b != nil {
		b.cancel()
		<-b.done
	}
	if t != nil {
		t.Close()
	}
}

// scan brings the tracker up to date and returns what changed since its
// last scan (the first waits for the baseline).
func (w *World) scan(ctx context.Context) ([]checkpoint.Change, error) {
	t, err := w.tracker(ctx)
	if err != nil {
		return nil, err
	}
	ch, rep, err := t.Sync(ctx)
	if len(rep.Unreadable) > 0 {
		w.log.Debug("workspace scan: unreadable", "paths", rep.Unreadable)
	}
	return ch, err
}

// BeforeTool implements agent.World. A file tool's file is read before
// and after the call (the write is recorded without waiting for the
// baseline), and so is a notebook file that a notebook tool changes; a
// notebook tool's change of the cells a frontend shows is no file's (the
// cell changes record it), so nothing is scanned around it; around any
// other call (code, an MCP tool) the scans find what it changed. Changes
// are recorded at anchor.
func (w steps) BeforeTool(ctx context.Context, anchor int64, call provider.ToolCall) func() {
	if w.frontendCells(call) {
		return func() {}
	}
	t, err := w.world.tracker(ctx)
	if err != nil {
		w.world.log.Warn("checkpoint before a tool", "tool", call.Name, "error", err)
		return func() {}
	}
	check := func(ctx context.Context) ([]checkpoint.Change, error) { return w.world.scan(ctx) }
	if rel, ok := w.notebookFile(t, call); ok {
		check = func(ctx context.Context) ([]checkpoint.Change, error) { return t.Track(ctx, rel) }
	} else if rel, ok := w.toolFile(t, call); ok {
		check = func(ctx context.Context) ([]checkpoint.Change, error) { return t.Track(ctx, rel) }
	} else if r := w.world.set.runner; call.Name == agent.ToolExecuteCode && r != nil {
		// The kernel starts while the first scan learns the workspace.
		r.Start()
	}
	start := time.Now()
	if _, err := check(ctx); err != nil {
		w.world.log.Warn("checkpoint before a tool", "tool", call.Name, "error", err)
		return func() {}
	}
	took := time.Since(start)
	return func() {
		ctx := context.WithoutCancel(ctx)
		start := time.Now()
		changes, err := check(ctx)
		if err != nil {
			w.world.log.Warn("checkpoint after a tool", "tool", call.Name, "error", err)
			return
		}
		w.record(ctx, anchor, call.Name, changes, took+time.Since(start))
	}
}

// changesCells reports whether call is a notebook tool's that changes
// cells only (insert, edit, move, delete: not a run, whose code may change
// any file).
func changesCells(call provider.ToolCall) bool {
	switch call.Name {
	case agent.ToolNotebookInsert, agent.ToolNotebookEdit, agent.ToolNotebookMove, agent.ToolNotebookDelete:
		return true
	}
	return false
}

// frontendCells reports whether call changes only the cells of a notebook
// that is no file of the step's (a frontend's, whose page saves its
// document when it will, or the headless runner's): the cells it works in
// are the ones the tool then finds (Tools.currentCells).
func (w steps) frontendCells(call provider.ToolCall) bool {
	if !changesCells(call) {
		return false
	}
	cells := w.world.frontends.currentCells()
	_, file := cells.(FileCells)
	return cells != nil && !file
}

// notebookFile is the workspace path of the notebook file a notebook
// tool's call changes, if call is one and its cells are a file's
// (FileCells) in the workspace.
func (w steps) notebookFile(t *checkpoint.Tracker, call provider.ToolCall) (string, bool) {
	if !changesCells(call) {
		return "", false
	}
	fc, ok := w.world.frontends.currentCells().(FileCells)
	if !ok {
		return "", false
	}
	rel, err := filepath.Rel(t.Root(), fc.File())
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// toolFile is the workspace path a file tool writes, if call is one.
func (w steps) toolFile(t *checkpoint.Tracker, call provider.ToolCall) (string, bool) {
	if call.Name != agent.ToolWriteFile && call.Name != agent.ToolEditFile {
		return "", false
	}
	var in struct {
		Path string `json:"path"`
	}
	if json.Unmarshal([]byte(call.Input), &in) != nil || in.Path == "" {
		return "", false
	}
	abs, err := w.c.ws.Resolve(in.Path) // as the tool resolves it
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(t.Root(), abs)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// record stores what a step changed and tells the listeners.
func (w steps) record(ctx context.Context, anchor int64, tool string, changes []checkpoint.Change, took time.Duration) {
	cp := &agent.Checkpoint{Anchor: anchor, Tool: tool, Files: []agent.FileChange{}, Took: took}
	for _, c := range changes {
		cp.Files = append(cp.Files, agent.FileChange{Path: c.Path, Change: c.Kind()})
	}
	defer w.world.lis.Emit(agent.Event{Kind: EventCheckpoint, Checkpoint: cp})
	if len(changes) == 0 {
		return
	}
	rec := make([]store.FileChange, len(changes))
	for i, c := range changes {
		rec[i] = store.FileChange{Anchor: anchor, Path: c.Path, Before: c.Before, After: c.After}
	}
	st, err := w.world.openStore(ctx)
	if err == nil {
		err = st.AddFileChanges(ctx, w.c.id, rec)
	}
	if err != nil {
		w.world.log.Warn("record file changes", "tool", tool, "error", err)
	}
}

// CodeRun is one piece of code of a session's code log.
type CodeRun = store.CodeRun

// RewindOptions choose what a rewind turns back; the zero value turns
// back everything: the conversation, the files and the kernel.
type RewindOptions struct {
	// ConversationOnly leaves the files and the kernel as they are.
	ConversationOnly bool
	// NoFiles leaves the files and the notebooks' cells; NoKernel the
	// kernel.
	NoFiles, NoKernel bool
	// Force overwrites files changed outside the agent since (conflicts).
	Force bool
	// ConfirmReplay is asked, with the code that would run again, before
	// the kernel is restarted and the code replayed; nil: yes. A no
	// leaves the kernel as it is (and the report says so).
	ConfirmReplay func(ctx context.Context, code []CodeRun) bool
}

// Rewound says what a rewind did.
type Rewound struct {
	// Removed is the number of UI messages removed.
	Removed int
	// UI and API are the numbers of messages left: shown, and sent to the
	// model.
	UI, API int
	// Files says what happened to the workspace's files (nil when they
	// were left alone); FilesNote why they were left alone, if it was not
	// asked for.
	Files     *checkpoint.RestoreReport
	FilesNote string
	// Cells says what happened to the cells of each notebook the agent
	// changed through a frontend (nil when none).
	Cells []CellsReport
	// Kernel says what happened to the kernel's state: "" when it was left
	// alone, else a line per replayed cell and how it ended.
	Kernel []string
	// KernelNote says why the kernel was left or what failed.
	KernelNote string
}

// Summary is the rewind in a few lines for people.
func (r Rewound) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Rewound: %d messages removed; %d shown and %d sent to the model remain.", r.Removed, r.UI, r.API)
	if f := r.Files; f != nil {
		fmt.Fprintf(&b, "\nFiles: %d restored, %d removed.", len(f.Restored), len(f.Removed))
		if len(f.Conflicts) > 0 {
			fmt.Fprintf(&b, "\nConflicts (changed outside the agent since; kept as they are, --force overwrites): %s",
				strings.Join(f.Conflicts, ", "))
		}
		if len(f.Unrestorable) > 0 {
			fmt.Fprintf(&b, "\nNot restored: %s", strings.Join(f.Unrestorable, "; "))
		}
		if len(f.Protected) > 0 {
			fmt.Fprintf(&b, "\nLeft alone (protected: their content is never kept, so a rewind cannot put them back): %s",
				strings.Join(f.Protected, ", "))
		}
	}
	if r.FilesNote != "" {
		b.WriteString("\nFiles: " + r.FilesNote)
	}
	for _, c := range r.Cells {
		fmt.Fprintf(&b, "\nNotebook %s (through %s): %d cell changes turned back.", c.Notebook, c.Where, c.Restored)
		if len(c.Conflicts) > 0 {
			fmt.Fprintf(&b, "\nConflicts (changed since; kept as they are, --force overwrites): %s", strings.Join(c.Conflicts, ", "))
		}
		if len(c.Unrestorable) > 0 {
			fmt.Fprintf(&b, "\nNot turned back: %s", strings.Join(c.Unrestorable, "; "))
		}
	}
	if len(r.Kernel) > 0 {
		fmt.Fprintf(&b, "\nKernel: restarted; replayed %d cells:", len(r.Kernel))
		for _, l := range r.Kernel {
			b.WriteString("\n  " + l)
		}
	}
	if r.KernelNote != "" {
		b.WriteString("\nKernel: " + r.KernelNote)
	}
	return b.String()
}

// Rewind removes the message stamped ts and everything after it from both
// histories of the current session, in one transaction, and turns the
// world back to how it was just before that message: files the agent
// changed since are restored (created ones removed; files changed outside
// the agent since are left and reported, unless forced), and the backing
// kernel is restarted and the code run before that point replayed (asking
// first). The model is told at the next prompt. A running turn is
// cancelled first.
func (w *World) Rewind(ctx context.Context, ts int64, opts RewindOptions) (Rewound, error) {
	c, past, err := w.worldAfter(ctx, ts)
	if err != nil {
		return Rewound{}, err
	}
	w.host.logCommand(ctx, c, "rewind", tsArg(ts))
	before := len(c.task.UI())
	res, err := c.task.Rewind(ctx, ts, rewind.Options{})
	if err != nil {
		return Rewound{}, err
	}
	out := Rewound{Removed: before - len(res.UI), UI: len(res.UI), API: len(messages.Effective(res.API))}
	if opts.ConversationOnly {
		return out, nil
	}
	w.turnBack(ctx, c, ts, past, opts, &out)
	var notes []string
	if out.Files != nil {
		notes = append(notes, "the workspace's files were restored to that point")
	}
	if len(out.Cells) > 0 {
		notes = append(notes, "the notebook's cells were put back as they were (read the notebook again)")
	}
	if len(out.Kernel) > 0 {
		notes = append(notes, "the kernel was restarted and the code run before that point replayed (variables defined later are gone)")
	}
	if len(notes) > 0 {
		c.note("[agentkernel] The conversation was rewound; " + strings.Join(notes, ", and ") +
			". Anything done after that point is gone.")
	}
	return out, nil
}

// pastWorld is what a rewind to a point turns back: the files changed since,
// and the code log.
type pastWorld struct {
	changes []store.FileChange
	cells   []store.CellChange
	runs    []store.CodeRun
}

// worldAfter checks that ts is a message of the current session and reads
// what its world did from there on. It is read before the conversation's
// rewind, which marks it rewound.
func (w *World) worldAfter(ctx context.Context, ts int64) (*current, pastWorld, error) {
	c, err := w.host.session(ctx)
	if err != nil {
		return nil, pastWorld{}, err
	}
	if !containsTS(c.task.UI(), ts) {
		return nil, pastWorld{}, fmt.Errorf("no message with ts %d in this session (see %%agent history)", ts)
	}
	st, err := w.openStore(ctx)
	if err != nil {
		return nil, pastWorld{}, err
	}
	var p pastWorld
	if p.changes, err = st.FileChanges(ctx, c.id, ts); err != nil {
		return nil, pastWorld{}, err
	}
	if p.cells, err = st.CellChanges(ctx, c.id, ts); err != nil {
		return nil, pastWorld{}, err
	}
	if p.runs, err = st.CodeRuns(ctx, c.id); err != nil {
		return nil, pastWorld{}, err
	}
	return c, p, nil
}

// turnBack restores the files and the kernel of session c to ts, as opts
// allow, and says what it did in out.
func (w *World) turnBack(ctx context.Context, c *current, ts int64, p pastWorld, opts RewindOptions, out *Rewound) {
	if !opts.NoFiles && len(p.cells) > 0 {
		// The cells first, through the frontend: the notebooks' files are
		// theirs (what the frontend saved meanwhile is not the agent's).
		var handled map[string]bool
		out.Cells, handled = w.restoreCells(ctx, p.cells, opts.Force)
		p.changes = slices.DeleteFunc(slices.Clone(p.changes), func(c store.FileChange) bool { return handled[c.Path] })
	}
	if !opts.NoFiles && len(p.changes) > 0 && c.elsewhere != "" {
		// Its files are in another directory; this one's are not its.
		out.FilesNote = fmt.Sprintf("left alone: the session was started in %s, and this kernel works in %s "+
			"(rewind it from there to restore its files)", c.elsewhere, w.set.workspace)
		opts.NoFiles = true
	}
	if !opts.NoFiles && len(p.changes) > 0 {
		var err error
		if out.Files, err = w.restoreFiles(ctx, p.changes, opts.Force); err != nil {
			out.Files = &checkpoint.RestoreReport{Unrestorable: []string{err.Error()}}
		}
	}
	if !opts.NoKernel {
		w.restoreKernel(ctx, c, ts, p.runs, opts, out)
	}
}

// restoreFiles turns changes back.
func (w *World) restoreFiles(ctx context.Context, changes []store.FileChange, force bool) (*checkpoint.RestoreReport, error) {
	t, err := w.tracker(ctx)
	if err != nil {
		return nil, err
	}
	cp := make([]checkpoint.Change, len(changes))
	for i, c := range changes {
		cp[i] = checkpoint.Change{Path: c.Path, Before: c.Before, After: c.After}
	}
	rep, err := t.Restore(ctx, cp, force)
	return &rep, err
}

// restoreKernel restarts the backing kernel and replays the code run
// before ts, when code ran after it (otherwise the kernel is as it was).
func (w *World) restoreKernel(ctx context.Context, c *current, ts int64, runs []store.CodeRun, opts RewindOptions, out *Rewound) {
	var replay []store.CodeRun
	later := false
	for _, r := range runs {
		switch {
		case r.Rewound:
		case r.Anchor < ts:
			replay = append(replay, r)
		default:
			later = true
		}
	}
	if !later {
		return
	}
	st, err := w.openStore(ctx)
	if err != nil {
		out.KernelNote = err.Error()
		return
	}
	if w.set.runner == nil {
		// No kernel here (agentkernel sessions rewind): the next kernel that
		// runs code for the session replays first.
		if err := st.SetReplayPending(ctx, c.id, true); err != nil {
			out.KernelNote = err.Error()
			return
		}
		out.KernelNote = fmt.Sprintf("%d cells will be replayed in a fresh kernel when the session next runs code.", len(replay))
		return
	}
	if opts.ConfirmReplay != nil && !opts.ConfirmReplay(ctx, replay) {
		out.KernelNote = "left as it is (the replay was declined): it still holds what the rewound code did."
		return
	}
	lines, err := w.replay(ctx, c, replay)
	out.Kernel = lines
	if err != nil {
		out.KernelNote = err.Error()
	}
}

// replay restarts the kernel and runs code again, in order, stopping at
// the first cell that fails. The session is marked so that a kernel killed
// in the middle is replayed again next time.
func (w *World) replay(ctx context.Context, c *current, code []store.CodeRun) ([]string, error) {
	st, err := w.openStore(ctx)
	if err != nil {
		return nil, err
	}
	if err := st.SetReplayPending(ctx, c.id, true); err != nil {
		return nil, err
	}
	r := w.set.runner
	if err := r.Restart(ctx); err != nil {
		return nil, fmt.Errorf("could not restart the backing kernel: %w", err)
	}
	w.code.reset() // a fresh kernel: it holds what is replayed below
	defer w.code.add(code...)
	var lines []string
	for i, run := range code {
		res, err := r.Execute(ctx, backing.Exec{Code: run.Code})
		line := fmt.Sprintf("[%d] %s → %s", i+1, firstLine(run.Code, 50), outcome(res, err))
		lines = append(lines, line)
		if err != nil || res.Error != nil {
			return lines, fmt.Errorf("the replay stopped at cell %d of %d, which failed; the kernel holds the state up to it",
				i+1, len(code))
		}
	}
	return lines, st.SetReplayPending(ctx, c.id, false)
}

// ReplayPending reports whether the current session's kernel state must be
// rebuilt (a rewind done outside a kernel, or a replay cut short).
func (w *World) ReplayPending() bool {
	c := w.host.active()
	return c != nil && c.replayPending.Load()
}

// ReplayIfPending replays the current session's code log in a fresh
// kernel if a rewind left that for the next code run. It returns a line
// per replayed cell.
func (w *World) ReplayIfPending(ctx context.Context) ([]string, error) {
	c := w.host.active()
	if c == nil || !c.replayPending.Swap(false) || w.set.runner == nil {
		return nil, nil
	}
	st, err := w.openStore(ctx)
	if err != nil {
		return nil, err
	}
	runs, err := st.CodeRuns(ctx, c.id)
	if err != nil {
		return nil, err
	}
	var replay []store.CodeRun
	for _, r := range runs {
		if !r.Rewound {
			replay = append(replay, r)
		}
	}
	return w.replay(ctx, c, replay)
}

func outcome(res backing.Result, err error) string {
	switch {
	case err != nil:
		return "failed: " + err.Error()
	case res.Error != nil:
		return "error: " + res.Error.Name + ": " + firstLine(res.Error.Value, 60)
	}
	out := strings.TrimSpace(res.Stdout + res.Text)
	if out == "" {
		return "ok"
	}
	return "ok: " + firstLine(out, 40)
}

func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

// Fork makes a new session holding the current session's history before
// the message stamped ts, linked to it, and makes it current; the world is
// turned back to that point as Rewind does (the original's history and
// records are not changed). It returns the new session.
func (w *World) Fork(ctx context.Context, ts int64, opts RewindOptions) (Info, Rewound, error) {
	c, past, err := w.worldAfter(ctx, ts)
	if err != nil {
		return Info{}, Rewound{}, err
	}
	w.host.logCommand(ctx, c, "fork", tsArg(ts))
	c.task.Cancel()
	st, err := w.openStore(ctx)
	if err != nil {
		return Info{}, Rewound{}, err
	}
	fork, err := st.ForkSession(ctx, c.id, ts)
	if err != nil {
		return Info{}, Rewound{}, err
	}
	info, err := w.host.resume(ctx, fork.ID, false, false)
	if err != nil {
		return Info{}, Rewound{}, err
	}
	out := Rewound{UI: info.Messages}
	if !opts.ConversationOnly {
		nc := w.host.active()
		w.turnBack(ctx, nc, ts, past, opts, &out)
	}
	return info, out, nil
}

// Copy makes a new session holding the whole history of the current one,
// linked to it as a fork at its end, and makes it current. The files and
// the kernel are not touched (ACP's session/fork).
func (w *World) Copy(ctx context.Context) (Info, error) {
	c, err := w.host.session(ctx)
	if err != nil {
		return Info{}, err
	}
	w.host.logCommand(ctx, c, "fork", "end")
	st, err := w.openStore(ctx)
	if err != nil {
		return Info{}, err
	}
	fork, err := st.ForkSession(ctx, c.id, store.WholeHistory)
	if err != nil {
		return Info{}, err
	}
	return w.host.resume(ctx, fork.ID, false, false)
}

func containsTS(ui []messages.UIMessage, ts int64) bool {
	for i := range ui {
		if ui[i].TS == ts {
			return true
		}
	}
	return false
}

var _ agent.World = steps{}
