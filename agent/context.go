package agent

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
)

// EstimateTokens guesses the tokens of a request: about four characters a
// token over the system prompt, the tools and the messages sent.
func EstimateTokens(system string, tools []provider.Tool, msgs []messages.APIMessage) int {
	n := len(system)
	for _, t := range tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	for _, m := range msgs {
		for _, b := range m.Content {
			n += len(b.Text) + len(b.Thinking) + len(b.Input) + 16
			for _, c := range b.Content {
				n += len(c.Text) + 16
			}
			if b.Source != nil {
				n += 1000 * 4 // an image is roughly a thousand tokens
			}
		}
	}
	return n/4 + 1
}

const condensePrompt = "Summarize the conversation so far for yourself, so that you can continue the task " +
	"without the earlier messages. Keep: the user's goal and their words on how to do it; the variables in " +
	"the kernel that matter (name, type, shape, columns) and how they were made; the notebook's cells you " +
	"wrote or changed (their ids) and what each does; the files changed; results and numbers found; errors " +
	"met and how they were fixed; what is left to do. Be concise; plain text."

// maxSummaryResult caps the text of one tool result in the condense
// request: the summary needs what a call found, not all of its output.
const maxSummaryResult = 4000

// forSummary is the history eff as the condense request sends it: tool
// calls and their results turned into text (a request with tool blocks
// must define tools on Anthropic's API, and the summary must not call
// one), long results cut, images and reasoning left out.
func forSummary(eff []messages.APIMessage) []messages.APIMessage {
	out := make([]messages.APIMessage, 0, len(eff))
	for _, m := range eff {
		var b strings.Builder
		for _, c := range m.Content {
			switch c.Type {
			case messages.BlockText:
				b.WriteString(c.Text + "\n")
			case messages.BlockImage:
				b.WriteString("[an image]\n")
			case messages.BlockToolUse:
				fmt.Fprintf(&b, "[tool call %s %s: %s]\n", c.Name, c.ID, c.Input)
			case messages.BlockToolResult:
				var r strings.Builder
				for _, rc := range c.Content {
					if rc.Type == messages.BlockImage {
						r.WriteString("[an image]\n")
						continue
					}
					r.WriteString(rc.Text)
				}
				text, cut := cutRunes(r.String(), maxSummaryResult)
				state := "result"
				if c.IsError {
					state = "error"
				}
				fmt.Fprintf(&b, "[tool %s of %s]\n%s\n", state, c.ToolUseID, text)
				if cut > 0 {
					fmt.Fprintf(&b, "[… %d more characters]\n", cut)
				}
			}
		}
		text := strings.TrimSpace(b.String())
		if text == "" {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content[0].Text += "\n\n" + text
			continue
		}
		out = append(out, messages.APIMessage{Role: m.Role, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: text}}})
	}
	return out
}

// cutRunes cuts s to at most n characters, and says how many were left out.
func cutRunes(s string, n int) (string, int) {
	if len(s) <= n {
		return s, 0
	}
	r := []rune(s)
	if len(r) <= n {
		return s, 0
	}
	return string(r[:n]), len(r) - n
}

// manageContext condenses the history (or, failing that, truncates it) when
// the next request would exceed the threshold share of the model's window.
func (t *Task) manageContext(ctx context.Context, prov provider.Provider) error {
	window := prov.Model().ContextWindow
	if window <= 0 {
		return nil
	}
	t.mu.Lock()
	api := t.api
	eff := messages.Effective(api)
	t.mu.Unlock()
	tools := t.offered(ctx)
	system := t.system(tools)
	est := EstimateTokens(system, tools, eff)
	if float64(est) <= t.cfg.ContextThreshold*float64(window) {
		return nil
	}
	if !t.cfg.DisableCondense {
		err := t.condense(ctx, prov, system, tools, api, eff, est)
		if err == nil || ctx.Err() != nil {
			return err
		}
		if _, serr := t.say(ctx, messages.SayCondenseContextError, err.Error(), nil); serr != nil {
			return serr
		}
	}
	return t.truncate(ctx, api, est)
}

// shrink makes the history smaller after the model refused it as longer
// than its context window (whatever the window was thought to be):
// condensed when the model can summarize it, else truncated. It reports
// whether the history sent to the model got smaller.
func (t *Task) shrink(ctx context.Context, prov provider.Provider) (bool, error) {
	t.mu.Lock()
	api := t.api
	eff := messages.Effective(api)
	t.mu.Unlock()
	tools := t.offered(ctx)
	system := t.system(tools)
	est := EstimateTokens(system, tools, eff)
	if !t.cfg.DisableCondense {
		err := t.condense(ctx, prov, system, tools, api, eff, est)
		if err == nil || ctx.Err() != nil {
			return err == nil, err
		}
		if _, serr := t.say(ctx, messages.SayCondenseContextError, err.Error(), nil); serr != nil {
			return false, serr
		}
	}
	if err := t.truncate(ctx, api, est); err != nil {
		return false, err
	}
	t.mu.Lock()
	after := len(messages.Effective(t.api))
	t.mu.Unlock()
	return after < len(eff), nil
}

func (t *Task) condense(ctx context.Context, prov provider.Provider, system string, tools []provider.Tool, api, eff []messages.APIMessage, prev int) error {
	req := provider.Request{
		System: system,
		Messages: forSummary(append(append([]messages.APIMessage(nil), eff...), messages.APIMessage{
			Role: messages.RoleUser, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: condensePrompt}},
		})),
	}
	s, err := prov.Stream(ctx, req)
	if err != nil {
		return fmt.Errorf("condense: %w", err)
	}
	defer s.Close()
	var b strings.Builder
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("condense: %w", err)
		}
		if ev.Type == provider.EventText {
			b.WriteString(ev.Text)
		}
	}
	summary := strings.TrimSpace(b.String())
	if summary == "" {
		return fmt.Errorf("condense: the model returned an empty summary")
	}
	id := uuid.NewString()
	newAPI, err := messages.Condense(api, messages.CondenseSpec{ID: id, Summary: summary, TS: t.clock.Next()})
	if err != nil {
		return err
	}
	after := EstimateTokens(system, tools, messages.Effective(newAPI))
	ui := messages.UIMessage{TS: t.clock.Next(), Type: messages.TypeSay, Say: messages.SayCondenseContext,
		ContextCondense: &messages.ContextCondense{CondenseID: id, Summary: summary, PrevContextTokens: prev, NewContextTokens: after}}
	return t.replaceAPI(ctx, api, newAPI, ui)
}

func (t *Task) truncate(ctx context.Context, api []messages.APIMessage, prev int) error {
	id := uuid.NewString()
	newAPI, n, err := messages.Truncate(api, messages.TruncateSpec{ID: id, Fraction: 0.5, TS: t.clock.Next()})
	if err != nil || n == 0 {
		return err
	}
	ui := messages.UIMessage{TS: t.clock.Next(), Type: messages.TypeSay, Say: messages.SaySlidingWindowTruncation,
		ContextTruncation: &messages.ContextTruncation{TruncationID: id, MessagesRemoved: n, PrevContextTokens: prev}}
	return t.replaceAPI(ctx, api, newAPI, ui)
}

// replaceAPI stores a rewritten API history (tags changed, a summary or
// marker added) and the UI message announcing it, in one transaction.
func (t *Task) replaceAPI(ctx context.Context, oldAPI, newAPI []messages.APIMessage, announce messages.UIMessage) error {
	t.mu.Lock()
	oldUI := t.ui
	newUI := append(append([]messages.UIMessage(nil), oldUI...), announce)
	t.mu.Unlock()
	if err := t.cfg.Store.RewriteAPI(context.WithoutCancel(ctx), t.cfg.SessionID, oldUI, oldAPI, newAPI, announce); err != nil {
		return &storeError{err}
	}
	t.mu.Lock()
	t.ui, t.api = newUI, newAPI
	t.mu.Unlock()
	t.lis.Emit(Event{Kind: EventMessageCreated, Message: &announce})
	return nil
}
