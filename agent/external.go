package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/messages"
)

// This file: tools from outside the toolbox (MCP servers' tools).

// ExternalPrefix starts the name of every tool a [ToolSource] offers:
// "mcp__<server>__<tool>", as Claude Code names MCP tools.
const ExternalPrefix = "mcp__"

// ToolSource offers tools from outside the toolbox: the tools of MCP
// servers (package mcp implements it). Its methods are safe for concurrent
// use.
type ToolSource interface {
	// Tools returns the tools offered now, each named ExternalPrefix +
	// server + "__" + tool. It waits for a server's first start (bounded
	// by its start timeout and ctx), so that the first request sees every
	// configured server; a server that restarts later is not waited for.
	Tools(ctx context.Context) []SourceTool
	// Lookup returns the tool called name, waiting while its server is
	// still starting (bounded by ctx and the server's start timeout).
	Lookup(ctx context.Context, name string) (SourceTool, bool)
	// Call runs the tool called name with input (a JSON object). progress,
	// if not nil, is told of the tool's progress as it runs. A tool that
	// ran and reported an error is a Result with IsError and a nil error;
	// the error is for calls that could not run (server down, timeout).
	Call(ctx context.Context, name string, input json.RawMessage, progress func(text string)) (Result, error)
}

// SourceTool is one tool of a ToolSource.
type SourceTool struct {
	// Spec is the tool as the model is offered it: its prefixed name, the
	// server's description and JSON input schema.
	Spec provider.Tool
	// Server and Tool are the server's name and the tool's own name.
	Server, Tool string
	// AlwaysAllow marks a tool the server's configuration allows without
	// asking (its alwaysAllow list).
	AlwaysAllow bool
}

// IsExternal reports whether name is the name of a ToolSource's tool.
func IsExternal(name string) bool { return strings.HasPrefix(name, ExternalPrefix) }

// externalTool wraps a SourceTool as a Tool of class ClassMCP: its input
// is any JSON object (the server validates it against its schema), and it
// runs through the source.
func (tb *Toolbox) externalTool(st SourceTool) *Tool {
	src := tb.opts.Source
	return &Tool{
		name: st.Spec.Name, description: st.Spec.Description, class: ClassMCP,
		inputSchema: st.Spec.InputSchema, external: &st,
		run: func(ctx context.Context, in map[string]any) (Result, error) {
			raw, _ := in[rawInputKey].(json.RawMessage)
			progress, _ := ctx.Value(progressKey{}).(func(string))
			return src.Call(ctx, st.Spec.Name, raw, progress)
		},
	}
}

// rawInputKey carries an external tool's input, unchanged, from validate
// to run.
const rawInputKey = "\x00raw"

// progressKey carries the progress callback of an external tool's call.
type progressKey struct{}

// WithProgress returns ctx carrying f, told of an external tool's progress.
func WithProgress(ctx context.Context, f func(text string)) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// validateObject checks that an external tool's input is a JSON object
// (or nothing, which is the empty object).
func (t *Tool) validateObject(input json.RawMessage) (map[string]any, error) {
	trimmed := bytes.TrimSpace(input)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	var obj map[string]json.RawMessage
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &obj) != nil {
		return nil, &InputError{Tool: t.name, Reason: "want a JSON object, got " + jsonKind(trimmed)}
	}
	return map[string]any{rawInputKey: json.RawMessage(trimmed)}, nil
}

// Server returns the server and the tool's own name of an external tool,
// and false for the toolbox's own tools.
func (t *Tool) Server() (server, tool string, ok bool) {
	if t.external == nil {
		return "", "", false
	}
	return t.external.Server, t.external.Tool, true
}

// externalRule is an allow or deny rule on external tools: "mcp__github"
// (every tool of the server github), "mcp__github__*", "mcp__*__read_*".
// "*" matches any run of characters.
func externalRule(name string) (*regexp.Regexp, error) {
	parts := strings.Split(strings.TrimPrefix(name, ExternalPrefix), "__")
	if parts[0] == "" || len(parts) > 2 || (len(parts) == 2 && parts[1] == "") {
		return nil, fmt.Errorf("want mcp__SERVER or mcp__SERVER__TOOL")
	}
	if len(parts) == 1 {
		parts = append(parts, "*")
	}
	quote := func(s string) string {
		q := strings.Split(s, "*")
		for i := range q {
			q[i] = regexp.QuoteMeta(q[i])
		}
		return strings.Join(q, ".*")
	}
	return regexp.MustCompile("^" + regexp.QuoteMeta(ExternalPrefix) + quote(parts[0]) + "__" + quote(parts[1]) + "$"), nil
}

var externalNameRE = regexp.MustCompile(`^mcp__[A-Za-z0-9_*-]+$`)

// mcpAskText is the text of a use_mcp_server ask, in Roo-Code's shape.
func mcpAskText(st *SourceTool, call provider.ToolCall) string {
	server, tool := st.Server, st.Tool
	args := string(call.Input)
	if !json.Valid(call.Input) {
		args = "{}"
	}
	b, _ := json.Marshal(map[string]string{"type": "use_mcp_tool", "serverName": server, "toolName": tool, "arguments": args})
	return string(b)
}

// MCPAsk is the text of a use_mcp_server ask, decoded.
type MCPAsk struct {
	Type       string `json:"type"`
	ServerName string `json:"serverName"`
	ToolName   string `json:"toolName"`
	Arguments  string `json:"arguments"`
}

// ParseMCPAsk decodes the text of a use_mcp_server ask.
func ParseMCPAsk(m messages.UIMessage) (MCPAsk, bool) {
	var a MCPAsk
	if m.Ask != messages.AskUseMCPServer || json.Unmarshal([]byte(m.Text), &a) != nil {
		return a, false
	}
	return a, true
}
