package session

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/agent/provider"
	"github.com/agentkernel/agentkernel/agent/provider/openai"
	"github.com/agentkernel/agentkernel/mcp"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// mcpEcho serves a go-sdk MCP server with an echo tool over streamable
// HTTP on loopback.
func mcpEcho(t testing.TB) string { return mcpEchoSlow(t, 0) }

// mcpEchoSlow is mcpEcho taking delay to answer each POST (a server that
// is slow to start).
func mcpEchoSlow(t testing.TB, delay time.Duration) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "echo", Version: "1"}, nil)
	type in struct {
		Message string `json:"message"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echoes."},
		func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Echo: " + a.Message}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "pixel", Description: "Returns an image."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG fake")}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			time.Sleep(delay)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestMCPImageToModel: an image an MCP tool returns reaches the model as
// image content (OpenAI: an image_url data URL after the tool message),
// with a placeholder line in the tool result, and the UI keeps it.
func TestMCPImageToModel(t *testing.T) {
	srv, open := scriptedModels(t)
	srv.Enqueue(
		scripted.Reply(scripted.ToolCall("c1", "mcp__t__pixel", `{}`), usage(10, 5)),
		scripted.Reply(scripted.Text("A pixel."), usage(20, 5)),
	)
	servers, _ := json.Marshal(map[string]any{"t": map[string]any{"type": "http", "url": mcpEcho(t), "alwaysAllow": []string{"pixel"}}})
	h := newHost(t, Config{Store: openStore(t), OpenModel: open, Model: "openai:vision-m", MCPServers: servers})
	h.Tools().MCPStatus(context.Background(), true)
	if _, err := h.Submit(context.Background(), "Show the pixel.", Follow{}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	body := string(reqs[1].Raw)
	if !strings.Contains(body, "data:image/png;base64,iVBORyBmYWtl") || !strings.Contains(body, "[image image/png, 9 B]") {
		t.Errorf("the image did not reach the model: %.1500s", body)
	}
	var shown []string
	for _, m := range h.Conversation().UI() {
		if m.Say == messages.SayMCPServerResponse {
			shown = m.Images
		}
	}
	if len(shown) != 1 || !strings.HasPrefix(shown[0], "data:image/png;base64,") {
		t.Errorf("UI images %v", shown)
	}
}

func TestMCPToolCall(t *testing.T) {
	url := mcpEcho(t)
	tests := []struct {
		name        string
		allow, deny []string
		alwaysAllow []string
		approve     agent.Approver
		asked       bool // a use_mcp_server ask was made
		ran         bool // the tool ran and its result reached the model
	}{
		{name: "asked and allowed", approve: agent.ApproveAll.Approver(), asked: true, ran: true},
		{name: "asked and denied", approve: agent.ApproveNone.Approver(), asked: true},
		{name: "allow rule", allow: []string{"mcp__t__*"}, approve: agent.ApproveNone.Approver(), ran: true},
		{name: "alwaysAllow", alwaysAllow: []string{"echo"}, approve: agent.ApproveNone.Approver(), ran: true},
		{name: "deny rule beats alwaysAllow", deny: []string{"mcp__t"}, alwaysAllow: []string{"echo"}, approve: agent.ApproveAll.Approver()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, open := scriptedModels(t)
			srv.Enqueue(
				scripted.Reply(scripted.ToolCall("c1", "mcp__t__echo", `{"message":"hi"}`), usage(10, 5)),
				scripted.Reply(scripted.Text("Done."), usage(20, 5)),
			)
			servers, _ := json.Marshal(map[string]any{"t": map[string]any{"type": "http", "url": url, "alwaysAllow": tt.alwaysAllow}})
			h := newHost(t, Config{Store: openStore(t), OpenModel: open, Model: "openai:m",
				Allow: tt.allow, Deny: tt.deny, MCPServers: servers})
			if st := h.Tools().MCPStatus(context.Background(), true); len(st) != 1 || st[0].State != mcp.StateReady {
				t.Fatalf("status %+v", st)
			}
			var asks []messages.Ask
			_, err := h.Submit(context.Background(), "Echo hi.", Follow{Approve: tt.approve,
				OnAsk: func(a AnsweredAsk) { asks = append(asks, a.Ask.Ask) }})
			if err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			if !strings.Contains(string(reqs[0].Raw), `"mcp__t__echo"`) || !strings.Contains(string(reqs[0].Raw), `"message"`) {
				t.Errorf("the first request does not offer mcp__t__echo with its schema: %.500s", reqs[0].Raw)
			}
			gotResult := strings.Contains(string(reqs[1].Raw), "Echo: hi")
			if gotResult != tt.ran {
				t.Errorf("result reached the model: %v, want %v: %.800s", gotResult, tt.ran, reqs[1].Raw)
			}
			if asked := slices.Contains(asks, messages.AskUseMCPServer); asked != tt.asked {
				t.Errorf("asks %v, want a use_mcp_server ask: %v", asks, tt.asked)
			}
			var says []messages.Say
			for _, m := range h.Conversation().UI() {
				if m.Decision != nil && m.Decision.Tool == "mcp__t__echo" && !strings.Contains(m.Text, "`mcp__t__echo`") {
					t.Errorf("decision %q: the tool's name must be code (its __ is emphasis in markdown)", m.Text)
				}
				if m.Say == messages.SayMCPServerRequestStarted || m.Say == messages.SayMCPServerResponse {
					says = append(says, m.Say)
					if m.Say == messages.SayMCPServerResponse && m.Text != "Echo: hi" {
						t.Errorf("response preview %q", m.Text)
					}
				}
			}
			if (len(says) == 2) != tt.ran {
				t.Errorf("UI history has %v, want started and response: %v", says, tt.ran)
			}
		})
	}
}

// BenchmarkFirstAnswerMCP measures a new session's first answer (a text
// reply from the scripted model, no tool) with no MCP server configured,
// and with a go-sdk server over streamable HTTP on loopback, whose start
// (initialize, tools/list) the first request waits for.
func BenchmarkFirstAnswerMCP(b *testing.B) {
	for _, tt := range []struct {
		name    string
		servers string
	}{
		{"none", ""},
		{"http-server", fmt.Sprintf(`{"echo": {"type": "http", "url": %q}}`, mcpEcho(b))},
	} {
		b.Run(tt.name, func(b *testing.B) {
			srv := scripted.New(b)
			open := func(spec string) (provider.Provider, error) {
				info := provider.ModelInfo{ID: "m", ContextWindow: 100000}
				return openai.New(openai.Config{APIKey: "k", BaseURL: srv.OpenAIURL(), Model: "m", Info: &info})
			}
			st, err := store.Open(context.Background(), store.Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			for b.Loop() {
				srv.Enqueue(scripted.Reply(scripted.Text("Hi."), scripted.UsageStep(scripted.Usage{Input: 1, Output: 1})))
				h := New(Config{Store: st, OpenModel: open, Model: "openai:m", Workspace: b.TempDir(),
					Runner: &fakeRunner{}, MCPServers: json.RawMessage(tt.servers)})
				if _, err := h.Submit(context.Background(), "Hello", Follow{}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				h.Close()
				b.StartTimer()
			}
		})
	}
}

// TestFirstPromptSeesMCPTools: a session's first prompt, sent at once
// while its MCP server is still starting (slow to answer), is offered the
// server's tools: the first model request waits for the server's first
// start, as Claude Code does before its first query.
func TestFirstPromptSeesMCPTools(t *testing.T) {
	url := mcpEchoSlow(t, 300*time.Millisecond) // initialize, initialized, tools/list: about a second
	srv, open := scriptedModels(t)
	srv.Enqueue(scripted.Reply(scripted.Text("Ready."), usage(10, 5)))
	servers, _ := json.Marshal(map[string]any{"slow": map[string]any{"type": "http", "url": url}})
	h := newHost(t, Config{Store: openStore(t), OpenModel: open, Model: "openai:m", MCPServers: servers})
	if _, err := h.Submit(context.Background(), "Use the echo tool.", Follow{}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Raw), `"mcp__slow__echo"`) {
		t.Fatalf("the first request was not offered mcp__slow__echo: %.800s", reqs[0].Raw)
	}
}
