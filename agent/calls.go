package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
)

// runTools runs the model's tool calls in order, asking where the policy
// says so, and records one user message with every tool_result. Whatever
// happens — cancel, denial, failure — each tool_use gets its result.
func (t *Task) runTools(ctx context.Context, calls []provider.ToolCall, mistakes *int) error {
	h := t.recordingFor(t.Provider())
	h.output = t.output()
	results := make([]messages.ContentBlock, 0, len(calls))
	var stopErr error
	completed := ""
	for _, call := range calls {
		if stopErr != nil || ctx.Err() != nil {
			results = append(results, toolResult(call.ID, cancelledText, true))
			continue
		}
		res, err := t.runTool(ctx, h, call)
		if err != nil && !errors.Is(err, errDenied) {
			if ctx.Err() != nil {
				results = append(results, toolResult(call.ID, cancelledText, true))
				stopErr = ctx.Err()
				continue
			}
			if fatal(err) {
				results = append(results, toolResult(call.ID, "Internal error: "+err.Error(), true))
				stopErr = err
				continue
			}
			*mistakes++
			t.countTool(call.Name, true)
			t.lis.Emit(Event{Kind: EventToolFailed, Tool: call.Name, Text: err.Error()})
		} else if err == nil {
			*mistakes = 0
			t.countTool(call.Name, false)
		}
		if res.Completion != nil {
			// attempt_completion ends the turn, unless a Stop hook says
			// go on: then the reason is the call's result.
			if reason, goOn := t.stopHooks(ctx); goOn {
				res = Result{Text: "The task may not end yet. Stop hook feedback: " + reason, IsError: true}
			}
		}
		results = append(results, toolResult(call.ID, res.Text, res.IsError, t.forModel(res.Blocks)...))
		h.toolResult(call.ID, res.Text)
		if res.SetNextInput != "" {
			t.lis.Emit(Event{Kind: EventSetNextInput, Text: res.SetNextInput})
		}
		if res.Completion != nil {
			completed = res.Completion.Result
			stopErr = errStop
		}
	}
	if err := t.appendAPI(context.WithoutCancel(ctx), messages.APIMessage{
		Role: messages.RoleUser, Content: results, TS: t.clock.Next(),
	}, nil); err != nil {
		return err
	}
	if stopErr != nil && !errors.Is(stopErr, errStop) {
		return stopErr
	}
	if completed != "" || errors.Is(stopErr, errStop) {
		if _, err := t.say(ctx, messages.SayCompletionResult, completed, nil); err != nil {
			return err
		}
		if _, err := t.askIdle(ctx, messages.AskCompletionResult, ""); err != nil {
			return err
		}
		t.lis.Emit(Event{Kind: EventTaskCompleted, Text: completed, Usage: t.Totals(), ToolUsage: t.ToolUsage()})
		return errStop
	}
	if *mistakes >= t.cfg.MistakeLimit {
		msg := fmt.Sprintf("%d tool calls in a row failed. Answer with guidance to continue.", *mistakes)
		if _, err := t.askIdle(ctx, messages.AskMistakeLimitReached, msg); err != nil {
			return err
		}
		return errStop
	}
	return nil
}

func toolResult(id, text string, isErr bool, more ...messages.ContentBlock) messages.ContentBlock {
	if text == "" {
		text = "(no output)"
	}
	return messages.ContentBlock{
		Type: messages.BlockToolResult, ToolUseID: id, IsError: isErr,
		Content: append([]messages.ContentBlock{{Type: messages.BlockText, Text: text}}, more...),
	}
}

// forModel keeps the images of a tool result that the model may be sent:
// none when it does not take images (the result's text names each one),
// else the first maxShownImages of at most maxShownImageBytes each.
func (t *Task) forModel(blocks []messages.ContentBlock) []messages.ContentBlock {
	if len(blocks) == 0 {
		return nil
	}
	vision := t.vision()
	var out []messages.ContentBlock
	images := 0
	for _, b := range blocks {
		if b.Type == messages.BlockImage {
			if !vision || images >= maxShownImages || b.Source == nil || len(b.Source.Data) > maxShownImageBytes*4/3+4 {
				continue
			}
			images++
		}
		out = append(out, b)
	}
	return out
}

// errDenied marks a call the policy or the user refused: the model is told,
// and it is not counted as a mistake.
var errDenied = errors.New("agent: tool call denied")

// runTool decides, asks if needed, and runs one call.
func (t *Task) runTool(ctx context.Context, h recording, call provider.ToolCall) (Result, error) {
	tool, ok := t.cfg.Toolbox.LookupContext(ctx, call.Name)
	if !ok {
		return Result{Text: fmt.Sprintf("Error: there is no tool %q.", call.Name), IsError: true},
			fmt.Errorf("agent: unknown tool %q", call.Name)
	}
	call, d, err := t.decide(ctx, tool, call)
	if err != nil {
		// Nothing to ask: the call cannot be done (an unknown cell).
		res := Result{Text: "Error: " + err.Error(), IsError: true}
		if tool.Class() == ClassNotebook {
			if _, serr := t.say(context.WithoutCancel(ctx), messages.SayToolResult, toolResultText(call, res, err), nil); serr != nil {
				return res, serr
			}
		}
		return res, err
	}
	d = t.preToolHooks(ctx, call, d)
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	var fb Response // a denial's words and images for the model
	if d.Verdict == Ask {
		if d, fb, err = t.approveCall(ctx, h, call, d); err != nil {
			return Result{}, err
		}
	}
	// Record the decision (asks are already recorded as the ask itself).
	if _, err := t.recordDecision(ctx, call, d); err != nil {
		return Result{}, err
	}
	if d.Verdict != Allow {
		return t.denied(d, fb), errDenied
	}
	t.lis.Emit(Event{Kind: EventTaskActive})
	if w := t.cfg.World; w != nil && !tool.ReadOnly() {
		defer w.BeforeTool(ctx, t.clock.Next(), call)()
	}
	if _, _, ext := tool.Server(); ext {
		t.lis.Emit(Event{Kind: EventToolStarted, Tool: call.Name, ToolID: call.ID})
		res, err := t.runExternal(ctx, tool, call)
		t.lis.Emit(Event{Kind: EventToolFinished, Tool: call.Name, ToolID: call.ID, Failed: err != nil || res.IsError})
		return res, err
	}
	res, err := t.execute(ctx, h, tool, call)
	if err != nil {
		return res, err
	}
	if f := res.Followup; f != nil {
		if res, err = t.followup(ctx, res, f); err != nil {
			return Result{}, err
		}
	}
	return t.postToolHooks(ctx, call, res), nil
}

// approveCall asks whoever answers asks about a call the policy asks
// about, and returns the policy's decision on the answer. An answer in
// words that is not an answer the policy knows denies the call, and is
// returned as feedback for the model.
func (t *Task) approveCall(ctx context.Context, h recording, call provider.ToolCall, d Decision) (Decision, Response, error) {
	resp, err := h.approve(ctx, DecisionMessage(0, call, d))
	if err != nil {
		return d, Response{}, err
	}
	var feedback Response
	ans := AnswerDeny
	switch resp.Kind {
	case ResponseYes:
		ans = AnswerAllow
	case ResponseAllowAll:
		ans = AnswerAllowAll
	case ResponseMessage:
		if a, err := ParseAnswer(resp.Text); err == nil {
			ans = a
		} else {
			feedback = Response{Text: resp.Text, Images: resp.Images} // denied, with words for the model
		}
	}
	d = t.perm.Answer(call, ans)
	if !d.Hard {
		d.Reason += " (" + orDefault(resp.By, "user") + ")"
	}
	return d, feedback, nil
}

// denied is the result of a call that d denies: its reason, and what the
// user said with the denial, if anything.
func (t *Task) denied(d Decision, feedback Response) Result {
	text := "Permission denied: " + d.Reason + "."
	if feedback.Text != "" {
		text += " The user said: " + feedback.Text
	}
	blocks, note := t.attached(feedback.Images)
	if note != "" {
		text += " " + note
	}
	return Result{Text: text, IsError: true, Blocks: blocks}
}

// execute runs an allowed call of one of our own tools, between its
// started and finished events, and records what a person should see of
// it: an edit's or a notebook change's result, the code's output.
func (t *Task) execute(ctx context.Context, h recording, tool *Tool, call provider.ToolCall) (Result, error) {
	t.lis.Emit(Event{Kind: EventToolStarted, Tool: call.Name, ToolID: call.ID})
	res, err := tool.execute(ctx, call.Input, h.output)
	t.lis.Emit(Event{Kind: EventToolFinished, Tool: call.Name, ToolID: call.ID, Failed: err != nil || res.IsError})
	if tool.Class() == ClassEdit || tool.Class() == ClassNotebook {
		if _, serr := t.say(context.WithoutCancel(ctx), messages.SayToolResult, toolResultText(call, res, err), nil); serr != nil {
			return res, serr
		}
	}
	if call.Name == ToolExecuteCode {
		show := func(m *messages.UIMessage) { m.Images = res.Shown }
		if _, serr := t.say(context.WithoutCancel(ctx), messages.SayCommandOutput, res.Text, show); serr != nil {
			return res, serr
		}
	}
	return res, err
}

// followup asks the user ask_followup_question's question f, and makes
// the answer res's text for the model.
func (t *Task) followup(ctx context.Context, res Result, f *Followup) (Result, error) {
	resp, err := t.ask(ctx, messages.AskFollowup, messages.FollowupAsk{Question: f.Question, Suggest: f.Suggestions}.Text())
	if err != nil {
		return Result{}, err
	}
	answer := strings.TrimSpace(resp.Text)
	if resp.Kind == ResponseNo || answer == "" {
		answer = "(the user did not answer)"
	}
	res.Text = "<answer>\n" + answer + "\n</answer>"
	blocks, note := t.attached(resp.Images)
	if note != "" {
		res.Text += "\n" + note
	}
	res.Blocks = append(res.Blocks, blocks...)
	return res, nil
}

// decide is the policy's decision on call before the hooks, and the call
// as it is then hooked and run: checked first (Toolbox.checkCall: a
// notebook call names its cell by id, a run carries the cell's code), a
// change of a cell the agent wrote, as it left it, allowed, any other
// change of a cell asked with its diff, and a tool the agent mode does not
// offer refused. An error is a call that cannot be done.
func (t *Task) decide(ctx context.Context, tool *Tool, call provider.ToolCall) (provider.ToolCall, Decision, error) {
	if ok, mode := t.allowed(tool); !ok {
		return call, Decision{Verdict: Deny, Reason: fmt.Sprintf("%s is not available in %s mode", call.Name, mode), Hard: true}, nil
	}
	call, rv, err := t.cfg.Toolbox.checkCall(ctx, tool, call)
	if err != nil {
		return call, Decision{}, err
	}
	d := t.perm.Decide(call)
	if d.Verdict == Ask && rv.own {
		d = Decision{Verdict: Allow, Reason: "a cell the agent wrote, unchanged since"}
	}
	if d.Verdict == Ask {
		d.Diff = rv.diff
	}
	return call, d, nil
}

// Decide is what the task decides of call now, before the hooks (which run
// with the call itself), as a call that comes to run is decided, and the
// call as it is decided (a notebook call names its cell by id, a run
// carries the cell's code): a surface that must ask before it calls (an
// MCP client answers in a round trip of its own) asks it first, with
// DecisionMessage of the two. An error is a call that cannot be done (a
// notebook call's unknown cell): nothing is to be asked.
func (t *Task) Decide(ctx context.Context, call provider.ToolCall) (Decision, provider.ToolCall, error) {
	tool, ok := t.cfg.Toolbox.LookupContext(ctx, call.Name)
	if !ok {
		return t.perm.Decide(call), call, nil
	}
	call, d, err := t.decide(ctx, tool, call)
	return d, call, err
}

// recordDecision stores an allow or deny decision as a UI message.
func (t *Task) recordDecision(ctx context.Context, call provider.ToolCall, d Decision) (messages.UIMessage, error) {
	m := DecisionMessage(t.clock.Next(), call, d)
	return m, t.createFor(ctx, m, call.ID)
}

// maxResponsePreview caps the text of an mcp_server_response message: the
// UI history keeps a preview, the model gets the whole (capped) result.
const maxResponsePreview = 2000

// progressInterval is the least time between two recorded progress
// reports of one MCP tool call.
const progressInterval = 200 * time.Millisecond

// runExternal runs an allowed call of an MCP server's tool between the
// say messages that record it: mcp_server_request_started (updated with
// the tool's progress) and mcp_server_response (a preview of the result).
func (t *Task) runExternal(ctx context.Context, tool *Tool, call provider.ToolCall) (Result, error) {
	server, name, _ := tool.Server()
	b, _ := json.Marshal(map[string]string{"serverName": server, "toolName": name,
		"arguments": truncateRunes(string(call.Input), maxResponsePreview)})
	started, err := t.say(ctx, messages.SayMCPServerRequestStarted, string(b), nil)
	if err != nil {
		return Result{}, err
	}
	var mu sync.Mutex
	var last time.Time
	progress := func(text string) {
		// At most a few stored versions a second, however often the
		// server reports.
		mu.Lock()
		if time.Since(last) < progressInterval {
			mu.Unlock()
			return
		}
		last = time.Now()
		mu.Unlock()
		m := started
		m.ProgressStatus = &messages.ProgressStatus{Icon: "sync", Text: text}
		if err := t.update(context.WithoutCancel(ctx), m); err != nil {
			t.log.Warn("record MCP progress", "error", err)
		}
	}
	res, err := tool.Execute(WithProgress(ctx, progress), call.Input)
	preview := truncateRunes(res.Text, maxResponsePreview)
	show := func(m *messages.UIMessage) { m.Images = res.Shown }
	if _, serr := t.say(context.WithoutCancel(ctx), messages.SayMCPServerResponse, preview, show); serr != nil {
		return res, serr
	}
	return res, err
}

// Call runs one call of a tool of the task's toolbox that comes from
// outside the model — a client of the session's MCP server (agentkernel
// mcp serve) — the way a model's call runs: decided by the permission
// policy and the PreToolUse hooks, asked through approve where they say
// ask (the ask and its answer are recorded in the UI history), run with
// the world told (a rewind takes its changes back), and given to the
// PostToolUse hooks. The model's history is not changed. A call the policy
// or approve refused returns the result the model would get and an error
// wrapping ErrDenied. Calls may come while a turn runs.
func (t *Task) Call(ctx context.Context, call provider.ToolCall, approve Approver, out func(CodeOutput)) (Result, error) {
	if t.isClosed() {
		return Result{}, ErrClosed
	}
	h := recording{toolResult: func(string, string) {}, approve: func(ctx context.Context, ask messages.UIMessage) (Response, error) {
		ask.TS = t.clock.Next()
		if err := t.create(ctx, ask); err != nil {
			return Response{}, err
		}
		resp, ok := Response{Kind: ResponseNo, By: "nobody"}, false
		if approve != nil {
			resp, ok = approve(ctx, ask)
		}
		if !ok {
			resp = Response{Kind: ResponseNo, By: orDefault(resp.By, "nobody")}
		}
		if err := t.markAnswered(context.WithoutCancel(ctx), ask); err != nil {
			return Response{}, err
		}
		return resp, ctx.Err()
	}, output: out}
	res, err := t.runTool(ctx, h, call)
	switch {
	case errors.Is(err, errDenied):
		t.countTool(call.Name, false)
		return res, fmt.Errorf("%w: %s", ErrDenied, strings.TrimSuffix(strings.TrimPrefix(res.Text, "Permission denied: "), "."))
	case err != nil:
		t.countTool(call.Name, true)
		t.lis.Emit(Event{Kind: EventToolFailed, Tool: call.Name, Text: err.Error()})
	default:
		t.countTool(call.Name, false)
	}
	return res, err
}

// ErrDenied is the error of a Call that the permission policy, a hook or
// the user refused.
var ErrDenied = errors.New("agent: denied")

// maxDiffPreview caps the diff preview of an edit in the UI history.
const maxDiffPreview = 4000

// toolResultText is the tool_result message of a file tool's call: what
// it did or why it failed, and for an edit the lines it changed.
func toolResultText(call provider.ToolCall, res Result, err error) string {
	var in struct {
		Path    string `json:"path"`
		Search  string `json:"search"`
		Replace string `json:"replace"`
		Content string `json:"content"`
	}
	_ = json.Unmarshal(call.Input, &in)
	r := messages.ToolResult{Tool: call.Name, Path: in.Path, OK: err == nil && !res.IsError, Summary: res.Text}
	if err != nil {
		r.Summary = err.Error()
	}
	if r.OK {
		switch call.Name {
		case ToolEditFile:
			r.Diff = linesDiff(in.Search, in.Replace)
		case ToolWriteFile:
			r.Diff = linesDiff("", in.Content)
		default:
			r.Diff = res.Diff
		}
		r.Diff = truncateRunes(r.Diff, maxDiffPreview)
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// linesDiff shows old replaced by new: the lines they share at both ends
// as context, the rest as removed ("-") and added ("+").
func linesDiff(old, new string) string {
	a, b := splitLines(old), splitLines(new)
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	post := 0
	for post < len(a)-pre && post < len(b)-pre && a[len(a)-1-post] == b[len(b)-1-post] {
		post++
	}
	var sb strings.Builder
	for _, l := range a[:pre] {
		sb.WriteString("  " + l + "\n")
	}
	for _, l := range a[pre : len(a)-post] {
		sb.WriteString("- " + l + "\n")
	}
	for _, l := range b[pre : len(b)-post] {
		sb.WriteString("+ " + l + "\n")
	}
	for _, l := range a[len(a)-post:] {
		sb.WriteString("  " + l + "\n")
	}
	return sb.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
