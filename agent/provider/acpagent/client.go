package acpagent

import (
	"context"
	"encoding/json"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentkernel/agentkernel/agent/provider"
)

// This file: the client side of the connection, which the agent's
// notifications and requests reach.

// client is agentkernel's side of the connection (sdk.Client): it turns
// the agent's notifications and requests into the current turn's events.
// Files and terminals are not offered: the agent uses its own.
type client struct{ p *process }

var _ sdk.Client = (*client)(nil)

func (c *client) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	s := c.p.current()
	if s == nil {
		return nil // between turns: commands, modes
	}
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		s.push(provider.Event{Type: provider.EventText, Text: u.AgentMessageChunk.Content.Text.Text})
	case u.AgentThoughtChunk != nil && u.AgentThoughtChunk.Content.Text != nil:
		s.push(provider.Event{Type: provider.EventReasoning, Text: u.AgentThoughtChunk.Content.Text.Text})
	case u.ToolCall != nil:
		t := u.ToolCall
		a := s.activity(string(t.ToolCallId), t.Title, string(t.Kind), t.RawInput, string(t.Status), t.Content)
		s.push(provider.Event{Type: provider.EventActivity, Activity: &a})
	case u.ToolCallUpdate != nil:
		t := u.ToolCallUpdate
		title, kind, status := "", "", ""
		if t.Title != nil {
			title = *t.Title
		}
		if t.Kind != nil {
			kind = string(*t.Kind)
		}
		if t.Status != nil {
			status = string(*t.Status)
		}
		a := s.activity(string(t.ToolCallId), title, kind, t.RawInput, status, t.Content)
		s.push(provider.Event{Type: provider.EventActivity, Activity: &a})
	}
	return nil
}

func (c *client) RequestPermission(ctx context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	cancelled := sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}
	s := c.p.current()
	if s == nil {
		return cancelled, nil
	}
	title := "tool call"
	if r.ToolCall.Title != nil {
		title = *r.ToolCall.Title
	}
	var input json.RawMessage
	if r.ToolCall.RawInput != nil {
		input, _ = json.Marshal(r.ToolCall.RawInput)
	}
	type answer struct{ allow, always bool }
	got := make(chan answer, 1)
	var once sync.Once
	s.push(provider.Event{Type: provider.EventAsk, Ask: &provider.Ask{Tool: title, Input: input, Reply: func(allow, always bool) {
		once.Do(func() { got <- answer{allow, always} })
	}}})
	var a answer
	select {
	case a = <-got:
	case <-s.done:
		return cancelled, nil
	case <-ctx.Done():
		return cancelled, nil
	}
	pick := func(kinds ...sdk.PermissionOptionKind) (sdk.RequestPermissionResponse, bool) {
		for _, k := range kinds {
			for _, o := range r.Options {
				if o.Kind == k {
					return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(o.OptionId)}, true
				}
			}
		}
		return cancelled, false
	}
	var resp sdk.RequestPermissionResponse
	switch {
	case a.allow && a.always:
		resp, _ = pick(sdk.PermissionOptionKindAllowAlways, sdk.PermissionOptionKindAllowOnce)
	case a.allow:
		resp, _ = pick(sdk.PermissionOptionKindAllowOnce, sdk.PermissionOptionKindAllowAlways)
	default:
		resp, _ = pick(sdk.PermissionOptionKindRejectOnce, sdk.PermissionOptionKindRejectAlways)
	}
	return resp, nil
}

func (c *client) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsReadTextFile)
}

func (c *client) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsWriteTextFile)
}

func (c *client) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalCreate)
}

func (c *client) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalKill)
}

func (c *client) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalOutput)
}

func (c *client) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalRelease)
}

func (c *client) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalWaitForExit)
}
