package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// TB is the part of testing.TB the server uses; *testing.T, *testing.B
// and *testing.F satisfy it.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
}

// Request is one request the server received.
type Request struct {
	N      int         // 1-based, in arrival order
	Path   string      // "/v1/chat/completions" or "/v1/messages"
	Header http.Header // as received (includes the API key: keep it in tests)
	Raw    []byte      // the body
	Body   map[string]any
	// When the request was read, when its answer's first piece of text,
	// reasoning or tool call went out, and when the answer ended (the
	// server's clock: a benchmark in the same process compares them with
	// its own). FirstContent is zero when the answer had none.
	Received, FirstContent, Done time.Time
}

// Messages returns Body["messages"] as a slice of objects (nil if absent).
func (r Request) Messages() []map[string]any {
	list, _ := r.Body["messages"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, m := range list {
		if mm, ok := m.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

// LastUserText is the text of the request's last user message: its
// string content, or its text parts joined ("" when there is none).
func (r Request) LastUserText() string {
	var text string
	for _, m := range r.Messages() {
		if m["role"] != "user" {
			continue
		}
		if s, ok := m["content"].(string); ok {
			text = s
			continue
		}
		text = ""
		parts, _ := m["content"].([]any)
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			s, _ := pm["text"].(string)
			text += s
		}
	}
	return text
}

// Server is a scripted model server on 127.0.0.1. It serves the OpenAI chat
// completions API at /v1/chat/completions and the Anthropic Messages API at
// /v1/messages, both streaming only, from one queue of turns: each request
// takes the next queued Turn, whichever API it uses.
//
// All methods are safe for concurrent use. Close is idempotent.
type Server struct {
	tb   TB
	hs   *httptest.Server
	done chan struct{} // closed by Close: ends delays and stalls

	mu       sync.Mutex
	turns    []Turn
	requests []Request

	closeOnce sync.Once
}

// New starts a server on a free loopback port. With a non-nil tb, the
// server is closed by tb.Cleanup and a request arriving with no turn queued
// is reported through tb.Errorf; tb may be nil (in a command).
func New(tb TB) *Server {
	if tb != nil {
		tb.Helper()
	}
	s := newServer(tb)
	s.hs = httptest.NewServer(s)
	if tb != nil {
		tb.Cleanup(func() { _ = s.Close() })
	}
	return s
}

// Listen starts a server on addr (e.g. "127.0.0.1:8765"), for commands that
// need a fixed port.
func Listen(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("scripted: listen: %w", err)
	}
	s := newServer(nil)
	s.hs = httptest.NewUnstartedServer(s)
	_ = s.hs.Listener.Close()
	s.hs.Listener = ln
	s.hs.Start()
	return s, nil
}

func newServer(tb TB) *Server {
	return &Server{tb: tb, done: make(chan struct{})}
}

// URL is the server's root, e.g. "http://127.0.0.1:34567". It is the base
// URL of the Anthropic SDK.
func (s *Server) URL() string { return s.hs.URL }

// OpenAIURL is the base URL for OpenAI clients: URL()+"/v1".
func (s *Server) OpenAIURL() string { return s.hs.URL + "/v1" }

// AnthropicURL is the base URL for Anthropic clients: URL().
func (s *Server) AnthropicURL() string { return s.hs.URL }

// Enqueue appends turns to the queue.
func (s *Server) Enqueue(turns ...Turn) {
	s.mu.Lock()
	s.turns = append(s.turns, turns...)
	s.mu.Unlock()
}

// Pending returns how many queued turns have not been served.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns)
}

// Requests returns a copy of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Last returns the last request received; ok is false if there is none.
func (s *Server) Last() (r Request, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return Request{}, false
	}
	return s.requests[len(s.requests)-1], true
}

// LastUserText is the text of the last user message of the last request
// ("" before any).
func (s *Server) LastUserText() string {
	r, _ := s.Last()
	return r.LastUserText()
}

// Close ends stalled and delayed streams, then shuts the server down and
// waits for its handlers. A second call returns net.ErrClosed.
func (s *Server) Close() error {
	err := net.ErrClosed
	s.closeOnce.Do(func() {
		close(s.done)
		s.hs.CloseClientConnections()
		s.hs.Close()
		err = nil
	})
	return err
}

const maxBody = 64 << 20

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := formatOf(r.URL.Path)
	if f == nil {
		http.Error(w, "scripted: no such endpoint: "+r.URL.Path, http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "scripted: POST only", http.StatusMethodNotAllowed)
		return
	}
	req, ok := readRequest(w, r, f)
	if !ok {
		return
	}
	turn, ok := s.next(w, f, &req)
	if !ok || refuse(w, f, turn) {
		return
	}
	if turn.Model == "" {
		turn.Model = "scripted-model"
		if m, _ := req.Body["model"].(string); m != "" {
			turn.Model = m
		}
	}
	sw := &sseWriter{w: w, rc: http.NewResponseController(w), srv: s, r: r}
	defer s.timed(req.N, sw)
	if stream, _ := req.Body["stream"].(bool); !stream {
		if whole, ok := f.(wholeFormat); ok {
			whole.whole(sw, turn, req)
			return
		}
		f.writeError(w, http.StatusBadRequest, "invalid_request_error", "scripted: only streaming requests are supported", "")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f.stream(sw, turn, req)
}

// formatOf is the format of the API served at path, or nil.
func formatOf(path string) format {
	switch strings.TrimSuffix(path, "/") {
	case "/v1/chat/completions", "/chat/completions":
		return openaiFormat{}
	case "/v1/messages", "/messages":
		return anthropicFormat{}
	}
	return nil
}

// readRequest reads r's body as a JSON object, answering r with an error
// when it cannot.
func readRequest(w http.ResponseWriter, r *http.Request, f format) (Request, bool) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "scripted: read body: "+err.Error(), http.StatusBadRequest)
		return Request{}, false
	}
	req := Request{Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw, Received: time.Now()}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&req.Body); err != nil {
		f.writeError(w, http.StatusBadRequest, "invalid_request_error", "scripted: body is not a JSON object: "+err.Error(), "")
		return Request{}, false
	}
	return req, true
}

// next numbers and records req and takes the next queued turn for it.
// It answers req with an error itself, and reports false, when the real
// API would refuse the body or no turn is queued (reported to the test
// too).
func (s *Server) next(w http.ResponseWriter, f format, req *Request) (Turn, bool) {
	s.mu.Lock()
	req.N = len(s.requests) + 1
	s.requests = append(s.requests, *req)
	if why := f.refusal(req.Body); why != "" {
		s.mu.Unlock()
		f.writeError(w, http.StatusBadRequest, "invalid_request_error", why, "")
		return Turn{}, false
	}
	var turn Turn
	ok := len(s.turns) > 0
	if ok {
		turn = s.turns[0]
		s.turns = s.turns[1:]
	}
	s.mu.Unlock()
	if !ok {
		msg := fmt.Sprintf("scripted: no turn queued for request %d (%s)", req.N, req.Path)
		if s.tb != nil {
			s.tb.Errorf("%s", msg)
		}
		f.writeError(w, http.StatusInternalServerError, "scripted_exhausted", msg, "")
	}
	return turn, ok
}

// refuse answers with the error a turn scripts instead of an answer, if
// it does (a context-window refusal in the API's words, an HTTP status),
// and reports whether it did.
func refuse(w http.ResponseWriter, f format, turn Turn) bool {
	if turn.ContextExceeded {
		if _, anthropic := f.(anthropicFormat); anthropic {
			f.writeError(w, http.StatusBadRequest, "invalid_request_error", "prompt is too long: 210473 tokens > 200000 maximum", "")
		} else {
			f.writeError(w, http.StatusBadRequest, "context_length_exceeded", "This model's maximum context length is 32768 tokens. "+
				"However, your messages resulted in 41250 tokens. Please reduce the length of the messages.", "")
		}
		return true
	}
	if turn.Status != 0 && turn.Status != http.StatusOK {
		f.writeError(w, turn.Status, turn.ErrorType, turn.ErrorMessage, turn.RetryAfter)
		return true
	}
	return false
}

// timed records when request n's answer began and ended.
func (s *Server) timed(n int, sw *sseWriter) {
	done := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if n >= 1 && n <= len(s.requests) {
		s.requests[n-1].FirstContent, s.requests[n-1].Done = sw.first, done
	}
}

// format writes one API's wire format.
type format interface {
	// refusal is why the real API would refuse a request's body ("": it
	// takes it).
	refusal(body map[string]any) string
	writeError(w http.ResponseWriter, status int, typ, msg, retryAfter string)
	stream(sw *sseWriter, t Turn, req Request)
}

// wholeFormat is a format that also answers requests that do not stream.
type wholeFormat interface {
	whole(sw *sseWriter, t Turn, req Request)
}

// sseWriter writes server-sent events and tells when to stop.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	srv *Server
	r   *http.Request
	err error // the first write error: the client went away
	// first is when the answer's first content went out (content marks it).
	first time.Time
}

// content marks the answer's first piece of content, if it is.
func (sw *sseWriter) content() {
	if sw.first.IsZero() {
		sw.first = time.Now()
	}
}

func (sw *sseWriter) event(name string, v any) {
	if sw.err != nil {
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("scripted: marshal event: %v", err)) // our own values: a bug
	}
	sw.line(name, string(data))
}

func (sw *sseWriter) line(name, data string) {
	if sw.err != nil {
		return
	}
	var b strings.Builder
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: " + data + "\n\n")
	sw.write(b.String())
}

func (sw *sseWriter) write(s string) {
	if sw.err != nil {
		return
	}
	if _, err := io.WriteString(sw.w, s); err != nil {
		sw.err = err
		return
	}
	if err := sw.rc.Flush(); err != nil {
		sw.err = err
	}
}

// wait sleeps d (forever if d < 0) unless the client leaves or the server
// closes; it reports whether streaming should go on.
func (sw *sseWriter) wait(d time.Duration) bool {
	var timer <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-timer:
		return sw.err == nil
	case <-sw.r.Context().Done():
		return false
	case <-sw.srv.done:
		return false
	}
}

func (sw *sseWriter) ok() bool { return sw.err == nil }

// control plays the steps that every format plays alike: a delay, a
// stall, a disconnect and a raw line. It reports whether st was one of
// them, and whether the stream goes on after it.
func (sw *sseWriter) control(st Step) (played, goOn bool) {
	switch st.kind {
	case stepDelay:
		return true, sw.wait(st.delay)
	case stepStall:
		sw.wait(-1)
		return true, false
	case stepDisconnect:
		sw.disconnect()
		return true, true
	case stepRaw:
		sw.line("", st.pieces[0])
		return true, true
	}
	return false, true
}

// disconnect drops the connection mid-response.
func (sw *sseWriter) disconnect() {
	panic(http.ErrAbortHandler)
}

// defaultError fills in an error type and message for an HTTP status.
func defaultError(status int, typ, msg string, anthropic bool) (string, string) {
	if typ == "" {
		switch {
		case status == http.StatusTooManyRequests:
			typ = "rate_limit_error"
		case status == 529:
			typ = "overloaded_error"
		case status == http.StatusUnauthorized:
			typ = "authentication_error"
		case status >= 500:
			typ = "api_error"
		default:
			typ = "invalid_request_error"
		}
		if !anthropic && status >= 500 {
			typ = "server_error"
		}
	}
	if msg == "" {
		text := http.StatusText(status)
		if status == 529 {
			text = "Overloaded" // Anthropic's own status
		}
		msg = fmt.Sprintf("scripted %d %s", status, text)
	}
	return typ, msg
}

func stopWords(reason string) (openai, anthropic string) {
	switch reason {
	case "end_turn":
		return "stop", "end_turn"
	case "tool_use":
		return "tool_calls", "tool_use"
	case "max_tokens":
		return "length", "max_tokens"
	}
	return reason, reason
}

// turnStop is the stop reason of a turn in normalised words.
func turnStop(t Turn) string {
	reason := ""
	calls := false
	for _, st := range t.Steps {
		switch st.kind {
		case stepStop:
			reason = st.pieces[0]
		case stepToolCall:
			calls = true
		}
	}
	if reason != "" {
		return reason
	}
	if calls {
		return "tool_use"
	}
	return "end_turn"
}

func turnUsage(t Turn) (Usage, bool) {
	for _, st := range t.Steps {
		if st.kind == stepUsage {
			return st.usage, true
		}
	}
	return Usage{}, false
}
