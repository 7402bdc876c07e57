package streamjson

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/messages"
)

// Input reads ask's stdin in --input-format stream-json: one JSON
// object per line: a user message (a turn of the session), a
// control_response that answers one of our control_requests (an ask), or
// a control_request of the client's (interrupt, as Claude Code's SDK sends
// it: the running turn is cancelled). It
// reads on a goroutine of its own, which ends at EOF, at a bad line (the
// error is kept in Err), or when stdin fails; Close does not stop a read in
// progress (stdin cannot be cancelled), and the process's exit ends it.
type Input struct {
	more chan struct{} // signalled (cap 1) when a prompt is queued or the input ends
	warn func(string)

	mu      sync.Mutex
	prompts []agent.Prompt                // user messages not yet taken
	waiting map[string]chan controlAnswer // by request_id
	done    bool                          // no more lines
	err     error
	out     *Writer // where the client's control_requests are answered
	handle  ControlHandler
	early   []earlyControl // control_requests that came before OnControl
}

// earlyControl is a control_request held until there is a handler.
type earlyControl struct {
	id, subtype string
	request     json.RawMessage
}

// maxEarly bounds the control_requests held before OnControl.
const maxEarly = 64

// ControlHandler carries out a control_request of the client's: its
// subtype and the whole request object. The map is the success
// response's "response" (nil: none); an error is an error response.
type ControlHandler func(subtype string, request json.RawMessage) (map[string]any, error)

// OnControl makes the client's control_requests go to handle, answered on
// out. Those that came before it (a client that sends one first thing)
// are held, up to maxEarly, and handled now.
func (in *Input) OnControl(out *Writer, handle ControlHandler) {
	in.mu.Lock()
	in.out, in.handle = out, handle
	early := in.early
	in.early = nil
	in.mu.Unlock()
	for _, c := range early {
		in.control(c.id, c.subtype, c.request)
	}
}

// controlAnswer is the response of a control_response line.
type controlAnswer struct {
	ok       bool            // subtype success (else error)
	response json.RawMessage // the success's response
}

// maxInputLine bounds one line of stream-json input.
const maxInputLine = 16 << 20

func NewInput(r io.Reader, warn func(string)) *Input {
	in := &Input{more: make(chan struct{}, 1), waiting: map[string]chan controlAnswer{}, warn: warn}
	go in.read(r) // ends with stdin; see the type's comment
	return in
}

func (in *Input) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxInputLine)
	n := 0
	var err error
	for err == nil && sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if err = in.line([]byte(line)); err != nil {
			err = fmt.Errorf("stdin line %d: %w", n, err)
		}
	}
	if err == nil && sc.Err() != nil {
		err = fmt.Errorf("stdin line %d: %w", n+1, sc.Err())
	}
	in.mu.Lock()
	in.done, in.err = true, err
	for id, ch := range in.waiting {
		close(ch)
		delete(in.waiting, id)
	}
	in.mu.Unlock()
	in.signal()
}

func (in *Input) signal() {
	select {
	case in.more <- struct{}{}:
	default:
	}
}

// Next returns the next user message; false when the input has ended (or
// ctx did) and every message was taken. Messages that arrive while a turn
// runs wait their turn; reading goes on meanwhile, so that the running
// turn's asks can be answered.
func (in *Input) Next(ctx context.Context) (agent.Prompt, bool) {
	for {
		in.mu.Lock()
		if len(in.prompts) > 0 {
			p := in.prompts[0]
			in.prompts = in.prompts[1:]
			in.mu.Unlock()
			return p, true
		}
		done := in.done
		in.mu.Unlock()
		if done {
			return agent.Prompt{}, false
		}
		select {
		case <-in.more:
		case <-ctx.Done():
			return agent.Prompt{}, false
		}
	}
}

// Err returns what ended the input early: a bad line, or a failed read.
func (in *Input) Err() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.err
}

// line takes one line of input.
func (in *Input) line(b []byte) error {
	var l struct {
		Type    string `json:"type"`
		Message *struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"message"`
		Response *struct {
			Subtype   string          `json:"subtype"`
			RequestID string          `json:"request_id"`
			Response  json.RawMessage `json:"response"`
			Error     string          `json:"error"`
		} `json:"response"`
		RequestID string          `json:"request_id"`
		Request   json.RawMessage `json:"request"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	switch l.Type {
	case "user":
		if l.Message == nil {
			return errors.New(`a user line needs "message": {"role": "user", "content": …}`)
		}
		if l.Message.Role != "" && l.Message.Role != "user" {
			return fmt.Errorf("message.role %q: want \"user\"", l.Message.Role)
		}
		p, err := userPrompt(l.Message.Content)
		if err != nil {
			return err
		}
		in.mu.Lock()
		in.prompts = append(in.prompts, p)
		in.mu.Unlock()
		in.signal()
	case "control_response":
		r := l.Response
		if r == nil || r.RequestID == "" {
			return errors.New(`a control_response needs "response": {"subtype", "request_id", …}`)
		}
		if r.Subtype != "success" && r.Subtype != "error" {
			return fmt.Errorf("response.subtype %q: want \"success\" or \"error\"", r.Subtype)
		}
		in.mu.Lock()
		ch, ok := in.waiting[r.RequestID]
		delete(in.waiting, r.RequestID)
		in.mu.Unlock()
		if !ok {
			in.warn(fmt.Sprintf("ask: a control_response for %q, which no request waits for, was ignored", r.RequestID))
			return nil
		}
		ch <- controlAnswer{ok: r.Subtype == "success", response: r.Response}
	case "control_request":
		var req struct {
			Subtype string `json:"subtype"`
		}
		if l.RequestID == "" || json.Unmarshal(l.Request, &req) != nil || req.Subtype == "" {
			return errors.New(`a control_request needs "request_id" and "request": {"subtype", …}`)
		}
		in.control(l.RequestID, req.Subtype, l.Request)
	case "":
		return errors.New(`no "type" (want "user", "control_request" or "control_response")`)
	default:
		return fmt.Errorf("type %q: want \"user\", \"control_request\" or \"control_response\"", l.Type)
	}
	return nil
}

// control answers a control_request of the client's through the handler
// (on its own goroutine: an interrupt must not wait for the reading of the
// next line, nor a rewind hold up an ask's answer).
func (in *Input) control(id, subtype string, request json.RawMessage) {
	in.mu.Lock()
	out, handle := in.out, in.handle
	if out == nil {
		held := len(in.early) < maxEarly
		if held {
			in.early = append(in.early, earlyControl{id: id, subtype: subtype, request: request})
		}
		in.mu.Unlock()
		if !held {
			in.warn(fmt.Sprintf("ask: control_request %q (%s) came before the session was ready, after %d others; ignored", id, subtype, maxEarly))
		}
		return
	}
	in.mu.Unlock()
	go func() {
		resp, err := handle(subtype, request)
		if err != nil {
			out.Emit("control_response", map[string]any{"response": map[string]any{
				"subtype": "error", "request_id": id, "error": err.Error()}})
			return
		}
		r := map[string]any{"subtype": "success", "request_id": id}
		if resp != nil {
			r["response"] = resp
		}
		out.Emit("control_response", map[string]any{"response": r})
	}()
}

// userPrompt is a user message's content: a string, or text blocks (joined
// by blank lines) and image blocks (base64 sources, as Anthropic's API and
// Claude Code take them).
func userPrompt(raw json.RawMessage) (agent.Prompt, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if strings.TrimSpace(s) == "" {
			return agent.Prompt{}, errors.New("message.content is empty")
		}
		return agent.Prompt{Text: s}, nil
	}
	var blocks []struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Source *struct {
			Type      string `json:"type"`
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
		} `json:"source"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return agent.Prompt{}, errors.New("message.content: want a string or an array of text and image blocks")
	}
	var p agent.Prompt
	var parts []string
	for i, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image":
			if b.Source == nil || b.Source.Type != "base64" {
				return agent.Prompt{}, fmt.Errorf(`message.content[%d]: an image block needs "source": {"type": "base64", "media_type", "data"}`, i)
			}
			if len(p.Images) == agent.MaxAttachedImages {
				return agent.Prompt{}, fmt.Errorf("message.content[%d]: at most %d images go with one message", i, agent.MaxAttachedImages)
			}
			im, err := agent.ImageFromDataURL("data:" + b.Source.MediaType + ";base64," + b.Source.Data)
			if err != nil {
				return agent.Prompt{}, fmt.Errorf("message.content[%d]: %w", i, err)
			}
			p.Images = append(p.Images, im)
		default:
			return agent.Prompt{}, fmt.Errorf("message.content[%d]: %q blocks are not supported (only text and image)", i, b.Type)
		}
	}
	p.Text = strings.Join(parts, "\n\n")
	if strings.TrimSpace(p.Text) == "" && len(p.Images) == 0 {
		return agent.Prompt{}, errors.New("message.content is empty")
	}
	return p, nil
}

// request registers a control request id; the channel gets its answer,
// or is closed when the input ends first.
func (in *Input) request(id string) (<-chan controlAnswer, func()) {
	ch := make(chan controlAnswer, 1)
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.done {
		close(ch)
		return ch, func() {}
	}
	in.waiting[id] = ch
	return ch, func() {
		in.mu.Lock()
		delete(in.waiting, id)
		in.mu.Unlock()
	}
}

// approver answers the agent's asks through the control protocol of
// Claude Code's SDK: a control_request line on stdout, a control_response
// line on stdin. An approval is a can_use_tool request; a followup question
// is our "followup" request. When stdin ends first the ask is denied.
func (in *Input) Approver(out *Writer, tr *Transcript) agent.Approver {
	var mu sync.Mutex
	n := 0
	return func(ctx context.Context, ask messages.UIMessage) (agent.Response, bool) {
		deny := agent.Response{Kind: agent.ResponseNo, By: "stdin"}
		var req map[string]any
		switch ask.Ask {
		case messages.AskCommand, messages.AskTool:
			req = map[string]any{"subtype": "can_use_tool", "ask": ask.Ask, "description": DescribeAsk(ask)}
			if c, ok := tr.call(ask); ok {
				req["tool_name"], req["tool_use_id"], req["input"] = c.Name, c.ID, c.Input
			}
		case messages.AskFollowup:
			q, _ := messages.ParseFollowup(ask)
			req = map[string]any{"subtype": "followup", "question": q.Question, "options": q.Suggest}
		default:
			return deny, true
		}
		mu.Lock()
		n++
		id := fmt.Sprintf("ask_%d_%d", ask.TS, n)
		mu.Unlock()
		ch, cancel := in.request(id)
		defer cancel()
		out.Emit("control_request", map[string]any{"request_id": id, "request": req})
		var a controlAnswer
		select {
		case got, ok := <-ch:
			if !ok {
				return deny, true // stdin ended
			}
			a = got
		case <-ctx.Done():
			return deny, true // answered elsewhere, or the turn ends
		}
		if !a.ok {
			return deny, true
		}
		var r struct {
			Behavior           string            `json:"behavior"`
			Message            string            `json:"message"`
			UpdatedPermissions []json.RawMessage `json:"updatedPermissions"`
			Answer             *string           `json:"answer"`
		}
		_ = json.Unmarshal(a.response, &r)
		switch {
		case ask.Ask == messages.AskFollowup && r.Answer != nil:
			return agent.Response{Kind: agent.ResponseMessage, Text: *r.Answer, By: "stdin"}, true
		case r.Behavior == "allow" && ask.Ask != messages.AskFollowup:
			if len(r.UpdatedPermissions) > 0 {
				return agent.Response{Kind: agent.ResponseAllowAll, By: "stdin"}, true
			}
			return agent.Response{Kind: agent.ResponseYes, By: "stdin"}, true
		case r.Behavior == "deny" && ask.Ask != messages.AskFollowup && strings.TrimSpace(r.Message) != "":
			if _, err := agent.ParseAnswer(r.Message); err == nil {
				return deny, true // a bare "yes" in a Denial must not allow
			}
			return agent.Response{Kind: agent.ResponseMessage, Text: r.Message, By: "stdin"}, true
		}
		return deny, true
	}
}
