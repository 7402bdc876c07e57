package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
)

// ErrAPIFailed ends a turn whose model request failed after its retries;
// the turn leaves an api_req_failed ask pending (answer yes to retry).
var ErrAPIFailed = errors.New("agent: model request failed")

// errStop ends a turn without an error (completion, mistake limit, denial
// without feedback).
var errStop = errors.New("agent: turn stopped")

const cancelledText = "The user interrupted this operation."

// Limits bound one turn (TurnOptions.Limits). The zero value adds none.
type Limits struct {
	// MaxRequests is how many model requests the turn may make: when the
	// model still wants to go on after that many, the turn ends with
	// ErrMaxRequests. 0: Config.MaxSteps, which ends the turn without an error.
	MaxRequests int
	// MaxCost (USD): once the turn's requests cost this much, no further
	// request starts and the turn ends with ErrMaxBudget. 0: no limit.
	MaxCost float64
}

// The errors of a turn stopped by its Limits, between two model requests:
// the histories are complete (every tool_use has its result).
var (
	ErrMaxRequests = errors.New("agent: the turn reached its limit of model requests")
	ErrMaxBudget   = errors.New("agent: the turn reached its cost budget")
)

// runTurn is one turn: the user's message, then model requests and tool
// calls until the model ends its turn, completes, or something stops it.
func (t *Task) runTurn(ctx context.Context, p Prompt, resumeFrom *TurnAsk, lim Limits) error {
	t.lis.Emit(Event{Kind: EventTaskStarted})
	t.lis.Emit(Event{Kind: EventTaskActive})
	err := t.turn(ctx, p, resumeFrom, lim)
	if werr := t.waitRuns(ctx); werr != nil && err == nil {
		err = werr
	}
	switch {
	case errors.Is(err, errStop):
		err = nil
	case ctx.Err() != nil:
		t.lis.Emit(Event{Kind: EventTaskAborted})
		err = context.Canceled
	}
	var idle *messages.UIMessage
	t.mu.Lock()
	if t.pending != nil {
		m := t.pending.msg
		idle = &m
	}
	t.mu.Unlock()
	t.lis.Emit(Event{Kind: EventTaskIdle, Message: idle})
	return err
}

func (t *Task) turn(ctx context.Context, p Prompt, resumeFrom *TurnAsk, lim Limits) error {
	text := p.Text
	if resumeFrom != nil {
		if err := t.markAnswered(ctx, resumeFrom.msg); err != nil {
			return err
		}
	}
	if t.Provider() == nil {
		_, err := t.say(ctx, messages.SayError, NoModelHelp, func(m *messages.UIMessage) { m.Settings = true })
		if err != nil {
			return err
		}
		return ErrNoProvider
	}
	retryOnly := resumeFrom != nil && (resumeFrom.msg.Ask == messages.AskAPIReqFailed || resumeFrom.msg.Ask == messages.AskResumeTask) &&
		(strings.TrimSpace(text) == "" || (resumeFrom.msg.Ask == messages.AskResumeTask && strings.EqualFold(strings.TrimSpace(text), "resume"))) &&
		len(p.Images) == 0
	if !retryOnly {
		extra, blocked, err := t.promptHooks(ctx, text)
		if err != nil {
			return err
		}
		if blocked {
			return errStop
		}
		if err := t.userMessage(ctx, p, extra); err != nil {
			return err
		}
	}
	t.stopHookActive = false
	instr, files := "", []string(nil)
	if f := t.cfg.Rules; f != nil {
		instr, files = f(ctx)
	}
	t.mu.Lock()
	t.turnInstr, t.turnRules = strings.TrimSpace(instr), files
	t.mu.Unlock()
	mistakes := 0
	maxSteps := t.cfg.MaxSteps
	if lim.MaxRequests > 0 {
		maxSteps = lim.MaxRequests
	}
	spentBefore := t.Totals().Cost
	for step := 0; step < maxSteps; step++ {
		if spent := t.Totals().Cost - spentBefore; lim.MaxCost > 0 && spent >= lim.MaxCost {
			msg := fmt.Sprintf("Stopped: this turn's model requests cost $%.4f, its budget is $%.4f.", spent, lim.MaxCost)
			if _, err := t.say(ctx, messages.SayError, msg, nil); err != nil {
				return err
			}
			return ErrMaxBudget
		}
		// The model is read once per request, under the lock: a switch
		// (SetProvider, from the panel or a magic) takes effect at the next.
		prov := t.Provider()
		if prov == nil {
			return ErrNoProvider
		}
		if err := t.manageContext(ctx, prov); err != nil {
			return err
		}
		calls, err := t.request(ctx, prov)
		if err != nil {
			return err
		}
		if len(calls) == 0 {
			// The model ended its turn, unless a Stop hook says go on.
			reason, goOn := t.stopHooks(ctx)
			if !goOn {
				return nil
			}
			if err := t.stopFeedback(ctx, reason); err != nil {
				return err
			}
			continue
		}
		if err := t.runTools(ctx, calls, &mistakes); err != nil {
			return err
		}
	}
	_, err := t.say(ctx, messages.SayError, fmt.Sprintf("Stopped after %d model requests in one turn.", maxSteps), nil)
	if err != nil {
		return err
	}
	if lim.MaxRequests > 0 {
		return ErrMaxRequests
	}
	return errStop
}

// waitRuns waits for the code the turn left running (a run whose call
// timed out): the turn, and its cell, end when the code does, an
// interrupt of the turn stops it, and the model is told how it ended with
// the next message.
func (t *Task) waitRuns(ctx context.Context) error {
	tb := t.cfg.Toolbox
	r := tb.runs.current()
	if r == nil {
		return nil
	}
	wctx := context.WithoutCancel(ctx)
	if _, err := t.say(wctx, messages.SayText, fmt.Sprintf("The agent's code is still running (run %s): this cell "+
		"ends when it does. Interrupt to stop it.", r.id), nil); err != nil {
		return err
	}
	tb.runs.wait(ctx) // ctx ending interrupts it
	r.mu.Lock()
	res := r.res
	r.mu.Unlock()
	out := tb.ended(r, res)
	if _, err := t.say(wctx, messages.SayCommandOutput, out.Text, nil); err != nil {
		return err
	}
	t.mu.Lock()
	t.carry = append(t.carry, fmt.Sprintf("The code the agent left running (run %s) ended after your last message:\n%s", r.id, out.Text))
	t.mu.Unlock()
	return nil
}

// NoModelHelp is what a prompt says when no model is configured: the
// settings first (they need no restart), then the environment.
const NoModelHelp = "No model is configured. Open Settings in the Agent sidebar (or the web panel, `%agent webview`) " +
	"to pick a model and save its API key, or the base URL of a local server (vLLM, llama.cpp, LM Studio, Ollama): " +
	"no restart needed. Or set AGENTKERNEL_MODEL (for example openai:gpt-4.1, anthropic:claude-sonnet-4-5, " +
	"ollama:qwen2.5-coder or replay:FILE) with OPENAI_API_KEY or ANTHROPIC_API_KEY before the kernel starts, " +
	"or run `%agent model NAME`. Code cells still run."

// userMessage records the user's text in both histories under one ts;
// extra (the hooks' context), if any, goes to the model before it.
func (t *Task) userMessage(ctx context.Context, p Prompt, extra string) error {
	text := p.Text
	t.mu.Lock()
	first := !hasPrompt(t.ui)
	t.mu.Unlock()
	kind := messages.SayUserFeedback
	if first {
		kind = messages.SayText
	}
	sent := text
	var cellImages []Image
	if t.cfg.Context != nil {
		c, ims := t.cfg.Context(ctx, text)
		if c != "" {
			sent = c + "\n\n" + text
		}
		cellImages = ims
	}
	t.mu.Lock()
	carry := t.carry
	t.carry = nil
	t.mu.Unlock()
	if len(carry) > 0 {
		sent = strings.Join(carry, "\n\n") + "\n\n" + sent
	}
	if extra != "" {
		sent = extra + "\n\n" + sent
	}
	images, note := t.attached(p.Images)
	if note != "" {
		sent += "\n\n" + note
	}
	m, err := t.say(ctx, kind, text, showImages(p.Images))
	if err != nil {
		return err
	}
	content := append([]messages.ContentBlock{{Type: messages.BlockText, Text: sent}}, images...)
	if len(cellImages) > 0 && t.vision() {
		// The text names each image in its cell's output already.
		content = append(content, messages.ContentBlock{Type: messages.BlockText,
			Text: fmt.Sprintf("The last %d image%s the cells above displayed:", len(cellImages), plural(len(cellImages)))})
		content = append(content, imageBlocks(cellImages)...)
	}
	return t.appendAPI(ctx, messages.APIMessage{Role: messages.RoleUser, Content: content, TS: m.TS}, nil)
}

// hasPrompt reports whether ui holds a prompt of the user's: not only
// errors said before any (no model, a blocked prompt, a hook problem).
func hasPrompt(ui []messages.UIMessage) bool {
	for i := range ui {
		if ui[i].Type == messages.TypeSay && (ui[i].Say == messages.SayText || ui[i].Say == messages.SayUserFeedback) {
			return true
		}
	}
	return false
}

// streamed is what one model request produced.
type streamed struct {
	// start is when the request was sent, first when its first token came.
	start, first               time.Time
	text, reasoning, signature string
	calls                      []provider.ToolCall
	usage                      provider.Usage
	stop                       provider.StopReason
}

// request sends the effective history to the model, with retries, and
// records the answer. It returns the tool calls to run.
func (t *Task) request(ctx context.Context, prov provider.Provider) ([]provider.ToolCall, error) {
	shrunk := 0 // times the history was shrunk for a context-window refusal
	began := time.Now()
	for attempt := 0; ; attempt++ {
		tools := t.offered(ctx) // outside the lock: it asks the tool source
		system := t.system(tools)
		t.mu.Lock()
		req := provider.Request{
			System:   system,
			Messages: messages.Effective(t.api),
			Tools:    tools,
			Effort:   t.effort,
		}
		rules := t.turnRules
		t.mu.Unlock()
		started, err := t.say(ctx, messages.SayAPIReqStarted, apiReqText(len(req.Messages), attempt, rules), nil)
		if err != nil {
			return nil, err
		}
		_ = started
		res, err := t.stream(ctx, prov, req)
		if err == nil {
			return res.calls, t.finishRequest(ctx, prov, res)
		}
		if ctx.Err() != nil {
			// Keep what was said before the interrupt; the partial
			// tool calls are dropped so no tool_use lacks its result.
			if res.text != "" || res.reasoning != "" {
				res.calls = nil
				if ferr := t.finishRequest(context.WithoutCancel(ctx), prov, res); ferr != nil {
					return nil, ferr
				}
			}
			return nil, ctx.Err()
		}
		ae, _ := provider.AsAPIError(err)
		if ae != nil && ae.ContextExceeded && shrunk < maxShrinks {
			// Too long for the model, whatever its window was thought to
			// be: never the end of the turn while the history can shrink.
			shrunk++
			msg := fmt.Sprintf("%s. The conversation is longer than the model's context window: condensing it, then asking again.", err)
			if _, err := t.say(ctx, messages.SayAPIReqRetryDelayed, msg, nil); err != nil {
				return nil, err
			}
			ok, serr := t.shrink(ctx, prov)
			if serr != nil {
				return nil, serr
			}
			if ok {
				if _, err := t.say(ctx, messages.SayAPIReqRetried, "", nil); err != nil {
					return nil, err
				}
				continue
			}
		}
		delay := t.cfg.RetryBase << attempt
		if ae != nil && ae.RetryAfter > 0 {
			delay = ae.RetryAfter
		}
		delay = min(delay, time.Minute)
		if ae != nil && ae.Retryable && attempt < t.cfg.MaxRetries && time.Since(began)+delay <= t.cfg.RetryBudget {
			msg := fmt.Sprintf("The request to %s failed: %s. Retrying in %s (retry %d of %d).", modelName(prov), err,
				delay.Round(time.Millisecond), attempt+1, t.cfg.MaxRetries)
			if _, err := t.say(ctx, messages.SayAPIReqRetryDelayed, msg, nil); err != nil {
				return nil, err
			}
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if _, err := t.say(ctx, messages.SayAPIReqRetried, "", nil); err != nil {
				return nil, err
			}
			continue
		}
		// Out of retries, or not retryable: the turn ends with an idle
		// ask; answering it yes (or an empty prompt) retries.
		if _, serr := t.askIdle(ctx, messages.AskAPIReqFailed, err.Error()); serr != nil {
			return nil, serr
		}
		return nil, fmt.Errorf("%w: %w", ErrAPIFailed, err)
	}
}

// modelName names a provider's model for people: "openai gpt-4.1".
func modelName(p provider.Provider) string {
	if id := p.Model().ID; id != "" {
		return p.Name() + " " + id
	}
	return p.Name()
}

// maxShrinks bounds how often one request shrinks the history after the
// model refused it as too long: each time it condenses or halves it.
const maxShrinks = 4

// offered are the tools the model is offered: the toolbox's, less those
// the tool filter (an agent mode) does not allow, and in plan mode those
// that are not read-only (the policy refuses them whatever the rules).
func (t *Task) offered(ctx context.Context) []provider.Tool {
	tools := t.cfg.Toolbox.Tools(ctx)
	t.mu.Lock()
	f := t.filter
	t.mu.Unlock()
	plan := t.perm.PermissionMode() == PermissionPlan
	if (f == nil || f.Allow == nil) && !plan {
		return tools
	}
	out := tools[:0:0]
	for _, pt := range tools {
		tool, ok := t.cfg.Toolbox.Lookup(pt.Name)
		if ok && (f != nil && f.Allow != nil && !f.Allow(tool.Name(), tool.Class()) || plan && !tool.ReadOnly()) {
			continue
		}
		out = append(out, pt)
	}
	return out
}

func apiReqText(n, attempt int, rules []string) string {
	m := map[string]any{"messages": n, "attempt": attempt}
	if len(rules) > 0 {
		m["rules"] = rules
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// system is the system prompt of a request that offers tools: the base
// (Config.System, else BasePrompt), then the turn's instructions.
func (t *Task) system(tools []provider.Tool) string {
	base := t.cfg.System
	if base == "" {
		base = BasePrompt(t.cfg.Toolbox, tools, t.perm.PermissionMode())
	}
	t.mu.Lock()
	instr := t.turnInstr
	t.mu.Unlock()
	if instr == "" {
		return base
	}
	return base + "\n\n" + instr
}

// stream consumes one model stream into partial say messages.
func (t *Task) stream(ctx context.Context, prov provider.Provider, req provider.Request) (streamed, error) {
	res := streamed{start: time.Now()}
	s, err := prov.Stream(ctx, req)
	if err != nil {
		return res, err
	}
	defer s.Close()
	// Close the stream when ctx ends so that a blocked Next returns.
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()

	var textMsg, reasonMsg *messages.UIMessage
	// The text so far grows in place: res.text is text.String() after
	// each piece, a string over the builder's bytes, not a copy (a copy a
	// piece is quadratic in the answer's length).
	var text, reasoning strings.Builder
	// An agent that runs its own tools (EventActivity, EventAsk) says
	// things between its steps: each stretch of its text is a message of
	// its own, from these offsets on.
	var textFrom, reasonFrom int
	updateCtx := context.WithoutCancel(ctx) // made once, not a chunk
	grow := func(m **messages.UIMessage, kind messages.Say, full string) error {
		if *m == nil {
			created, err := t.say(ctx, kind, full, func(u *messages.UIMessage) { u.Partial = true })
			if err != nil {
				return err
			}
			*m = &created
			return nil
		}
		(*m).Text = full
		return t.update(updateCtx, **m)
	}
	finish := func() error {
		// A turn cut short because the task closes (the kernel shuts down,
		// its server died) or a newer prompt took over did not end: what
		// streamed is stored, still marked partial. An interrupt ends the
		// turn, and the message.
		partial := ctx.Err() != nil && t.cutShort()
		for _, m := range []*messages.UIMessage{reasonMsg, textMsg} {
			if m != nil && m.Partial {
				m.Partial = partial
				if err := t.update(context.WithoutCancel(ctx), *m); err != nil {
					return err
				}
			}
		}
		return nil
	}
	// cut ends the stretch of text so far: what the agent says after a
	// step of its own is a new message, after the step's.
	cut := func() error {
		if err := finish(); err != nil {
			return err
		}
		textMsg, reasonMsg, textFrom, reasonFrom = nil, nil, len(res.text), len(res.reasoning)
		return nil
	}
	steps := map[string]*activity{}
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			if ferr := finish(); ferr != nil {
				return res, ferr
			}
			return res, err
		}
		if res.first.IsZero() && (ev.Type == provider.EventText || ev.Type == provider.EventReasoning || ev.Type == provider.EventToolCall) {
			res.first = time.Now()
		}
		switch ev.Type {
		case provider.EventText:
			text.WriteString(ev.Text)
			res.text = text.String()
			if err := grow(&textMsg, messages.SayText, res.text[textFrom:]); err != nil {
				return res, err
			}
		case provider.EventReasoning:
			reasoning.WriteString(ev.Text)
			res.reasoning = reasoning.String()
			if ev.Signature != "" {
				res.signature = ev.Signature
			}
			if err := grow(&reasonMsg, messages.SayReasoning, res.reasoning[reasonFrom:]); err != nil {
				return res, err
			}
		case provider.EventToolCall:
			if ev.ToolCall != nil {
				res.calls = append(res.calls, *ev.ToolCall)
			}
		case provider.EventUsage:
			if ev.Usage != nil {
				res.usage = *ev.Usage
			}
		case provider.EventDone:
			res.stop = ev.StopReason
		case provider.EventActivity:
			if ev.Activity == nil {
				continue
			}
			if err := cut(); err != nil {
				return res, err
			}
			if err := t.recordActivity(ctx, prov, steps, *ev.Activity); err != nil {
				return res, err
			}
		case provider.EventAsk:
			if ev.Ask == nil {
				continue
			}
			if err := cut(); err != nil {
				return res, err
			}
			if err := t.askForAgent(ctx, *ev.Ask); err != nil {
				return res, err
			}
		}
	}
	return res, finish()
}

// activity is what the history has of one tool call of an agent that runs
// its own tools.
type activity struct {
	started, ended bool
}

// recordActivity records a step of an agent that runs its own tools, as
// an MCP tool call of ours is recorded: mcp_server_request_started when
// the call starts (the agent's name as the server), mcp_server_response
// with a preview of its output when it ends.
func (t *Task) recordActivity(ctx context.Context, prov provider.Provider, steps map[string]*activity, a provider.Activity) error {
	st := steps[a.ID]
	if st == nil {
		st = &activity{}
		steps[a.ID] = st
	}
	if !st.started {
		st.started = true
		input := string(a.Input)
		if input == "" {
			input = "{}"
		}
		b, _ := json.Marshal(map[string]string{"serverName": prov.Model().ID, "toolName": a.Title,
			"arguments": truncateRunes(input, maxResponsePreview)})
		if _, err := t.say(ctx, messages.SayMCPServerRequestStarted, string(b), nil); err != nil {
			return err
		}
		t.lis.Emit(Event{Kind: EventToolStarted, Tool: a.Title, ToolID: a.ID})
	}
	if a.Done() && !st.ended {
		st.ended = true
		out := a.Output
		if a.Status == "failed" && out == "" {
			out = "(failed)"
		}
		if _, err := t.say(ctx, messages.SayMCPServerResponse, truncateRunes(out, maxResponsePreview), nil); err != nil {
			return err
		}
		t.countTool(a.Title, a.Status == "failed")
		t.lis.Emit(Event{Kind: EventToolFinished, Tool: a.Title, ToolID: a.ID, Failed: a.Status == "failed"})
	}
	return nil
}

// askForAgent answers a permission an agent that runs its own tools asks
// for: by the permission mode (bypassPermissions allows, plan denies),
// else by asking whoever answers asks, as our own tools' asks are.
func (t *Task) askForAgent(ctx context.Context, a provider.Ask) error {
	switch t.perm.PermissionMode() {
	case PermissionBypass:
		a.Reply(true, false)
		return nil
	case PermissionPlan:
		a.Reply(false, false)
		return nil
	}
	input := a.Input
	if !json.Valid(input) {
		input = json.RawMessage("null")
	}
	b, _ := json.Marshal(messages.ToolAsk{Tool: a.Tool, Input: input, Reason: "the agent asks for it"})
	resp, err := t.ask(ctx, messages.AskTool, string(b))
	if err != nil {
		a.Reply(false, false)
		return err
	}
	switch resp.Kind {
	case ResponseYes:
		a.Reply(true, false)
	case ResponseAllowAll:
		a.Reply(true, true)
	default:
		a.Reply(false, false)
	}
	return nil
}

// finishRequest records the assistant message, usage and cost.
func (t *Task) finishRequest(ctx context.Context, prov provider.Provider, res streamed) error {
	var content []messages.ContentBlock
	if res.reasoning != "" && res.signature != "" {
		content = append(content, messages.ContentBlock{Type: messages.BlockThinking, Thinking: res.reasoning, Signature: res.signature})
	}
	if res.text != "" {
		content = append(content, messages.ContentBlock{Type: messages.BlockText, Text: res.text})
	}
	for _, c := range res.calls {
		input := c.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		content = append(content, messages.ContentBlock{Type: messages.BlockToolUse, ID: c.ID, Name: c.Name, Input: input})
	}
	info := prov.Model()
	cost := info.Cost(res.usage)
	if len(content) > 0 {
		reply := &Reply{Model: info.ID, Usage: res.usage, Cost: cost, Stop: res.stop}
		if err := t.appendAPI(ctx, messages.APIMessage{Role: messages.RoleAssistant, Content: content, TS: t.clock.Next()}, reply); err != nil {
			return err
		}
	}
	t.mu.Lock()
	t.totals.InputTokens += res.usage.InputTokens
	t.totals.OutputTokens += res.usage.OutputTokens
	t.totals.CacheReadTokens += res.usage.CacheReadTokens
	t.totals.CacheWriteTokens += res.usage.CacheWriteTokens
	t.totals.Cost += cost
	t.totals.Requests++
	totals := t.totals
	t.mu.Unlock()
	if err := t.cfg.Store.AddUsage(ctx, t.cfg.SessionID, res.usage, cost); err != nil {
		return fmt.Errorf("agent: store usage: %w", err)
	}
	meta := map[string]any{
		"tokensIn": res.usage.InputTokens, "tokensOut": res.usage.OutputTokens,
		"cacheReads": res.usage.CacheReadTokens, "cacheWrites": res.usage.CacheWriteTokens,
		"cost": cost, "stopReason": res.stop, "model": info.ID,
	}
	if !res.start.IsZero() {
		// The request's latency to its first token, and its whole time.
		meta["durationMs"] = time.Since(res.start).Milliseconds()
		if !res.first.IsZero() {
			meta["latencyMs"] = res.first.Sub(res.start).Milliseconds()
		}
	}
	b, _ := json.Marshal(meta)
	if _, err := t.say(ctx, messages.SayAPIReqFinished, string(b), nil); err != nil {
		return err
	}
	ev := Event{Kind: EventTokenUsage, Usage: totals}
	if used := res.usage.InputTokens + res.usage.CacheReadTokens + res.usage.CacheWriteTokens + res.usage.OutputTokens; used > 0 {
		// An answer cut short has no usage: the fill is not known.
		ev.Context = &ContextUse{Used: used, Window: info.ContextWindow, Guessed: info.WindowGuessed}
	}
	t.lis.Emit(ev)
	return nil
}
