package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
)

// runTools runs the model's tool calls in order, asking where the policy
// says so, and records one user message with every tool_result. Whatever
// happens — cancel, denial, failure — each tool_use gets its result.
func (t *Task) runTools(ctx context.Context, calls []provider.ToolCall, mistakes *int) error {
	h := t.recordingFor(t.Provider())
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
		results = append(results, toolResult(call.ID, res.Text, res.IsError))
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

func toolResult(id, text string, isErr bool) messages.ContentBlock {
	if text == "" {
		text = "(no output)"
	}
	return messages.ContentBlock{
		Type: messages.BlockToolResult, ToolUseID: id, IsError: isErr,
		Content: []messages.ContentBlock{{Type: messages.BlockText, Text: text}},
	}
}

// errDenied marks a call the policy or the user refused: the model is told,
// and it is not counted as a mistake.
var errDenied = errors.New("agent: tool call denied")

// runTool decides, asks if needed, and runs one call.
func (t *Task) runTool(ctx context.Context, h recording, call provider.ToolCall) (Result, error) {
	tool, ok := t.cfg.Toolbox.Lookup(call.Name)
	if !ok {
		return Result{Text: fmt.Sprintf("Error: there is no tool %q.", call.Name), IsError: true},
			fmt.Errorf("agent: unknown tool %q", call.Name)
	}
	d := t.preToolHooks(ctx, call, t.perm.Decide(call))
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	var feedback string
	if d.Verdict == Ask {
		resp, err := h.approve(ctx, DecisionMessage(0, call, d))
		if err != nil {
			return Result{}, err
		}
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
				feedback = resp.Text // denied, with words for the model
			}
		}
		d = t.perm.Answer(call, ans)
		if !d.Hard {
			d.Reason += " (" + orDefault(resp.By, "user") + ")"
		}
	}
	// Record the decision (asks are already recorded as the ask itself).
	if _, err := t.recordDecision(ctx, call, d); err != nil {
		return Result{}, err
	}
	if d.Verdict != Allow {
		text := "Permission denied: " + d.Reason + "."
		if feedback != "" {
			text += " The user said: " + feedback
		}
		return Result{Text: text, IsError: true}, errDenied
	}
	t.lis.Emit(Event{Kind: EventTaskActive})
	if w := t.cfg.World; w != nil && !tool.ReadOnly() {
		defer w.BeforeTool(ctx, t.clock.Next(), call)()
	}
	t.lis.Emit(Event{Kind: EventToolStarted, Tool: call.Name, ToolID: call.ID})
	res, err := tool.Execute(ctx, call.Input)
	t.lis.Emit(Event{Kind: EventToolFinished, Tool: call.Name, ToolID: call.ID, Failed: err != nil || res.IsError})
	if call.Name == ToolExecuteCode {
		show := func(m *messages.UIMessage) { m.Images = res.Shown }
		if _, serr := t.say(context.WithoutCancel(ctx), messages.SayCommandOutput, res.Text, show); serr != nil {
			return res, serr
		}
	}
	if err != nil {
		return res, err
	}
	if f := res.Followup; f != nil {
		b, _ := json.Marshal(map[string]any{"question": f.Question, "suggest": f.Suggestions})
		resp, err := t.ask(ctx, messages.AskFollowup, string(b))
		if err != nil {
			return Result{}, err
		}
		answer := strings.TrimSpace(resp.Text)
		if resp.Kind == ResponseNo || answer == "" {
			answer = "(the user did not answer)"
		}
		res.Text = "<answer>\n" + answer + "\n</answer>"
	}
	return t.postToolHooks(ctx, call, res), nil
}

// recordDecision stores an allow or deny decision as a UI message.
func (t *Task) recordDecision(ctx context.Context, call provider.ToolCall, d Decision) (messages.UIMessage, error) {
	m := DecisionMessage(t.clock.Next(), call, d)
	return m, t.createFor(ctx, m, call.ID)
}
