package streamjson_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/surface/streamjson"
)

// TestConformance: stream-json, as `ask --input-format stream-json
// --output-format stream-json` runs it, passes the surface suite. It has
// no connection to renew: a client that comes back starts another ask
// with --session.
func TestConformance(t *testing.T) {
	surfacetest.Run(t, newStreamSurface)
}

// newStreamSurface runs stream-json over h on pipes, as ask does.
func newStreamSurface(t *testing.T, h *surfacetest.Host) surfacetest.Surface {
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	in := streamjson.NewInput(inR, func(s string) { t.Log(s) })
	out := streamjson.NewWriter(outW)
	info, err := h.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tr := streamjson.NewTranscript(out, info.ID, h.Models().Model(), false)
	unsubscribe := h.Subscribe(tr.Event)
	r := streamjson.Run{Host: h.Host, Format: streamjson.FormatStreamJSON, Input: in, Out: out, Tr: tr,
		Approve: in.Approver(out, tr)}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		r.Prompts(ctx)
		outW.Close()
	}()
	lines := make(chan map[string]any, 256)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l map[string]any
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("stdout line %q: %v", sc.Text(), err)
				continue
			}
			lines <- l
		}
	}()
	return &streamSurface{in: inW, lines: lines, close: func() {
		inW.Close()
		cancel()
		<-ended
		unsubscribe()
	}}
}

// streamSurface is a Claude Code SDK client: user lines and control
// messages on stdin, one JSON object a line on stdout.
type streamSurface struct {
	in    *io.PipeWriter
	lines chan map[string]any
	n     int
	close func()
}

func (s *streamSurface) send(v map[string]any) error {
	b, _ := json.Marshal(v)
	_, err := s.in.Write(append(b, '\n'))
	return err
}

func (s *streamSurface) Start(_ context.Context, text string) error {
	return s.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
}

// next is the next stdout line.
func (s *streamSurface) next(ctx context.Context) (map[string]any, error) {
	select {
	case l, ok := <-s.lines:
		if !ok {
			return nil, io.EOF
		}
		return l, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *streamSurface) Prompt(ctx context.Context, text string) (surfacetest.Turn, error) {
	var turn surfacetest.Turn
	if err := s.Start(ctx, text); err != nil {
		return turn, err
	}
	for {
		l, err := s.next(ctx)
		if err != nil {
			return turn, err
		}
		switch l["type"] {
		case "assistant":
			msg, _ := l["message"].(map[string]any)
			blocks, _ := msg["content"].([]any)
			for _, b := range blocks {
				if b, _ := b.(map[string]any); b["type"] == "text" {
					turn.Text += fmt.Sprint(b["text"])
				}
			}
		case "control_request":
			req, _ := l["request"].(map[string]any)
			if req["subtype"] != "can_use_tool" {
				return turn, fmt.Errorf("control_request %v", req)
			}
			input, _ := req["input"].(map[string]any)
			turn.Asked = append(turn.Asked, fmt.Sprint(input["code"]))
			if err := s.send(map[string]any{"type": "control_response", "response": map[string]any{
				"subtype": "success", "request_id": l["request_id"], "response": map[string]any{"behavior": "allow"}}}); err != nil {
				return turn, err
			}
		case "result":
			if l["is_error"] == true {
				return turn, fmt.Errorf("result: %v", l["errors"])
			}
			return turn, nil
		}
	}
}

// Cancel sends Claude Code's interrupt and reads to the cancelled turn's
// result and the interrupt's answer.
func (s *streamSurface) Cancel(ctx context.Context) error {
	s.n++
	id := fmt.Sprintf("interrupt_%d", s.n)
	if err := s.send(map[string]any{"type": "control_request", "request_id": id, "request": map[string]any{"subtype": "interrupt"}}); err != nil {
		return err
	}
	answered, ended := false, false
	for !answered || !ended {
		l, err := s.next(ctx)
		if err != nil {
			return err
		}
		switch l["type"] {
		case "control_response":
			resp, _ := l["response"].(map[string]any)
			if resp["request_id"] == id {
				if resp["subtype"] != "success" {
					return fmt.Errorf("interrupt answered %v", resp)
				}
				answered = true
			}
		case "result":
			if l["subtype"] != "error_during_execution" || !strings.Contains(fmt.Sprint(l["errors"]), "interrupt") {
				return fmt.Errorf("the interrupted turn's result: %v", l)
			}
			ended = true
		}
	}
	return nil
}

// Rewind sends our rewind control_request and waits for its answer.
func (s *streamSurface) Rewind(ctx context.Context, ts int64) error {
	s.n++
	id := fmt.Sprintf("rewind_%d", s.n)
	if err := s.send(map[string]any{"type": "control_request", "request_id": id,
		"request": map[string]any{"subtype": "rewind", "ts": ts, "conversation_only": true}}); err != nil {
		return err
	}
	for {
		l, err := s.next(ctx)
		if err != nil {
			return err
		}
		if resp, _ := l["response"].(map[string]any); l["type"] == "control_response" && resp["request_id"] == id {
			if resp["subtype"] != "success" {
				return fmt.Errorf("rewind answered %v", resp)
			}
			return nil
		}
	}
}

func (s *streamSurface) Reconnect(context.Context) ([]string, error) {
	return nil, surfacetest.ErrUnsupported
}

func (s *streamSurface) Close() error {
	s.close()
	return nil
}

// TestSetMode: set_permission_mode takes a permission mode, as Claude
// Code's SDK sends it, or an agent mode's name; a bad one is an error
// response, and the session goes on.
func TestSetMode(t *testing.T) {
	h := surfacetest.NewHost(t)
	s := newStreamSurface(t, h).(*streamSurface)
	defer s.Close()
	ctx := context.Background()
	ask := func(id, mode string) map[string]any {
		t.Helper()
		if err := s.send(map[string]any{"type": "control_request", "request_id": id,
			"request": map[string]any{"subtype": "set_permission_mode", "mode": mode}}); err != nil {
			t.Fatal(err)
		}
		for {
			l, err := s.next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if resp, _ := l["response"].(map[string]any); l["type"] == "control_response" && resp["request_id"] == id {
				return resp
			}
		}
	}
	if r := ask("m1", "acceptEdits"); r["subtype"] != "success" || h.Modes().Permission() != "acceptEdits" {
		t.Errorf("acceptEdits: %v (mode %s)", r, h.Modes().Permission())
	}
	if r := ask("m2", "architect"); r["subtype"] != "success" || h.Modes().Agent().Name != "architect" {
		t.Errorf("architect: %v (agent mode %s)", r, h.Modes().Agent().Name)
	}
	if r := ask("m3", "turbo"); r["subtype"] != "error" || !strings.Contains(fmt.Sprint(r["error"]), "no mode") {
		t.Errorf("an unknown mode: %v", r)
	}
}

// TestControlBeforeTheSession: a control_request sent first thing, before
// the session is ready (OnControl), is held and answered once it is.
func TestControlBeforeTheSession(t *testing.T) {
	inR, inW := io.Pipe()
	var warned []string
	in := streamjson.NewInput(inR, func(s string) { warned = append(warned, s) })
	defer inW.Close()
	if _, err := io.WriteString(inW, `{"type":"control_request","request_id":"early","request":{"subtype":"interrupt"}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	// The pipe gives the next line only once the first is dealt with:
	// held, as no handler is set yet.
	if _, err := io.WriteString(inW, `{"type":"user","message":{"role":"user","content":"hi"}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	out := streamjson.NewWriter(&syncWriter{b: &b})
	got := make(chan string, 1)
	in.OnControl(out, func(subtype string, _ json.RawMessage) (map[string]any, error) {
		got <- subtype
		return nil, nil
	})
	select {
	case s := <-got:
		if s != "interrupt" {
			t.Errorf("handled %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the early control_request was not handled (warnings %q)", warned)
	}
}

type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
