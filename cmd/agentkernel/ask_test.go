package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/tests/scripted"
)

// askEnv points ask at a private store, no config file, the scripted model
// server (as openai:gpt-4.1, which has a price) and a workspace of its own,
// which it returns.
func askEnv(t *testing.T) (*scripted.Server, string) {
	t.Helper()
	ws := t.TempDir()
	t.Setenv("AGENTKERNEL_DATA_DIR", t.TempDir())
	t.Setenv("AGENTKERNEL_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	srv := scripted.New(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("OPENAI_BASE_URL", srv.OpenAIURL())
	t.Chdir(ws)
	return srv, ws
}

const askModel = "openai:gpt-4.1"

// event is one line of stream-json output.
type event map[string]any

func (e event) str(k string) string { s, _ := e[k].(string); return s }

func (e event) kind() string {
	if e.str("type") == "system" {
		return "system/" + e.str("subtype")
	}
	return e.str("type")
}

// message returns an assistant or user event's message.
func (e event) message() map[string]any { m, _ := e["message"].(map[string]any); return m }

// blocks returns the message's content blocks.
func (e event) blocks() []map[string]any {
	var out []map[string]any
	content, _ := e.message()["content"].([]any)
	for _, b := range content {
		m, _ := b.(map[string]any)
		out = append(out, m)
	}
	return out
}

func parseEvents(t *testing.T, out string) []event {
	t.Helper()
	var evs []event
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
		evs = append(evs, e)
	}
	return evs
}

// ask runs agentkernel ask with stdin and returns its stdout and error.
func ask(t *testing.T, stdin io.Reader, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := runAsk(append([]string{"--model", askModel}, args...), stdin, &stdout, &stderr)
	t.Logf("stderr:\n%s", stderr.String())
	return stdout.String(), err
}

func kinds(evs []event) []string {
	var ks []string
	for _, e := range evs {
		if e.kind() != "system/decision" && e.kind() != "system/ask" && e.kind() != "system/checkpoint" {
			ks = append(ks, e.kind())
		}
	}
	return ks
}

// TestAskStreamJSONToolCall: init first, the model's tool call as an
// assistant message, its result as a user message, the answer, and the
// result last, all of the same session, in Claude Code's field names.
func TestAskStreamJSONToolCall(t *testing.T) {
	srv, ws := askEnv(t)
	srv.Enqueue(
		scripted.Reply(scripted.Text("Writing it."), scripted.ToolCall("c1", "write_file", `{"path": "a.txt", "content": "hi"}`),
			scripted.UsageStep(scripted.Usage{Input: 100, Output: 10})),
		scripted.Reply(scripted.Text("Done."), scripted.UsageStep(scripted.Usage{Input: 120, Output: 5})),
	)
	out, err := ask(t, strings.NewReader(""), "Write a.txt", "--approve", "all", "--output-format", "stream-json")
	if err != nil {
		t.Fatal(err)
	}
	evs := parseEvents(t, out)
	want := []string{"system/init", "assistant", "user", "assistant", "result"}
	if got := kinds(evs); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("events %v, want %v:\n%s", got, want, out)
	}
	init := evs[0]
	sid := init.str("session_id")
	if sid == "" || init.str("model") != askModel || init.str("cwd") != ws || init.str("permissionMode") != "default" {
		t.Errorf("init: %v", init)
	}
	for _, e := range evs {
		if e.str("session_id") != sid || e.str("uuid") == "" {
			t.Errorf("event without the session or a uuid: %v", e)
		}
	}
	var first, result event
	for _, e := range evs {
		switch e.kind() {
		case "assistant":
			if first == nil {
				first = e
			}
		case "result":
			result = e
		}
	}
	m := first.message()
	if m["type"] != "message" || m["role"] != "assistant" || m["model"] != "gpt-4.1" || m["stop_reason"] != "tool_use" ||
		!strings.HasPrefix(m["id"].(string), "msg_") {
		t.Errorf("assistant message: %v", m)
	}
	if u := m["usage"].(map[string]any); u["input_tokens"] != 100.0 || u["output_tokens"] != 10.0 {
		t.Errorf("usage %v", u)
	}
	b := first.blocks()
	if len(b) != 2 || b[0]["type"] != "text" || b[0]["text"] != "Writing it." || b[1]["type"] != "tool_use" ||
		b[1]["id"] != "c1" || b[1]["name"] != "write_file" || b[1]["input"].(map[string]any)["path"] != "a.txt" {
		t.Errorf("assistant content %v", b)
	}
	var user event
	for _, e := range evs {
		if e.kind() == "user" {
			user = e
		}
	}
	if r := user.blocks(); len(r) != 1 || r[0]["type"] != "tool_result" || r[0]["tool_use_id"] != "c1" || user.message()["role"] != "user" {
		t.Errorf("user content %v", r)
	}
	if result.str("subtype") != "success" || result["is_error"] != false || result.str("result") != "Done." ||
		result["num_turns"] != 2.0 || result["total_cost_usd"].(float64) <= 0 {
		t.Errorf("result %v", result)
	}
	if d, ok := result["permission_denials"].([]any); !ok || len(d) != 0 {
		t.Errorf("permission_denials %v", result["permission_denials"])
	}
	for _, k := range []string{"duration_ms", "duration_api_ms", "usage", "modelUsage"} {
		if _, ok := result[k]; !ok {
			t.Errorf("result without %s", k)
		}
	}
}

// TestAskPartialMessages: --include-partial-messages streams the text as
// deltas, which put together are the final message's text.
func TestAskPartialMessages(t *testing.T) {
	srv, _ := askEnv(t)
	srv.Enqueue(scripted.Reply(scripted.Text("The answer ", "is ", "forty-", "two.")))
	out, err := ask(t, strings.NewReader(""), "What is it?", "--output-format", "stream-json", "--include-partial-messages")
	if err != nil {
		t.Fatal(err)
	}
	var deltas []string
	var seen []string
	final := ""
	for _, e := range parseEvents(t, out) {
		switch e.kind() {
		case "stream_event":
			ev := e["event"].(map[string]any)
			seen = append(seen, ev["type"].(string))
			if ev["type"] == "content_block_delta" {
				d := ev["delta"].(map[string]any)
				if d["type"] != "text_delta" {
					t.Errorf("delta %v", d)
				}
				deltas = append(deltas, d["text"].(string))
			}
		case "assistant":
			final = e.blocks()[0]["text"].(string)
		}
	}
	if final != "The answer is forty-two." || strings.Join(deltas, "") != final {
		t.Fatalf("deltas %q do not make the final text %q", deltas, final)
	}
	if len(deltas) < 2 {
		t.Fatalf("the text came in %d delta(s), want the pieces: %q", len(deltas), deltas)
	}
	want := "message_start content_block_start"
	if got := strings.Join(seen[:2], " "); got != want || seen[len(seen)-1] != "message_stop" {
		t.Errorf("stream events %v", seen)
	}
}

// lineWriter hands each line written to it to a channel.
type lineWriter struct {
	buf   bytes.Buffer
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.WriteString(line)
			return len(p), nil
		}
		w.lines <- strings.TrimSpace(line)
	}
}

// TestAskStreamJSONInput: user messages from stdin are turns of one
// session; the first turn's ask is a can_use_tool control request,
// answered by a control_response line; EOF ends the run.
func TestAskStreamJSONInput(t *testing.T) {
	srv, ws := askEnv(t)
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("c1", "write_file", `{"path": "a.txt", "content": "hi"}`)),
		scripted.Reply(scripted.Text("Written.")),
		scripted.Reply(scripted.Text("Second answer.")),
	)
	a := startAsk(t)
	a.user("Write a.txt")
	results := 0
	evs, err := a.events(func(e event) {
		switch e.kind() {
		case "control_request":
			req := e["request"].(map[string]any)
			if req["subtype"] != "can_use_tool" || req["tool_name"] != "write_file" || req["tool_use_id"] != "c1" ||
				req["input"].(map[string]any)["content"] != "hi" {
				t.Errorf("control request %v", req)
			}
			a.answer(e, map[string]any{"behavior": "allow"})
		case "result":
			results++
			if results == 1 {
				a.user([]any{map[string]any{"type": "text", "text": "And now?"}})
			} else {
				a.in.Close()
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var res []event
	for _, e := range evs {
		if e.kind() == "result" {
			res = append(res, e)
		}
	}
	if len(res) != 2 || res[0].str("result") != "Written." || res[1].str("result") != "Second answer." ||
		res[0].str("session_id") != res[1].str("session_id") {
		t.Fatalf("results %v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "hi" {
		t.Errorf("a.txt = %q: the allowed call did not run", b)
	}
	last, _ := srv.Last()
	if !strings.Contains(string(last.Raw), "And now?") || !strings.Contains(string(last.Raw), "Write a.txt") {
		t.Errorf("the second prompt was not sent in the same session: %s", last.Raw)
	}
}

// TestAskStreamJSONInputBadLine: a line that is not a user message or a
// control_response ends the run with an error naming the line.
func TestAskStreamJSONInputBadLine(t *testing.T) {
	askEnv(t)
	for _, tc := range []struct{ in, want string }{
		{"not json\n", "stdin line 1: not a JSON object"},
		{`{"type":"user","message":{"role":"user","content":[{"type":"image"}]}}` + "\n", `an image block needs "source"`},
		{`{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"R0lGODlhAQABAAAAACw="}}]}}` + "\n", "not a PNG image"},
		{`{"type":"user","message":{"role":"user","content":[{"type":"document"}]}}` + "\n", `"document" blocks are not supported`},
		{"\n" + `{"type":"interrupt"}` + "\n", `stdin line 2: type "interrupt"`},
	} {
		_, err := ask(t, strings.NewReader(tc.in), "--input-format", "stream-json", "--output-format", "stream-json")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, err := ask(t, strings.NewReader(""), "--input-format", "stream-json"); err == nil ||
		!strings.Contains(err.Error(), "needs --output-format stream-json") {
		t.Errorf("input stream-json with text output: %v", err)
	}
}

// TestAskLimits: --max-turns and --max-budget-usd stop the run between two
// model requests, with their result subtypes and a failing exit.
func TestAskLimits(t *testing.T) {
	srv, _ := askEnv(t)
	call := scripted.Reply(scripted.ToolCall("c1", "write_file", `{"path": "a.txt", "content": "hi"}`),
		scripted.UsageStep(scripted.Usage{Input: 1000, Output: 100}))
	for _, tc := range []struct {
		flag, value, subtype string
	}{
		{"--max-turns", "1", "error_max_turns"},
		{"--max-budget-usd", "0.001", "error_max_budget_usd"}, // the first request costs $0.0028
	} {
		t.Run(tc.subtype, func(t *testing.T) {
			before := len(srv.Requests())
			srv.Enqueue(call)
			out, err := ask(t, strings.NewReader(""), "Write", "--approve", "all", "--output-format", "stream-json", tc.flag, tc.value)
			if err == nil {
				t.Fatal("the stopped run exited 0")
			}
			evs := parseEvents(t, out)
			res := evs[len(evs)-1]
			if res.kind() != "result" || res.str("subtype") != tc.subtype || res["is_error"] != true || res["num_turns"] != 1.0 {
				t.Fatalf("result %v", res)
			}
			if n := len(srv.Requests()) - before; n != 1 {
				t.Errorf("%d model requests, want 1", n)
			}
			// The call ran and its result is in the history: the session
			// can go on.
			if ks := strings.Join(kinds(evs), " "); !strings.Contains(ks, "assistant user system/error result") {
				t.Errorf("events %s", ks)
			}
			srv.Enqueue(scripted.Reply(scripted.Text("Later.")))
			if _, err := ask(t, strings.NewReader(""), "Go on", "--continue", "--output-format", "json"); err != nil {
				t.Fatalf("continuing after the stop: %v", err)
			}
		})
	}
}

// TestAskDenialFails: a denied tool call makes ask fail, although the model
// answered, and the result lists the denial with the call.
func TestAskDenialFails(t *testing.T) {
	srv, ws := askEnv(t)
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("c1", "write_file", `{"path": "a.txt", "content": "hi"}`)),
		scripted.Reply(scripted.Text("I was not allowed.")),
	)
	out, err := ask(t, strings.NewReader(""), "Write a.txt", "--approve", "none", "--output-format", "json")
	if err == nil || !strings.Contains(err.Error(), "denied (write_file)") {
		t.Fatalf("error %v, want a denial", err)
	}
	var res struct {
		Subtype string `json:"subtype"`
		IsError bool   `json:"is_error"`
		Result  string `json:"result"`
		Denials []struct {
			ToolName  string            `json:"tool_name"`
			ToolUseID string            `json:"tool_use_id"`
			ToolInput map[string]string `json:"tool_input"`
			Reason    string            `json:"reason"`
		} `json:"permission_denials"`
	}
	if err := json.NewDecoder(bufio.NewReader(strings.NewReader(out))).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if res.Subtype != "success" || res.Result != "I was not allowed." || len(res.Denials) != 1 {
		t.Fatalf("result %+v", res)
	}
	d := res.Denials[0]
	if d.ToolName != "write_file" || d.ToolUseID != "c1" || d.ToolInput["path"] != "a.txt" || !strings.Contains(d.Reason, "policy:none") {
		t.Errorf("denial %+v", d)
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); !os.IsNotExist(err) {
		t.Errorf("the denied call ran: %v", err)
	}
}

// askSession is ask with --input-format stream-json, run on a pipe.
type askSession struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *lineWriter
	done chan error
}

func startAsk(t *testing.T, args ...string) *askSession {
	t.Helper()
	inR, inW := io.Pipe()
	s := &askSession{t: t, in: inW, out: &lineWriter{lines: make(chan string, 100)}, done: make(chan error, 1)}
	go func() {
		var stderr bytes.Buffer
		s.done <- runAsk(append([]string{"--model", askModel, "--input-format", "stream-json", "--output-format", "stream-json"}, args...),
			inR, s.out, &stderr)
		close(s.out.lines)
		inR.Close() // ask stopped reading: a write must not block
	}()
	return s
}

// send writes one line to ask's stdin.
func (s *askSession) send(v any) {
	b, _ := json.Marshal(v)
	if _, err := fmt.Fprintf(s.in, "%s\n", b); err != nil {
		s.t.Errorf("ask stopped reading: %v", err)
	}
}

func (s *askSession) user(content any) {
	s.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": content}})
}

func (s *askSession) answer(req event, response map[string]any) {
	s.send(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": req["request_id"], "response": response}})
}

// events calls f with each output event until ask ends, and returns all
// of them and ask's error.
func (s *askSession) events(f func(event)) ([]event, error) {
	var evs []event
	for line := range s.out.lines {
		var e event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			s.t.Fatalf("not JSON: %q", line)
		}
		evs = append(evs, e)
		f(e)
	}
	return evs, <-s.done
}

// TestAskStreamJSONBudgetAcrossPrompts: --max-budget-usd is the run's: a
// prompt that comes after it is spent is not sent to the model.
func TestAskStreamJSONBudgetAcrossPrompts(t *testing.T) {
	srv, _ := askEnv(t)
	srv.Enqueue(scripted.Reply(scripted.ToolCall("c1", "write_file", `{"path": "a.txt", "content": "hi"}`),
		scripted.UsageStep(scripted.Usage{Input: 1000, Output: 100})))
	a := startAsk(t, "--approve", "all", "--max-budget-usd", "0.001")
	a.user("First")
	a.user("Second")
	a.in.Close()
	evs, err := a.events(func(event) {})
	if err == nil {
		t.Fatal("the stopped run exited 0")
	}
	var res []event
	for _, e := range evs {
		if e.kind() == "result" {
			res = append(res, e)
		}
	}
	if len(res) != 2 {
		t.Fatalf("%d results, want one per prompt", len(res))
	}
	for i, r := range res {
		if r.str("subtype") != "error_max_budget_usd" || r["total_cost_usd"].(float64) < 0.001 || r["num_turns"] != float64(1-i) {
			t.Errorf("result %d: %v", i, r)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: the second prompt was sent over budget", n)
	}
}

// TestAskStreamJSONFollowupAndDenial: a followup question is answered
// by a control_response's answer, and a can_use_tool denied with a message
// tells the model the message; the denial fails the run.
func TestAskStreamJSONFollowupAndDenial(t *testing.T) {
	srv, ws := askEnv(t)
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("q1", "ask_followup_question", `{"question": "Which file?", "suggestions": ["a.txt", "b.txt"]}`)),
		scripted.Reply(scripted.ToolCall("c1", "write_file", `{"path": "a.txt", "content": "hi"}`)),
		scripted.Reply(scripted.Text("I left it.")),
	)
	a := startAsk(t)
	a.user("Write a file")
	var res event
	_, err := a.events(func(e event) {
		switch e.kind() {
		case "control_request":
			req := e["request"].(map[string]any)
			answer := map[string]any{"behavior": "deny", "message": "not that file"}
			if req["subtype"] == "followup" {
				if req["question"] != "Which file?" || fmt.Sprint(req["options"]) != "[a.txt b.txt]" {
					t.Errorf("followup request %v", req)
				}
				answer = map[string]any{"answer": "a.txt, please"}
			}
			a.answer(e, answer)
		case "result":
			res = e
			a.in.Close()
		}
	})
	if err == nil || !strings.Contains(err.Error(), "denied (write_file)") {
		t.Fatalf("error %v, want the denial", err)
	}
	if d, _ := res["permission_denials"].([]any); len(d) != 1 || res.str("subtype") != "success" {
		t.Errorf("result %v", res)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || !strings.Contains(string(reqs[1].Raw), "a.txt, please") || !strings.Contains(string(reqs[2].Raw), "not that file") {
		t.Errorf("the answers did not reach the model: %d requests", len(reqs))
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); !os.IsNotExist(err) {
		t.Errorf("the denied call ran: %v", err)
	}
}

// TestAskBlockedPromptFails: a prompt that a UserPromptSubmit hook blocks
// never reaches the model, and the run fails with the hook's reason.
func TestAskBlockedPromptFails(t *testing.T) {
	srv, _ := askEnv(t)
	cfg := filepath.Join(t.TempDir(), "config.json")
	hook := `{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'not now' >&2; exit 2"}]}]}}`
	if err := os.WriteFile(cfg, []byte(hook), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENTKERNEL_CONFIG", cfg)
	out, err := ask(t, strings.NewReader(""), "Anything?", "--output-format", "json")
	if err == nil || !strings.Contains(err.Error(), "hook blocked the prompt: not now") {
		t.Fatalf("error %v, want the blocked prompt", err)
	}
	var res event
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.str("subtype") != "error_during_execution" || res["is_error"] != true {
		t.Errorf("result %v", res)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the blocked prompt reached the model (%d requests)", n)
	}
}

// TestAskStreamJSONInputImage: an image block of a stream-json user message
// goes to a vision model as image content, with the text.
func TestAskStreamJSONInputImage(t *testing.T) {
	srv, _ := askEnv(t)
	srv.Enqueue(scripted.Reply(scripted.Text("A dot.")))
	const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	in := `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"What is this?"},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + pixel + `"}}]}}` + "\n"
	out, err := ask(t, strings.NewReader(in), "--input-format", "stream-json", "--output-format", "stream-json")
	if err != nil {
		t.Fatal(err)
	}
	if evs := parseEvents(t, out); evs[len(evs)-1].kind() != "result" || evs[len(evs)-1]["is_error"] != false {
		t.Fatalf("result: %v", evs[len(evs)-1])
	}
	last, _ := srv.Last()
	raw := string(last.Raw)
	if !strings.Contains(raw, `"image_url"`) || !strings.Contains(raw, "data:image/png;base64,"+pixel) || !strings.Contains(raw, "What is this?") {
		t.Errorf("the model did not get the image with the text: %s", raw)
	}
}
