package agent

import (
	"context"
	"fmt"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/hooks"
	"github.com/agentkernel/agentkernel/messages"
)

// The user's hooks (package hooks) around a turn: what a block or an
// approval means for each event is decided here, so every surface that
// drives a Task — notebook, panel, ask, run — gets the same behaviour.
//
//   - SessionStart runs once per Task, before its first prompt; it cannot
//     block. Its stdout is context for the model.
//   - UserPromptSubmit runs before a prompt is recorded; a block drops the
//     prompt and tells the user why (a say error). Its stdout is context.
//   - PreToolUse runs before a call is decided: a block denies the call and
//     the reason is its tool result; an approval allows a call the policy
//     would ask about (refusals and deny rules still hold).
//   - PostToolUse runs after a call that ran: a block's reason is added to
//     the result the model gets.
//   - Stop runs when the model ends its turn (or calls attempt_completion):
//     a block makes it go on, told the reason.
//
// A hook that fails is reported (EventHookFailed and a say error) and
// otherwise ignored.

// runHooks runs the hooks of in.Event with the session's fields filled in
// and reports their problems.
func (t *Task) runHooks(ctx context.Context, in hooks.Input) hooks.Outcome {
	if t.cfg.Hooks == nil {
		return hooks.Outcome{}
	}
	in.SessionID = t.cfg.SessionID
	in.CWD = t.cfg.Toolbox.Workspace().Root()
	in.PermissionMode = string(t.perm.PermissionMode())
	out := t.cfg.Hooks.Run(ctx, in)
	for _, p := range out.Problems {
		text := fmt.Sprintf("%s hook problem (ignored): %s", in.Event, p.Error())
		t.lis.Emit(Event{Kind: EventHookFailed, Tool: in.ToolName, Text: text})
		if _, err := t.say(context.WithoutCancel(ctx), messages.SayError, text, nil); err != nil {
			t.log.Warn("record a hook problem", "error", err)
		}
	}
	if out.Decision == hooks.Block {
		t.lis.Emit(Event{Kind: EventHookBlocked, Tool: in.ToolName, Text: string(in.Event) + ": " + out.Reason,
			Hook: &HookBlock{Event: in.Event, Reason: out.Reason}})
	}
	return out
}

// promptHooks runs SessionStart (on the task's first prompt) and
// UserPromptSubmit. It returns the hooks' context for the model, or
// blocked with the prompt dropped and the user told.
func (t *Task) promptHooks(ctx context.Context, text string) (extra string, blocked bool, err error) {
	if t.cfg.Hooks == nil {
		return "", false, nil
	}
	t.mu.Lock()
	first := !t.sessionStarted
	t.sessionStarted = true
	resumed := len(t.cfg.UI) > 0
	t.mu.Unlock()
	if first {
		source := "startup"
		if resumed {
			source = "resume"
		}
		// Kept until a prompt goes through.
		t.startContext = t.runHooks(ctx, hooks.Input{Event: hooks.SessionStart, Source: source}).Context
	}
	out := t.runHooks(ctx, hooks.Input{Event: hooks.UserPromptSubmit, Prompt: text})
	if ctx.Err() != nil {
		return "", false, ctx.Err()
	}
	if out.Decision == hooks.Block {
		_, err := t.say(ctx, messages.SayError, "A UserPromptSubmit hook blocked this prompt: "+out.Reason, nil)
		return "", true, err
	}
	extra = joinNonEmpty(t.startContext, out.Context)
	t.startContext = ""
	return extra, false, nil
}

// preToolHooks runs PreToolUse and folds its outcome into the policy's
// decision d.
func (t *Task) preToolHooks(ctx context.Context, call provider.ToolCall, d Decision) Decision {
	out := t.runHooks(ctx, hooks.Input{Event: hooks.PreToolUse, ToolName: call.Name, ToolInput: call.Input, ToolUseID: call.ID})
	switch {
	case out.Decision == hooks.Block:
		return Decision{Verdict: Deny, Reason: "blocked by a PreToolUse hook: " + out.Reason}
	case out.Decision == hooks.Approve && d.Verdict == Ask:
		return Decision{Verdict: Allow, Reason: "approved by a PreToolUse hook"}
	}
	return d
}

// postToolHooks runs PostToolUse on a call that ran; a block's reason is
// added to what the model gets.
func (t *Task) postToolHooks(ctx context.Context, call provider.ToolCall, res Result) Result {
	if t.cfg.Hooks == nil {
		return res
	}
	out := t.runHooks(ctx, hooks.Input{Event: hooks.PostToolUse, ToolName: call.Name, ToolInput: call.Input, ToolUseID: call.ID,
		ToolResponse: map[string]any{"output": res.Text, "is_error": res.IsError}})
	if out.Decision == hooks.Block {
		res.Text += "\n\nPostToolUse hook: " + out.Reason
	}
	return res
}

// stopHooks runs Stop when the model would end the turn. It returns the
// reason when a hook wants the model to go on. The turn's goroutine owns
// t.stopHookActive.
func (t *Task) stopHooks(ctx context.Context) (reason string, goOn bool) {
	if t.cfg.Hooks == nil {
		return "", false
	}
	out := t.runHooks(ctx, hooks.Input{Event: hooks.Stop, StopHookActive: t.stopHookActive})
	if out.Decision != hooks.Block || ctx.Err() != nil {
		return "", false
	}
	t.stopHookActive = true
	return out.Reason, true
}

// stopFeedback tells the model, as a user message, why it must go on; the
// UI history shows it as a note.
func (t *Task) stopFeedback(ctx context.Context, reason string) error {
	text := "Stop hook feedback: " + reason
	m, err := t.say(ctx, messages.SayText, text, nil)
	if err != nil {
		return err
	}
	return t.appendAPI(ctx, messages.APIMessage{
		Role: messages.RoleUser, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: text}}, TS: m.TS,
	}, nil)
}

func joinNonEmpty(parts ...string) string {
	out := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if out != "" {
			out += "\n\n"
		}
		out += p
	}
	return out
}
