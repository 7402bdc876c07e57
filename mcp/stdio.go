package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/internal/procguard"
)

// This file: the stdio transport. It is the SDK's CommandTransport with
// three changes: the server runs in its own process group (npx starts node
// as its child; both are stopped, and end with us however we end:
// procguard), its stderr goes to the log and its tail
// into errors, and an answer larger than the frame limit is cut to its
// beginning as it is read, so a 50 MB result never sits in memory whole.

// commandTransport runs a stdio server.
type commandTransport struct {
	cmd      *exec.Cmd
	maxFrame int
	log      hclog.Logger
	stderr   *tailWriter
	// exited is closed when the process has been waited for; exitErr is
	// its exit status then.
	exited  chan struct{}
	exitErr error
}

func newCommandTransport(cmd *exec.Cmd, maxFrame int, log hclog.Logger) *commandTransport {
	return &commandTransport{cmd: cmd, maxFrame: maxFrame, log: log,
		stderr: &tailWriter{log: log, max: 2048}, exited: make(chan struct{})}
}

// Connect starts the command and speaks newline-delimited JSON over its
// stdin and stdout.
func (t *commandTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	t.cmd.Stderr = t.stderr
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := procguard.Start(t.cmd); err != nil {
		return nil, err
	}
	go func() {
		// Wait closes stdout once the process is gone, which ends the
		// SDK's read loop; that is how an exit is noticed.
		t.exitErr = t.cmd.Wait()
		procguard.Release(t.cmd)
		close(t.exited)
	}()
	fr := &frameReader{r: bufio.NewReaderSize(stdout, 64<<10), max: t.maxFrame, log: t.log}
	return (&sdk.IOTransport{Reader: io.NopCloser(fr), Writer: &stopper{stdin: stdin, t: t}, MaxLineLength: -1}).Connect(ctx)
}

// exitStatus describes how the process ended, with the tail of its stderr,
// or "" while it runs.
func (t *commandTransport) exitStatus() string {
	select {
	case <-t.exited:
	default:
		return ""
	}
	s := "exited"
	if t.exitErr != nil {
		s = t.exitErr.Error()
	}
	if tail := t.stderr.tail(); tail != "" {
		s += ": " + tail
	}
	return s
}

// stopper is the server's stdin; closing it stops the server as the MCP
// specification says: close its input, wait, SIGTERM, wait, SIGKILL (to the
// whole process group).
type stopper struct {
	stdin io.WriteCloser
	t     *commandTransport
	once  sync.Once
}

func (s *stopper) Write(p []byte) (int, error) { return s.stdin.Write(p) }

const stopGrace = 2 * time.Second

func (s *stopper) Close() error {
	s.once.Do(func() {
		s.stdin.Close()
		pgid := s.t.cmd.Process.Pid
		for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
			if sig != 0 {
				_ = syscall.Kill(-pgid, sig)
			}
			select {
			case <-s.t.exited:
				if sig == 0 {
					// The leader is gone; make sure its children are too.
					_ = syscall.Kill(-pgid, syscall.SIGKILL)
				}
				return
			case <-time.After(stopGrace):
			}
		}
	})
	return nil
}

// tailWriter logs a server's stderr line by line and keeps its last bytes.
type tailWriter struct {
	log hclog.Logger
	max int

	mu   sync.Mutex
	buf  []byte // the unfinished line
	last []byte // the last max bytes
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = append(w.last, p...)
	if len(w.last) > w.max {
		w.last = append([]byte(nil), w.last[len(w.last)-w.max:]...)
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.log.Debug("stderr", "line", string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > w.max {
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

func (w *tailWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(bytes.TrimSpace(w.last))
}

// frameReader passes newline-delimited frames through, and replaces a
// frame longer than max with a short answer carrying its beginning: the
// reply to the same request id, whose text is the head of the first text
// in it and says how large the answer was. Memory stays within max plus
// the head.
type frameReader struct {
	r       *bufio.Reader
	max     int
	log     hclog.Logger
	pending []byte
	err     error
}

// frameHead is how much of an oversized frame is kept.
const frameHead = 256 << 10

func (f *frameReader) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		f.pending, f.err = f.next()
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

func (f *frameReader) next() ([]byte, error) {
	var line []byte
	for {
		chunk, err := f.r.ReadSlice('\n')
		if len(line)+len(chunk) > f.max {
			return f.oversize(line, chunk, err)
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// oversize reads the rest of a frame that is over the limit, keeping its
// head and its last bytes, and returns the answer that stands for it.
func (f *frameReader) oversize(line, chunk []byte, err error) ([]byte, error) {
	total := len(line) + len(chunk)
	// The head is copied so that the frame read so far can be let go.
	head := append(line[:min(len(line), frameHead):min(len(line), frameHead)], chunk[:min(len(chunk), frameHead-min(len(line), frameHead))]...)
	head = append([]byte(nil), head...)
	line = nil
	var tail []byte
	keepTail := func(c []byte) {
		tail = append(tail, c...)
		if len(tail) > 512 {
			tail = append(tail[:0], tail[len(tail)-512:]...)
		}
	}
	keepTail(chunk)
	for errors.Is(err, bufio.ErrBufferFull) {
		chunk, err = f.r.ReadSlice('\n')
		total += len(chunk)
		keepTail(chunk)
	}
	out := cutAnswer(head, tail, total, f.max)
	if out == nil {
		f.log.Warn("dropped an oversized message from the server (no request id found)", "bytes", total)
	}
	return out, err
}

var (
	idTailRE = regexp.MustCompile(`"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*\}\s*$`)
	idHeadRE = regexp.MustCompile(`^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")`)
	textRE   = regexp.MustCompile(`"text"\s*:\s*"`)
)

// cutAnswer builds the reply that stands for an oversized one: same id, a
// text result with the head of the first text in it. It returns nil when
// no id is found (the frame was not a reply).
func cutAnswer(head, tail []byte, total, limit int) []byte {
	var id []byte
	if m := idTailRE.FindSubmatch(bytes.TrimSpace(tail)); m != nil {
		id = m[1]
	} else if m := idHeadRE.FindSubmatch(head); m != nil {
		id = m[1]
	}
	if id == nil {
		return nil
	}
	var text string
	if loc := textRE.FindIndex(head); loc != nil {
		text = decodePrefix(head[loc[1]:])
	}
	text += fmt.Sprintf("\n[... the server's answer was %s, over the %s limit: only its beginning was read ...]",
		agent.HumanBytes(total), agent.HumanBytes(limit))
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": json.RawMessage(id),
		"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}},
	})
	return append(b, '\n')
}

// decodePrefix decodes the start of a JSON string's body (after its
// opening quote) up to its closing quote or the end of s, dropping an
// escape cut in the middle.
func decodePrefix(s []byte) string {
	end := len(s)
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == '"' {
			end = i
			break
		}
	}
	for cut := end; cut >= 0 && cut > end-8; cut-- {
		var out string
		if json.Unmarshal(append(append([]byte{'"'}, s[:cut]...), '"'), &out) == nil {
			return out
		}
	}
	return ""
}
