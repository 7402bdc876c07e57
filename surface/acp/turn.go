package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
)

// commands are the slash commands every session offers.
var commands = []sdk.AvailableCommand{
	{Name: "rewind", Description: "take the conversation and the files back to before your last prompt (or the Nth last)",
		Input: &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: "N (default 1)"}}},
}

// Prompt implements sdk.Agent: one turn of the session, its events as
// session/update, its asks as session/request_permission.
func (a *Agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	text, images, err := promptContent(p.Prompt)
	if err != nil {
		return sdk.PromptResponse{}, sdk.NewInvalidParams(map[string]any{"prompt": err.Error()})
	}
	if cmd, arg, ok := slashCommand(text); ok && cmd == "rewind" {
		return a.rewindCommand(ctx, s, arg)
	}
	s.mu.Lock()
	s.cancelled = false
	s.mu.Unlock()
	t := &turn{a: a, s: s, ctx: context.WithoutCancel(ctx), prompt: text, sent: map[int64]int{}, calls: map[string]*call{}}
	res, err := s.host.Submit(ctx, text, session.Follow{Approve: t.approve, Events: t.event, Output: t.output, Images: images})
	s.mu.Lock()
	cancelled := s.cancelled
	s.cancelled = false
	s.mu.Unlock()
	usage := &sdk.Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens,
		TotalTokens:      res.Usage.InputTokens + res.Usage.OutputTokens,
		CachedReadTokens: sdk.Ptr(res.Usage.CacheReadTokens), CachedWriteTokens: sdk.Ptr(res.Usage.CacheWriteTokens)}
	switch {
	case cancelled || errors.Is(err, context.Canceled) || errors.Is(err, session.ErrSuperseded):
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled, Usage: usage}, nil
	case errors.Is(err, agent.ErrMaxRequests), errors.Is(err, agent.ErrMaxBudget):
		return sdk.PromptResponse{StopReason: sdk.StopReasonMaxTurnRequests, Usage: usage}, nil
	case errors.Is(err, agent.ErrNoProvider):
		// The turn said how to configure a model (agent.NoModelHelp): that
		// is its answer.
		return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn, Usage: usage}, nil
	case err != nil:
		return sdk.PromptResponse{}, err
	}
	return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn, Usage: usage}, nil
}

// promptContent is a prompt's text (text blocks, and embedded resources
// quoted with their URI, joined by blank lines) and its images.
func promptContent(blocks []sdk.ContentBlock) (string, []agent.Image, error) {
	var parts []string
	var images []agent.Image
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			parts = append(parts, b.Text.Text)
		case b.Image != nil:
			raw, err := base64.StdEncoding.DecodeString(b.Image.Data)
			if err != nil {
				return "", nil, fmt.Errorf("image: %w", err)
			}
			im, err := agent.ImageFromBytes(b.Image.MimeType, raw)
			if err != nil {
				return "", nil, err
			}
			images = append(images, im)
		case b.Resource != nil && b.Resource.Resource.TextResourceContents != nil:
			r := b.Resource.Resource.TextResourceContents
			parts = append(parts, fmt.Sprintf("%s:\n```\n%s\n```", r.Uri, r.Text))
		case b.ResourceLink != nil:
			parts = append(parts, "@"+b.ResourceLink.Uri)
		default:
			return "", nil, errors.New("only text, image and resource blocks are taken")
		}
	}
	text := strings.TrimSpace(strings.Join(parts, "\n\n"))
	if text == "" {
		return "", nil, errors.New("the prompt has no text")
	}
	return text, images, nil
}

// slashCommand parses "/name arg".
func slashCommand(text string) (name, arg string, ok bool) {
	rest, ok := strings.CutPrefix(text, "/")
	if !ok {
		return "", "", false
	}
	name, arg, _ = strings.Cut(rest, " ")
	return name, strings.TrimSpace(arg), true
}

// rewindCommand is /rewind [N]: the session goes back to before the Nth
// last prompt, files included (the kernel is left as it is).
func (a *Agent) rewindCommand(ctx context.Context, s *acpSession, arg string) (sdk.PromptResponse, error) {
	n := 1
	if arg != "" {
		v, err := strconv.Atoi(arg)
		if err != nil || v < 1 {
			return sdk.PromptResponse{}, sdk.NewInvalidParams(map[string]any{"prompt": "usage: /rewind [N], N ≥ 1 prompts back"})
		}
		n = v
	}
	var prompts []int64
	first := true
	for _, m := range s.host.Conversation().UI() {
		if isPrompt(m, &first) {
			prompts = append(prompts, m.TS)
		}
	}
	if n > len(prompts) {
		a.update(ctx, s, sdk.UpdateAgentMessageText(fmt.Sprintf("There are %d prompts to rewind to.", len(prompts))))
		return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
	}
	summary, err := a.rewind(ctx, s, prompts[len(prompts)-n], false)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	a.update(ctx, s, sdk.UpdateAgentMessageText(summary))
	return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
}

// rewind takes s back to before the message stamped ts.
func (a *Agent) rewind(ctx context.Context, s *acpSession, ts int64, conversationOnly bool) (string, error) {
	rw, err := s.host.World().Rewind(ctx, ts, session.RewindOptions{ConversationOnly: conversationOnly,
		ConfirmReplay: func(context.Context, []session.CodeRun) bool { return false }})
	if err != nil {
		return "", err
	}
	return rw.Summary(), nil
}

// HandleExtensionMethod implements the SDK's extension methods:
// _agentkernel/rewind {sessionId, ts, conversationOnly} takes a session
// back to before the message stamped ts (the _meta.agentkernel.ts of its
// session/update notifications).
func (a *Agent) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method != "_agentkernel/rewind" {
		return nil, sdk.NewMethodNotFound(method)
	}
	var p struct {
		SessionID        string `json:"sessionId"`
		TS               int64  `json:"ts"`
		ConversationOnly bool   `json:"conversationOnly"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.TS <= 0 {
		return nil, sdk.NewInvalidParams(map[string]any{"error": "want {sessionId, ts, conversationOnly}"})
	}
	s, err := a.session(sdk.SessionId(p.SessionID))
	if err != nil {
		return nil, err
	}
	summary, err := a.rewind(ctx, s, p.TS, p.ConversationOnly)
	if err != nil {
		return nil, err
	}
	return map[string]any{"summary": summary}, nil
}

// isPrompt reports whether m is one of the user's prompts (the first text
// message of a session, and every user_feedback); first is the caller's
// "no text message seen yet".
func isPrompt(m messages.UIMessage, first *bool) bool {
	if m.Type != messages.TypeSay {
		return false
	}
	p := m.Say == messages.SayUserFeedback || (m.Say == messages.SayText && *first)
	if m.Say == messages.SayText {
		*first = false
	}
	return p
}

// turn follows one prompt's turn for the client.
type turn struct {
	a      *Agent
	s      *acpSession
	ctx    context.Context
	prompt string

	mu       sync.Mutex
	promptTS int64         // the user's message of this turn, once seen
	sent     map[int64]int // per streaming message: the bytes of its text sent
	calls    map[string]*call
	order    []string // tool call ids in the order the model made them
	running  string   // the call that runs now (its outputs go there)
}

// call is a tool call as the client knows it.
type call struct {
	id, tool string
	input    json.RawMessage
	decided  bool
	content  []sdk.ToolCallContent
}

// meta marks an update with the UI message it comes from.
func meta(ts int64) map[string]any {
	return map[string]any{"agentkernel": map[string]any{"ts": ts}}
}

// replayMeta marks an update of session/load's replay: a client that keeps
// its own copy of the conversation (Jupyter AI's chat) tells it from a live
// one by the mark, wherever its handling reorders it.
func replayMeta(ts int64) map[string]any {
	return map[string]any{"agentkernel": map[string]any{"ts": ts, "replay": true}}
}

// event takes one event of the session (Turn.Events).
func (t *turn) event(e agent.Event) {
	switch e.Kind {
	case agent.EventMessageCreated, agent.EventMessageUpdated:
		t.message(*e.Message, e.ToolID)
	case agent.EventAPIMessage:
		if e.API.Role == messages.RoleAssistant {
			t.toolCalls(e.API.Content)
		} else {
			t.toolResults(e.API.Content)
		}
	case agent.EventToolStarted:
		t.status(e.ToolID, sdk.ToolCallStatusInProgress, true)
	case agent.EventToolFinished:
		st := sdk.ToolCallStatusCompleted
		if e.Failed {
			st = sdk.ToolCallStatusFailed
		}
		t.status(e.ToolID, st, false)
	case agent.EventTokenUsage:
		// How full the context is, and what the session has cost.
		if c := e.Context; c != nil {
			t.a.update(t.ctx, t.s, sdk.SessionUpdate{UsageUpdate: &sdk.SessionUsageUpdate{Used: c.Used, Size: c.Window,
				Cost: &sdk.Cost{Amount: e.Usage.Cost, Currency: "USD"}}})
		}
	case session.EventSettingsChanged:
		t.a.update(t.ctx, t.s, sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{
			CurrentModeId: sdk.SessionModeId(t.s.host.Modes().Permission())}})
	}
}

// message streams the model's words and thoughts as chunks (the new end
// of a message's text each time), and says what the agent says.
func (t *turn) message(m messages.UIMessage, toolID string) {
	t.mu.Lock()
	if t.promptTS == 0 && m.Type == messages.TypeSay && !m.Partial && m.Text == t.prompt &&
		(m.Say == messages.SayText || m.Say == messages.SayUserFeedback) {
		t.promptTS = m.TS // the user's own message: the client has it
		t.mu.Unlock()
		return
	}
	if m.Decision != nil {
		u, ok := t.decidedLocked(toolID, m)
		t.mu.Unlock()
		if ok {
			t.a.update(t.ctx, t.s, u)
		}
		return
	}
	var u sdk.SessionUpdate
	switch {
	case m.Type == messages.TypeSay && (m.Say == messages.SayText || m.Say == messages.SayReasoning || m.Say == messages.SayCompletionResult):
		sent := t.sent[m.TS]
		if len(m.Text) <= sent {
			t.mu.Unlock()
			return
		}
		t.sent[m.TS] = len(m.Text)
		delta := m.Text[sent:]
		if m.Say == messages.SayReasoning {
			u = sdk.UpdateAgentThoughtText(delta)
			u.AgentThoughtChunk.Meta = meta(m.TS)
		} else {
			u = sdk.UpdateAgentMessageText(delta)
			u.AgentMessageChunk.Meta = meta(m.TS)
		}
	case m.Type == messages.TypeSay && m.Say == messages.SayError && !m.Partial:
		u = sdk.UpdateAgentMessageText("\n\n**Error:** " + m.Text + "\n")
		u.AgentMessageChunk.Meta = meta(m.TS)
	case m.Type == messages.TypeAsk && m.Ask == messages.AskFollowup && !m.Partial:
		q, _ := messages.ParseFollowup(m)
		text := q.Question
		for i, s := range q.Suggest {
			text += fmt.Sprintf("\n%d. %s", i+1, s)
		}
		u = sdk.UpdateAgentMessageText(text + "\n")
		u.AgentMessageChunk.Meta = meta(m.TS)
	default:
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	t.a.update(t.ctx, t.s, u)
}

// toolCalls announces the tool calls of the model's answer.
func (t *turn) toolCalls(content []messages.ContentBlock) {
	for _, c := range content {
		if c.Type != messages.BlockToolUse || c.Name == agent.ToolAttemptCompletion || c.Name == agent.ToolAskFollowupQuestion {
			continue
		}
		t.mu.Lock()
		t.calls[c.ID] = &call{id: c.ID, tool: c.Name, input: c.Input}
		t.order = append(t.order, c.ID)
		t.mu.Unlock()
		var raw any
		_ = json.Unmarshal(c.Input, &raw)
		t.a.update(t.ctx, t.s, sdk.StartToolCall(sdk.ToolCallId(c.ID), title(c.Name, c.Input),
			sdk.WithStartKind(kind(c.Name)), sdk.WithStartStatus(sdk.ToolCallStatusPending), sdk.WithStartRawInput(raw)))
	}
}

// toolResults gives each call its result as the model gets it: as the
// last of its content, and as its rawOutput (what a client that shows no
// content, such as Jupyter AI's chat, shows).
func (t *turn) toolResults(content []messages.ContentBlock) {
	for _, c := range content {
		if c.Type != messages.BlockToolResult {
			continue
		}
		text := resultText(c)
		t.mu.Lock()
		k := t.calls[c.ToolUseID]
		var blocks []sdk.ToolCallContent
		if k != nil {
			if text != "" {
				k.content = append(k.content, sdk.ToolContent(sdk.TextBlock(text)))
			}
			blocks = append(blocks, k.content...)
		}
		t.mu.Unlock()
		if k != nil {
			opts := []sdk.ToolCallUpdateOpt{sdk.WithUpdateContent(blocks)}
			if text != "" {
				opts = append(opts, sdk.WithUpdateRawOutput(text))
			}
			t.a.update(t.ctx, t.s, sdk.UpdateToolCall(sdk.ToolCallId(k.id), opts...))
		}
	}
}

// resultText is a tool result's text.
func resultText(c messages.ContentBlock) string {
	if c.Text != "" {
		return c.Text
	}
	var parts []string
	for _, b := range c.Content {
		if b.Type == messages.BlockText {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// status moves a call to st; a running call takes the code's outputs.
func (t *turn) status(id string, st sdk.ToolCallStatus, running bool) {
	t.mu.Lock()
	if _, ok := t.calls[id]; !ok {
		t.mu.Unlock()
		return
	}
	if running {
		t.running = id
	} else if t.running == id {
		t.running = ""
	}
	t.mu.Unlock()
	t.a.update(t.ctx, t.s, sdk.UpdateToolCall(sdk.ToolCallId(id), sdk.WithUpdateStatus(st)))
}

// decidedLocked marks a call decided; a denied one has failed, which the
// returned update says.
func (t *turn) decidedLocked(id string, m messages.UIMessage) (sdk.SessionUpdate, bool) {
	k := t.calls[id]
	if k == nil {
		return sdk.SessionUpdate{}, false
	}
	k.decided = true
	if m.Decision.Allowed {
		return sdk.SessionUpdate{}, false
	}
	return sdk.UpdateToolCall(sdk.ToolCallId(id), sdk.WithUpdateStatus(sdk.ToolCallStatusFailed),
		sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(m.Text))})), true
}

// output gives the running call the code's outputs (Turn.Output): text
// as it streams, images as images.
func (t *turn) output(o backing.Output) {
	var c struct {
		Text string            `json:"text"`
		Data map[string]string `json:"data"`
		// error
		EName  string `json:"ename"`
		EValue string `json:"evalue"`
	}
	_ = json.Unmarshal(o.Content, &c)
	var block *sdk.ContentBlock
	switch {
	case c.Text != "":
		b := sdk.TextBlock(c.Text)
		block = &b
	case c.Data["image/png"] != "":
		b := sdk.ImageBlock(strings.TrimSpace(c.Data["image/png"]), "image/png")
		block = &b
	case c.Data["text/plain"] != "":
		b := sdk.TextBlock(c.Data["text/plain"])
		block = &b
	case c.EName != "":
		b := sdk.TextBlock(c.EName + ": " + c.EValue)
		block = &b
	}
	if block == nil {
		return
	}
	t.mu.Lock()
	k := t.calls[t.running]
	if k == nil {
		t.mu.Unlock()
		return
	}
	k.content = append(k.content, sdk.ToolContent(*block))
	blocks := append([]sdk.ToolCallContent(nil), k.content...)
	t.mu.Unlock()
	t.a.update(t.ctx, t.s, sdk.UpdateToolCall(sdk.ToolCallId(k.id), sdk.WithUpdateContent(blocks)))
}

// approve asks the client (Turn.Approve): an approval is
// session/request_permission about its tool call; a followup question is
// left to the next prompt, which answers it.
func (t *turn) approve(ctx context.Context, ask messages.UIMessage) (agent.Response, bool) {
	deny := agent.Response{Kind: agent.ResponseNo, By: "acp"}
	if ask.Ask == messages.AskFollowup {
		return agent.Response{}, false
	}
	k := t.callOf(ask)
	upd := sdk.ToolCallUpdate{Title: sdk.Ptr(streamTitle(ask)), Status: sdk.Ptr(sdk.ToolCallStatusPending)}
	if k != nil {
		var raw any
		_ = json.Unmarshal(k.input, &raw)
		upd.ToolCallId, upd.Kind, upd.RawInput, upd.Title = sdk.ToolCallId(k.id), sdk.Ptr(kind(k.tool)), raw, sdk.Ptr(title(k.tool, k.input))
	} else {
		upd.ToolCallId = sdk.ToolCallId(fmt.Sprintf("ask_%d", ask.TS))
	}
	resp, err := t.a.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: sdk.SessionId(t.s.id), ToolCall: upd,
		Options: []sdk.PermissionOption{
			{OptionId: "allow", Name: "Allow", Kind: sdk.PermissionOptionKindAllowOnce},
			{OptionId: "always", Name: "Always allow", Kind: sdk.PermissionOptionKindAllowAlways},
			{OptionId: "reject", Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
		}})
	if err != nil || resp.Outcome.Selected == nil {
		return deny, true // cancelled, or the client is gone
	}
	switch resp.Outcome.Selected.OptionId {
	case "allow":
		return agent.Response{Kind: agent.ResponseYes, By: "acp"}, true
	case "always":
		return agent.Response{Kind: agent.ResponseAllowAll, By: "acp"}, true
	}
	return deny, true
}

// callOf is the call an approval ask is about: the first undecided call
// of its tool.
func (t *turn) callOf(ask messages.UIMessage) *call {
	name := agent.ToolExecuteCode
	switch ask.Ask {
	case messages.AskCommand:
		if ask.Cell != "" {
			name = agent.ToolNotebookRun
		}
	case messages.AskTool:
		a, ok := messages.ParseToolAsk(ask)
		if !ok {
			return nil
		}
		name = a.Tool
	case messages.AskUseMCPServer:
		a, ok := agent.ParseMCPAsk(ask)
		if !ok {
			return nil
		}
		name = agent.ExternalPrefix + a.ServerName + "__" + a.ToolName
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range t.order {
		if k := t.calls[id]; k.tool == name && !k.decided {
			return k
		}
	}
	return nil
}

// streamTitle names an ask without a known call.
func streamTitle(ask messages.UIMessage) string {
	return messages.FirstLine(ask.Text, 80)
}

// kind is a tool's ACP kind.
func kind(tool string) sdk.ToolKind {
	switch tool {
	case agent.ToolExecuteCode:
		return sdk.ToolKindExecute
	case agent.ToolReadFile:
		return sdk.ToolKindRead
	case agent.ToolWriteFile, agent.ToolEditFile:
		return sdk.ToolKindEdit
	case agent.ToolListFiles, agent.ToolSearchFiles:
		return sdk.ToolKindSearch
	}
	return sdk.ToolKindOther
}

// title is a call's one-line title.
func title(tool string, input json.RawMessage) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	switch tool {
	case agent.ToolExecuteCode:
		return "Run " + messages.FirstLine(fmt.Sprint(in["code"]), 80)
	case agent.ToolReadFile, agent.ToolWriteFile, agent.ToolEditFile, agent.ToolListFiles:
		return fmt.Sprintf("%s %v", tool, in["path"])
	}
	if code, ok := in["code"].(string); ok && agent.IsExternal(tool) {
		return tool + ": " + messages.FirstLine(code, 80)
	}
	return tool
}
