package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// turn is runTurn's work between its events: the answer to the ask it
// resumes from, the user's message (unless it only retries), then the
// turn's steps.
func (t *Task) turn(ctx context.Context, p Prompt, resumeFrom *TurnAsk, lim Limits) error {
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
	if !retriesOnly(p, resumeFrom) {
		extra, blocked, err := t.promptHooks(ctx, p.Text)
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
	t.loadRules(ctx)
	return t.steps(ctx, lim)
}

// retriesOnly reports whether p only answers the failed request or the
// resume ask it resumes from (an empty prompt, or "resume" for a resume
// ask): the turn then asks the model again without a new user message.
func retriesOnly(p Prompt, resumeFrom *TurnAsk) bool {
	if resumeFrom == nil || len(p.Images) > 0 {
		return false
	}
	ask, text := resumeFrom.msg.Ask, strings.TrimSpace(p.Text)
	if ask != messages.AskAPIReqFailed && ask != messages.AskResumeTask {
		return false
	}
	return text == "" || ask == messages.AskResumeTask && strings.EqualFold(text, "resume")
}

// loadRules reads the turn's instructions and the rule files they came
// from (Config.Rules), once a turn.
func (t *Task) loadRules(ctx context.Context) {
	instr, files := "", []string(nil)
	if f := t.cfg.Rules; f != nil {
		instr, files = f(ctx)
	}
	t.mu.Lock()
	t.turnInstr, t.turnRules = strings.TrimSpace(instr), files
	t.mu.Unlock()
}

// steps runs the turn's model requests and tool calls, within its
// limits, until the model ends its turn or something stops it.
func (t *Task) steps(ctx context.Context, lim Limits) error {
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

// request sends the effective history to the model, with retries, and
// records the answer. It returns the tool calls to run.
func (t *Task) request(ctx context.Context, prov provider.Provider) ([]provider.ToolCall, error) {
	shrunk := 0 // times the history was shrunk for a context-window refusal
	began := time.Now()
	for attempt := 0; ; attempt++ {
		req, rules := t.nextRequest(ctx)
		if _, err := t.say(ctx, messages.SayAPIReqStarted, apiReqText(len(req.Messages), attempt, rules), nil); err != nil {
			return nil, err
		}
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
			again, serr := t.shrinkToRetry(ctx, prov, err)
			if serr != nil {
				return nil, serr
			}
			if again {
				continue
			}
		}
		delay := t.cfg.RetryBase << attempt
		if ae != nil && ae.RetryAfter > 0 {
			delay = ae.RetryAfter
		}
		delay = min(delay, time.Minute)
		if ae != nil && ae.Retryable && attempt < t.cfg.MaxRetries && time.Since(began)+delay <= t.cfg.RetryBudget {
			if err := t.retryAfter(ctx, prov, err, delay, attempt); err != nil {
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

// nextRequest is the request to send now: the system prompt, the
// effective history and the tools offered, with the turn's rule files
// (for the api_req_started message).
func (t *Task) nextRequest(ctx context.Context) (provider.Request, []string) {
	tools := t.offered(ctx) // outside the lock: it asks the tool source
	system := t.system(tools)
	t.mu.Lock()
	defer t.mu.Unlock()
	req := provider.Request{
		System:   system,
		Messages: messages.Effective(t.api),
		Tools:    tools,
		Effort:   t.effort,
	}
	return req, t.turnRules
}

// shrinkToRetry shrinks the history after the model refused it as
// longer than its context window (refusal), and reports whether it
// shrank, so that the request is sent again.
func (t *Task) shrinkToRetry(ctx context.Context, prov provider.Provider, refusal error) (bool, error) {
	msg := fmt.Sprintf("%s. The conversation is longer than the model's context window: condensing it, then asking again.", refusal)
	if _, err := t.say(ctx, messages.SayAPIReqRetryDelayed, msg, nil); err != nil {
		return false, err
	}
	ok, err := t.shrink(ctx, prov)
	if err != nil || !ok {
		return false, err
	}
	if _, err := t.say(ctx, messages.SayAPIReqRetried, "", nil); err != nil {
		return false, err
	}
	return true, nil
}

// retryAfter says that the request failed (failure) and is retried,
// waits delay, or until ctx ends, and says it is retried.
func (t *Task) retryAfter(ctx context.Context, prov provider.Provider, failure error, delay time.Duration, attempt int) error {
	msg := fmt.Sprintf("The request to %s failed: %s. Retrying in %s (retry %d of %d).", modelName(prov), failure,
		delay.Round(time.Millisecond), attempt+1, t.cfg.MaxRetries)
	if _, err := t.say(ctx, messages.SayAPIReqRetryDelayed, msg, nil); err != nil {
		return err
	}
	select {
	case <-time.After(delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	_, err := t.say(ctx, messages.SayAPIReqRetried, "", nil)
	return err
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
