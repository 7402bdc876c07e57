// Package streamjson speaks Claude Code's stream-json (docs/stream-json.md)
// for a session host: a Transcript turns the host's events, the code's
// outputs and the asks into its events, an Input reads user messages and
// control_response answers from its input, and a Writer writes the lines.
// `agentkernel ask --output-format stream-json [--input-format
// stream-json]` is its surface.
package streamjson

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/hooks"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
)

// Transcript follows one ask run and turns the session's events into the
// event schema of Claude Code's stream-json (docs/stream-json.md): the
// model's answers and the tool results as "assistant" and "user" events
// taken from the API history, with --include-partial-messages the
// streaming deltas as "stream_event"s, agentkernel's own events as
// "system" events with their own subtypes, and a "result" per turn. It
// also keeps what every output format needs: the denied tool calls and the
// time spent in model requests. With out nil it emits nothing.
//
// Its methods are safe for concurrent use: the task's events, the backing
// kernel's outputs and the asks come from different goroutines.
type Transcript struct {
	out     *Writer // nil: keep count, emit nothing
	partial bool    // --include-partial-messages
	sid     string
	modelID string // the model as its API names it, until a reply says

	mu      sync.Mutex
	msgID   string                  // the model's message being streamed
	nBlocks int                     // its content blocks so far
	open    map[int64]*openBlock    // streaming UI messages by ts
	calls   []messages.ContentBlock // tool_use blocks of the model's last message
	decided map[string]bool         // tool_use ids with a permission decision
	denials []Denial                // of the running turn
	apiFrom time.Time               // the running model request's start
	apiTime time.Duration           // of the running turn
	blocked string                  // why a hook blocked the running turn's prompt
}

// openBlock is a text or thinking block whose UI message is streaming.
type openBlock struct {
	index int
	sent  int // bytes of its text given as deltas so far
}

// Denial is one entry of the result's permission_denials: a tool call
// that did not run because it was refused (by the person, --approve, a
// deny rule, the permission mode, a hook, or a hard refusal).
type Denial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
	// Reason is agentkernel's: what refused it, in words.
	Reason string `json:"reason"`
}

func NewTranscript(out *Writer, sid, model string, partial bool) *Transcript {
	_, id, ok := strings.Cut(model, ":")
	if !ok {
		id = model
	}
	return &Transcript{out: out, sid: sid, modelID: id, partial: partial, open: map[int64]*openBlock{}, decided: map[string]bool{}}
}

// emit writes one event with the fields every event has.
func (t *Transcript) Emit(typ string, fields map[string]any) {
	if t.out == nil {
		return
	}
	fields["session_id"] = t.sid
	fields["uuid"] = uuid.NewString()
	t.out.Emit(typ, fields)
}

// system emits an agentkernel event: {"type":"system","subtype":…}.
func (t *Transcript) System(subtype string, fields map[string]any) {
	fields["subtype"] = subtype
	t.Emit("system", fields)
}

// streamEvent emits one of Anthropic's raw stream events.
func (t *Transcript) streamEvent(event map[string]any) {
	if t.partial {
		t.Emit("stream_event", map[string]any{"event": event, "parent_tool_use_id": nil})
	}
}

// Event takes one event of the session (Turn.Events).
func (t *Transcript) Event(e agent.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch e.Kind {
	case agent.EventMessageCreated:
		t.created(*e.Message, e.ToolID)
	case agent.EventMessageUpdated:
		t.updated(*e.Message)
	case agent.EventAPIMessage:
		t.apiMessage(*e.API, e.Reply)
	case agent.EventHookBlocked:
		if h := e.Hook; h != nil && h.Event == hooks.UserPromptSubmit && e.Tool == "" {
			t.blocked = h.Reason
		}
	case session.EventCheckpoint:
		if cp := e.Checkpoint; cp != nil {
			t.System("checkpoint", map[string]any{"anchor": cp.Anchor, "tool": cp.Tool, "files": cp.Files,
				"took_ms": float64(cp.Took.Microseconds()) / 1000})
		}
	}
}

func (t *Transcript) created(m messages.UIMessage, toolID string) {
	switch {
	case m.Say == messages.SayAPIReqStarted:
		t.apiFrom = time.Now()
		t.msgID = "msg_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24]
		t.nBlocks = 0
		t.streamEvent(map[string]any{"type": "message_start", "message": map[string]any{
			"id": t.msgID, "type": "message", "role": "assistant", "model": t.modelID, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(provider.Usage{}),
		}})
	case m.Say == messages.SayAPIReqFinished, m.Say == messages.SayAPIReqRetryDelayed, m.Ask == messages.AskAPIReqFailed:
		t.requestEnded()
	case m.Decision != nil:
		t.decision(m, toolID)
	case m.Partial && (m.Say == messages.SayText || m.Say == messages.SayReasoning):
		b := &openBlock{index: t.nBlocks}
		t.nBlocks++
		t.open[m.TS] = b
		start := map[string]any{"type": "text", "text": ""}
		if m.Say == messages.SayReasoning {
			start = map[string]any{"type": "thinking", "thinking": ""}
		}
		t.streamEvent(map[string]any{"type": "content_block_start", "index": b.index, "content_block": start})
		t.updated(m)
	case m.Say == messages.SayError:
		t.System("error", map[string]any{"text": m.Text})
	}
}

// promptBlocked returns why a UserPromptSubmit hook blocked the turn's
// prompt, if one did: the run did not do what was asked.
func (t *Transcript) PromptBlocked() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.blocked == "" {
		return nil
	}
	return fmt.Errorf("a UserPromptSubmit hook blocked the prompt: %s", t.blocked)
}

// requestEnded adds the running model request's time to the turn's.
func (t *Transcript) requestEnded() {
	if !t.apiFrom.IsZero() {
		t.apiTime += time.Since(t.apiFrom)
		t.apiFrom = time.Time{}
	}
}

// updated gives the new end of a streaming message's text as a delta: the
// UI message carries the whole text so far.
func (t *Transcript) updated(m messages.UIMessage) {
	b, ok := t.open[m.TS]
	if !ok {
		return
	}
	if len(m.Text) > b.sent {
		delta := map[string]any{"type": "text_delta", "text": m.Text[b.sent:]}
		if m.Say == messages.SayReasoning {
			delta = map[string]any{"type": "thinking_delta", "thinking": m.Text[b.sent:]}
		}
		b.sent = len(m.Text)
		t.streamEvent(map[string]any{"type": "content_block_delta", "index": b.index, "delta": delta})
	}
	if !m.Partial {
		delete(t.open, m.TS)
		t.streamEvent(map[string]any{"type": "content_block_stop", "index": b.index})
	}
}

// decision records a permission decision on a tool call: a Denial for the
// result, and a system event unless it was routine (a read needs no one).
func (t *Transcript) decision(m messages.UIMessage, toolID string) {
	t.decided[toolID] = true
	d := m.Decision
	if !d.Allowed {
		in := json.RawMessage("{}")
		for _, c := range t.calls {
			if c.ID == toolID && len(c.Input) > 0 {
				in = c.Input
			}
		}
		t.denials = append(t.denials, Denial{ToolName: d.Tool, ToolUseID: toolID, ToolInput: in, Reason: m.Text})
	}
	if !d.Routine {
		t.System("decision", map[string]any{"tool_name": d.Tool, "tool_use_id": toolID, "allowed": d.Allowed, "text": m.Text})
	}
}

// apiMessage emits a message added to the API history: the model's answer
// as "assistant" (after the stream events that end it), tool results as
// "user". The user's own prompts are not echoed, as in Claude Code.
func (t *Transcript) apiMessage(m messages.APIMessage, reply *agent.Reply) {
	switch m.Role {
	case messages.RoleAssistant:
		t.calls = t.calls[:0]
		for _, c := range m.Content {
			if c.Type == messages.BlockToolUse {
				t.calls = append(t.calls, c)
			}
		}
		if reply == nil {
			reply = &agent.Reply{}
		}
		if reply.Model != "" {
			t.modelID = reply.Model
		}
		stop := stopReason(reply.Stop, len(t.calls) > 0)
		for _, c := range t.calls {
			i := t.nBlocks
			t.nBlocks++
			t.streamEvent(map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{
				"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
			t.streamEvent(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{
				"type": "input_json_delta", "partial_json": string(c.Input)}})
			t.streamEvent(map[string]any{"type": "content_block_stop", "index": i})
		}
		t.streamEvent(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": reply.Usage.OutputTokens}})
		t.streamEvent(map[string]any{"type": "message_stop"})
		id := t.msgID
		if id == "" {
			id = "msg_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24]
		}
		t.msgID = ""
		t.Emit("assistant", map[string]any{"parent_tool_use_id": nil, "message": map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": t.modelID, "content": m.Content,
			"stop_reason": stop, "stop_sequence": nil, "usage": anthropicUsage(reply.Usage),
		}})
	case messages.RoleUser:
		var results []messages.ContentBlock
		for _, c := range m.Content {
			if c.Type == messages.BlockToolResult {
				results = append(results, c)
			}
		}
		if len(results) > 0 {
			t.Emit("user", map[string]any{"parent_tool_use_id": nil,
				"message": map[string]any{"role": "user", "content": results}})
		}
	}
}

// stopReason is the model's stop reason as Anthropic spells it.
func stopReason(s provider.StopReason, calls bool) string {
	switch s {
	case provider.StopEndTurn, provider.StopToolUse, provider.StopMaxTokens:
		return string(s)
	}
	if calls {
		return string(provider.StopToolUse)
	}
	return string(provider.StopEndTurn)
}

func anthropicUsage(u provider.Usage) map[string]any {
	return map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_read_input_tokens": u.CacheReadTokens, "cache_creation_input_tokens": u.CacheWriteTokens,
	}
}

// Output takes an iopub message of the code the agent runs (Turn.Output).
func (t *Transcript) Output(o backing.Output) {
	if isOutput(o.Type) {
		t.System("kernel_output", map[string]any{"msg_type": o.Type, "content": o.Content})
	}
}

// Ask takes an ask and its answer (Turn.OnAsk).
func (t *Transcript) Ask(a session.AnsweredAsk) {
	t.System("ask", map[string]any{"ts": a.Ask.TS, "ask": a.Ask.Ask, "text": a.Ask.Text,
		"answer": a.Response.Kind, "allowed": !a.Denied(), "answer_text": a.Response.Text, "by": a.Response.By})
}

// call returns the tool call an approval ask is about: the first call of
// the model's last message of that tool with no decision yet (calls are
// decided in order; every known tool's call gets a decision).
func (t *Transcript) call(ask messages.UIMessage) (messages.ContentBlock, bool) {
	name := agent.ToolExecuteCode
	if ask.Ask == messages.AskTool {
		a, ok := messages.ParseToolAsk(ask)
		if !ok {
			return messages.ContentBlock{}, false
		}
		name = a.Tool
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.calls {
		if c.Name == name && !t.decided[c.ID] {
			return c, true
		}
	}
	return messages.ContentBlock{}, false
}

// result emits the result of one turn (or returns it, for json) and
// starts the next turn's count. total is the run's cost so far.
func (t *Transcript) Result(res session.Result, model string, total float64, err error) (map[string]any, []Denial) {
	t.mu.Lock()
	t.requestEnded()
	denials, apiTime := t.denials, t.apiTime
	t.denials, t.apiTime, t.blocked = nil, 0, ""
	t.mu.Unlock()
	out := map[string]any{
		"subtype": resultSubtype(err), "is_error": err != nil, "result": res.Text,
		"duration_ms": res.Duration.Milliseconds(), "duration_api_ms": apiTime.Milliseconds(),
		"num_turns": res.Usage.Requests, "total_cost_usd": total,
		"usage": anthropicUsage(provider.Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens,
			CacheReadTokens: res.Usage.CacheReadTokens, CacheWriteTokens: res.Usage.CacheWriteTokens}),
		"modelUsage": map[string]any{model: map[string]any{
			"inputTokens": res.Usage.InputTokens, "outputTokens": res.Usage.OutputTokens,
			"cacheReadInputTokens": res.Usage.CacheReadTokens, "cacheCreationInputTokens": res.Usage.CacheWriteTokens,
			"costUSD": res.Usage.Cost,
		}},
		"permission_denials": denials,
		"completed":          res.Completed, "model": model,
		"session_id": t.sid, "uuid": uuid.NewString(),
	}
	if denials == nil {
		out["permission_denials"] = []Denial{}
	}
	if err != nil {
		out["errors"] = []string{ErrorText(err)}
	}
	if res.Pending != nil {
		out["pending_ask"] = res.Pending
	}
	return out, denials
}

// resultSubtype is the result's subtype for a turn that ended with err.
func resultSubtype(err error) string {
	switch {
	case err == nil:
		return "success"
	case errors.Is(err, agent.ErrMaxRequests):
		return "error_max_turns"
	case errors.Is(err, agent.ErrMaxBudget):
		return "error_max_budget_usd"
	}
	return "error_during_execution"
}

// Writer writes one JSON object per line, "type" first; safe for
// concurrent use. The first error is kept in err.
// Writer writes stream-json lines, one JSON object each, safe for
// concurrent use; the first write error stops it (Err).
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Err is the first error the Writer met.
func (j *Writer) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// Emit writes one line: {"type": typ, …fields}.
func (j *Writer) Emit(typ string, fields map[string]any) {
	b, err := json.Marshal(fields)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return
	}
	if err != nil {
		j.err = err
		return
	}
	t, _ := json.Marshal(typ)
	line := append([]byte(`{"type":`), t...)
	if len(b) > 2 {
		line = append(append(line, ','), b[1:]...)
	} else {
		line = append(line, '}')
	}
	if _, err := j.w.Write(append(line, '\n')); err != nil {
		j.err = err
	}
}

// Enabled reports whether the Transcript emits events (it was given a
// Writer).
func (t *Transcript) Enabled() bool { return t.out != nil }

// isOutput reports whether an iopub message type is an output of the code
// (what stream-json reports as "output").
func isOutput(msgType string) bool {
	switch msgType {
	case wire.MsgStream, wire.MsgDisplayData, wire.MsgUpdateDisplayData, wire.MsgExecuteResult, wire.MsgError, wire.MsgClearOutput:
		return true
	}
	return false
}

// ErrorText says why a turn failed in words for people.
func ErrorText(err error) string {
	switch {
	case errors.Is(err, agent.ErrNoProvider):
		return agent.NoModelHelp
	case errors.Is(err, context.Canceled):
		return "interrupted"
	case errors.Is(err, agent.ErrMaxRequests):
		return "stopped: the prompt's turn reached --max-turns model requests"
	case errors.Is(err, agent.ErrMaxBudget):
		return "stopped: the run's model requests reached --max-budget-usd"
	case errors.Is(err, agent.ErrAPIFailed):
		return "the model request failed: " + strings.TrimPrefix(err.Error(), agent.ErrAPIFailed.Error()+": ")
	}
	return err.Error()
}

// DescribeAsk is an ask in one line.
func DescribeAsk(ask messages.UIMessage) string {
	switch ask.Ask {
	case messages.AskCommand:
		if ask.Cell != "" {
			return "notebook_run_cell " + ask.Cell + ": " + messages.FirstLine(ask.Text, 80)
		}
		return "execute_code: " + messages.FirstLine(ask.Text, 80)
	case messages.AskTool:
		if t, ok := messages.ParseToolAsk(ask); ok {
			return t.Tool + " " + messages.FirstLine(string(t.Input), 80)
		}
	}
	return string(ask.Ask) + ": " + messages.FirstLine(ask.Text, 80)
}
