package bridge

import (
	"context"
	"errors"
	"fmt"
	"html"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
)

// Prompt mode: a cell is a request to the agent. What the agent says is
// shown as markdown displays that grow while the model streams
// (update_display_data at most every Config.UpdateInterval while a message
// streams; its last update, exact, goes out as soon as it is complete,
// never held back by the interval);
// the code it runs shows its real outputs; its asks become input_requests
// when the frontend allows stdin, else the headless policy answers.

// defaultUpdateInterval spaces a streaming message's updates so that, with
// its complete text sent at once when it ends, no second holds more than
// 20 of them.
const defaultUpdateInterval = time.Second / 19

// cellOut maps one cell's agent events to iopub. Its methods are called on
// the task's goroutine (events) and the cell's (asks, end), so it locks.
type cellOut struct {
	b *Bridge
	r *kernel.Request

	mu        sync.Mutex
	started   bool // the model has been asked: later say text is the model's
	inRequest bool // between api_req_started and api_req_finished
	displays  map[int64]*display
	nextInput string
	// errText is a say error not shown yet: shown before the cell's next
	// output, or, when the turn ends, dropped if the cell's error says the
	// same (a message is shown once).
	errText  string
	usage    agent.Totals
	context  agent.ContextUse // the last request's fill of the context window
	requests int
}

// display is one growing markdown output.
type display struct {
	id      string
	text    string // newest text
	shown   string // text last published
	last    time.Time
	timer   *time.Timer
	render  func(string) string
	created bool
}

func newCellOut(b *Bridge, r *kernel.Request) *cellOut {
	return &cellOut{b: b, r: r, displays: map[int64]*display{}}
}

func (c *cellOut) onEvent(e agent.Event) {
	switch e.Kind {
	case agent.EventMessageCreated, agent.EventMessageUpdated:
		c.onMessage(*e.Message)
	case agent.EventSetNextInput:
		c.mu.Lock()
		c.nextInput = e.Text
		c.mu.Unlock()
	case agent.EventTokenUsage:
		c.mu.Lock()
		c.usage = e.Usage
		c.requests++
		if e.Context != nil {
			c.context = *e.Context
		}
		c.mu.Unlock()
	}
}

func (c *cellOut) onMessage(m messages.UIMessage) {
	if m.Type == messages.TypeAsk {
		return // asks are handled by the cell's loop
	}
	switch m.Say {
	case messages.SayAPIReqStarted, messages.SayAPIReqFinished:
		c.mu.Lock()
		c.started = true
		c.inRequest = m.Say == messages.SayAPIReqStarted
		c.mu.Unlock()
	case messages.SayText:
		c.mu.Lock()
		started, model := c.started, c.inRequest
		c.mu.Unlock()
		switch {
		case !started:
			// the user's own prompt
		case model:
			c.show(m, func(s string) string { return s })
		case m.Decision != nil && m.Decision.Routine:
			// routine allows stay in the history, not in the cell
		default:
			// a recorded decision: shown, and not as the model's words
			c.show(m, func(s string) string { return "<sub>" + s + "</sub>" })
		}
	case messages.SayReasoning:
		c.show(m, func(s string) string {
			return "<details><summary>Reasoning</summary>\n\n" + s + "\n\n</details>"
		})
	case messages.SayCompletionResult:
		if strings.TrimSpace(m.Text) != "" {
			c.show(m, func(s string) string { return "**Result:** " + s })
		}
	case messages.SayError:
		c.flushErr()
		c.mu.Lock()
		c.errText = m.Text
		c.mu.Unlock()
	case messages.SayAPIReqRetryDelayed:
		c.stream("stderr", "[agentkernel] "+m.Text+"\n")
	case messages.SayCondenseContext:
		c.stream("stderr", "[agentkernel] context condensed to save tokens\n")
	case messages.SaySlidingWindowTruncation:
		c.stream("stderr", "[agentkernel] older messages hidden from the model to fit its context\n")
	case messages.SayCondenseContextError:
		c.stream("stderr", "[agentkernel] could not condense the context: "+m.Text+"\n")
	case messages.SayMCPServerResponse:
		c.show(m, func(s string) string { return mcpResponseMarkdown(s, m.Images) })
	case messages.SayToolResult:
		if r, ok := messages.ParseToolResult(m); ok {
			c.show(m, func(string) string { return toolResultMarkdown(r) })
		}
	}
}

// toolResultMarkdown is a file tool's result in the cell: whether it
// worked, what it said, and an edit's changed lines.
func toolResultMarkdown(r messages.ToolResult) string {
	mark := "✓"
	if !r.OK {
		mark = "✗"
	}
	summary := strings.Join(strings.Fields(r.Summary), " ")
	out := fmt.Sprintf("<sub>%s %s: %s</sub>", mark, r.Tool, html.EscapeString(summary))
	if r.Diff != "" {
		out += "\n\n" + fenced("diff", r.Diff)
	}
	return out
}

// fenced is text as a markdown code block of lang, its fence longer than
// any run of backticks in it.
func fenced(lang, text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + lang + "\n" + strings.TrimSuffix(text, "\n") + "\n" + fence
}

func (c *cellOut) stream(name, text string) {
	c.flushErr()
	c.publishStream(name, text)
}

func (c *cellOut) publishStream(name, text string) {
	if err := c.r.Publish(wire.MsgStream, wire.Stream{Name: name, Text: text}); err != nil {
		c.b.log.Debug("publish stream", "error", err)
	}
}

// flushErr shows the say error held back, if any, before what comes next.
func (c *cellOut) flushErr() {
	if text := c.takeErr(); text != "" {
		c.publishStream("stderr", text+"\n")
	}
}

func (c *cellOut) takeErr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	text := c.errText
	c.errText = ""
	return text
}

// endWithError ends the cell with the error ename: evalue, showing first
// the say error held back unless the error says it already.
func (c *cellOut) endWithError(count int, ename, evalue string) {
	if text := strings.TrimSpace(c.takeErr()); text != "" && !strings.Contains(evalue, text) {
		c.publishStream("stderr", text+"\n")
	}
	c.b.replyError(c.r, count, ename, evalue)
}

// show creates or updates the markdown display of message m, throttled.
func (c *cellOut) show(m messages.UIMessage, render func(string) string) {
	c.flushErr()
	c.mu.Lock()
	d := c.displays[m.TS]
	if d == nil {
		d = &display{id: uuid.NewString(), render: render}
		c.displays[m.TS] = d
	}
	d.text = m.Text
	now := time.Now()
	// While the message streams, updates keep the interval; its complete
	// text goes out at once.
	interval := c.b.cfg.UpdateInterval
	due := !d.created || !m.Partial || now.Sub(d.last) >= interval
	if !due {
		if d.timer == nil {
			d.timer = time.AfterFunc(interval-now.Sub(d.last), func() { c.flush(d) })
		}
		c.mu.Unlock()
		return
	}
	c.publishLocked(d)
	c.mu.Unlock()
}

func (c *cellOut) flush(d *display) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d.timer = nil
	if d.text != d.shown {
		c.publishLocked(d)
	}
}

func (c *cellOut) publishLocked(d *display) {
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	kind := wire.MsgUpdateDisplayData
	if !d.created {
		kind, d.created = wire.MsgDisplayData, true
	}
	content := map[string]any{
		"data":      map[string]any{"text/markdown": d.render(d.text), "text/plain": d.text},
		"metadata":  map[string]any{},
		"transient": map[string]any{"display_id": d.id},
	}
	d.shown = d.text
	if err := c.r.Publish(kind, content); err != nil {
		c.b.log.Debug("publish display", "error", err)
	}
	// Stamped after the message is: the next update's header date is at
	// least the interval after this one's.
	d.last = time.Now()
}

// finish publishes what the throttle still holds, at once, and the
// footer: the end of a turn is never held back by the update interval.
func (c *cellOut) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.displays {
		if d.timer != nil || d.text != d.shown {
			c.publishLocked(d)
		}
	}
	if c.requests > 0 {
		u := c.usage
		footer := fmt.Sprintf("<sub>%d in · %d out tokens", u.InputTokens, u.OutputTokens)
		if u.CacheReadTokens+u.CacheWriteTokens > 0 {
			footer += fmt.Sprintf(" · cache %d read / %d written", u.CacheReadTokens, u.CacheWriteTokens)
		}
		footer += fmt.Sprintf(" · $%.4f this session", u.Cost)
		if cu := c.context; cu.Used > 0 {
			if cu.Window > 0 {
				footer += fmt.Sprintf(" · context %d%% of %dk", (100*cu.Used+cu.Window/2)/cu.Window, (cu.Window+500)/1000)
				if cu.Guessed {
					footer += " (a guess: set the model's contextWindow in the config file's models)"
				}
			} else {
				footer += fmt.Sprintf(" · context %d tokens", cu.Used)
			}
		}
		footer += "</sub>"
		if err := c.r.Publish(wire.MsgDisplayData, map[string]any{
			"data": map[string]any{"text/markdown": footer, "text/plain": stripTags(footer)}, "metadata": map[string]any{},
		}); err != nil {
			c.b.log.Debug("publish footer", "error", err)
		}
	}
}

func stripTags(s string) string {
	return strings.NewReplacer("<sub>", "", "</sub>", "").Replace(s)
}

// relayCode forwards the backing kernel's outputs of the agent's code to
// the cell. Status and execute_input are the backing kernel's bookkeeping
// and stay there.
func (c *cellOut) relayCode(o backing.Output) {
	switch o.Type {
	case wire.MsgStatus, wire.MsgExecuteInput:
		return
	}
	c.flushErr()
	if err := c.r.PublishRaw(o.Type, o.Content, o.Metadata, o.Buffers); err != nil {
		c.b.log.Debug("relay agent output", "error", err)
	}
}

// prompt runs text as a request to the agent in cell r.
func (b *Bridge) prompt(ctx context.Context, r *kernel.Request, text string, count int) {
	images := b.takeAttached()
	b.follow(r, count, func(t session.Follow) (session.Result, error) {
		t.Images = images
		return b.host.Submit(ctx, text, t)
	})
}

// follow runs one turn of the agent for cell r (a prompt, or an edit):
// the agent's words and its code's outputs go to the cell, its asks to
// the frontend's stdin (else the policy), and the cell ends with the turn.
func (b *Bridge) follow(r *kernel.Request, count int, run func(session.Follow) (session.Result, error)) {
	b.promptFrom.Store(r.Msg.Header.Session)
	defer b.promptFrom.Store("")
	c := newCellOut(b, r)
	res, err := run(session.Follow{Approve: b.approver(r), Output: c.relayCode, Events: c.onEvent})
	c.finish()
	switch {
	case errors.Is(err, agent.ErrNoProvider):
		c.endWithError(count, "NoModelConfigured", agent.NoModelHelp)
	case errors.Is(err, agent.ErrAPIFailed):
		c.endWithError(count, "ModelAPIError", strings.TrimPrefix(err.Error(), agent.ErrAPIFailed.Error()+": "))
	case errors.Is(err, session.ErrSuperseded):
		// Not an error: the cell ends, what it showed stays, and a queued
		// cell is not aborted.
		c.stream("stderr", "[agentkernel] stopped here: a newer prompt took over (what streamed is kept, marked partial)\n")
		b.replyOK(r, count, "")
	case errors.Is(err, context.Canceled):
		c.endWithError(count, "KeyboardInterrupt", "the agent was interrupted")
	case err != nil:
		c.endWithError(count, "AgentError", err.Error())
	default:
		c.flushErr()
		b.replyOK(r, count, res.NextInput)
	}
}

// promptSession is the Jupyter session of the frontend whose prompt runs,
// or "".
func (b *Bridge) promptSession() string {
	s, _ := b.promptFrom.Load().(string)
	return s
}

// approver answers the agent's asks for cell r: on the frontend's stdin
// when it allows it, else by the headless policy. A followup question
// without stdin stays pending: the next prompt is its answer.
func (b *Bridge) approver(r *kernel.Request) agent.Approver {
	return func(ctx context.Context, ask messages.UIMessage) (agent.Response, bool) {
		if b.panels.attached() {
			// The Agent sidebar is open on this kernel: the ask is answered
			// there. A stdin prompt would outlive the answer in the
			// notebook, which then refuses to run any cell ("pending
			// input"): the protocol cannot withdraw an input_request.
			if err := r.Publish(wire.MsgStream, wire.Stream{Name: "stdout",
				Text: strings.TrimRight(agent.AskQuestion(ask), "\n") + "\n\nAnswer it in the Agent sidebar.\n"}); err != nil {
				b.log.Debug("publish ask note", "error", err)
			}
			<-ctx.Done() // answered there (or the cell was interrupted)
			return agent.Response{Kind: agent.ResponseNo, By: "stdin"}, true
		}
		if r.AllowStdin() {
			prompt := agent.AskPrompt(ask)
			for {
				in, err := r.Input(ctx, prompt, false)
				if err != nil {
					return agent.Response{Kind: agent.ResponseNo, By: "stdin"}, true
				}
				if ask.Ask == messages.AskFollowup {
					return agent.Response{Kind: agent.ResponseMessage, Text: in, By: "stdin"}, true
				}
				if resp, ok := agent.ParseReply(in, "stdin"); ok {
					return resp, true
				}
				prompt = "Please answer y (yes), a (always) or n (no): "
			}
		}
		if ask.Ask == messages.AskFollowup {
			return agent.Response{}, false
		}
		return b.cfg.Approve.Decide(), true
	}
}

// replyOK ends a prompt cell.
func (b *Bridge) replyOK(r *kernel.Request, count int, nextInput string) {
	payload := []any{}
	if nextInput != "" {
		payload = append(payload, map[string]any{"source": "set_next_input", "text": nextInput, "replace": false})
	}
	if err := r.Reply(wire.MsgExecuteReply, wire.ExecuteReply{Status: wire.StatusOK, ExecutionCount: count,
		UserExpressions: map[string]any{}, Payload: payload}); err != nil {
		b.log.Debug("execute_reply", "error", err)
	}
}

// replyError ends a cell with an error output and an error reply.
func (b *Bridge) replyError(r *kernel.Request, count int, ename, evalue string) {
	e := &wire.Error{EName: ename, EValue: evalue, Traceback: []string{ename + ": " + evalue}}
	if err := r.Publish(wire.MsgError, e); err != nil {
		b.log.Debug("publish error", "error", err)
	}
	if err := r.Reply(wire.MsgExecuteReply, wire.ExecuteReply{Status: wire.StatusError, ExecutionCount: count, Error: e,
		UserExpressions: map[string]any{}, Payload: []any{}}); err != nil {
		b.log.Debug("execute_reply", "error", err)
	}
}

// mcpResponseMarkdown shows an MCP tool's result (its preview) in the
// cell: the text in a fenced block, then its images.
func mcpResponseMarkdown(text string, images []string) string {
	out := "<sub>MCP result</sub>\n\n" + fenced("", text)
	for _, im := range images {
		out += "\n\n![image](" + im + ")"
	}
	return out
}
