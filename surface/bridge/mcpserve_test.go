package bridge

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/internal/nbcomm"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/surface/mcpserve"
)

// TestMCPServeNotebook: %agent mcp serve prints the kernel's MCP server's
// URL, token and claude mcp add line; an MCP client (the go-sdk's) with
// that token is offered the notebook tools, reads the cells the frontend
// shows and inserts one, which the frontend receives through its
// notebook comm; a wrong token is 401, and after %agent mcp stop the
// server is gone.
func TestMCPServeNotebook(t *testing.T) {
	h := surfacetest.NewHost(t)
	served := mcpserve.NewLoopback(mcpserve.Options{Host: h.Host, Runner: h.Runner, Version: "test", Notebook: true,
		Logger: logger()})
	conn, stop := serveConfig(t, Config{Runner: h.Runner, Host: h.Host, Cells: PromptCells, MCP: served})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fe := &fakeFrontend{id: uuid.NewString(), cells: []nbcomm.Cell{{ID: "note0001", CellType: "markdown", Source: "Served to Claude Code."}}}
	c := fe.connect(ctx, t, conn, "served.ipynb")
	defer c.Close()

	out := magicOutput(ctx, t, c, "%agent mcp serve")
	m := regexp.MustCompile(`URL: (http://127\.0\.0\.1:\d+/mcp)\ntoken: ([0-9a-f]+)\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("%%agent mcp serve printed no URL and token:\n%s", out)
	}
	url, token := m[1], m[2]
	if want := `claude mcp add --transport http agentkernel ` + url + ` --header "Authorization: Bearer ` + token + `"`; !strings.Contains(out, want) {
		t.Errorf("no claude mcp add line %q in:\n%s", want, out)
	}
	if again := magicOutput(ctx, t, c, "%agent mcp serve"); !strings.Contains(again, url) || !strings.Contains(again, token) {
		t.Errorf("a second %%agent mcp serve did not give the same server:\n%s", again)
	}

	if code := postStatus(ctx, t, url, "wrong"); code != http.StatusUnauthorized {
		t.Errorf("a wrong token: status %d, want 401", code)
	}

	cl := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearerTransport(token)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"execute_code", agent.ToolNotebookRead, agent.ToolNotebookInsert, agent.ToolNotebookEdit} {
		if !slices.ContainsFunc(list.Tools, func(tl *sdk.Tool) bool { return tl.Name == want }) {
			t.Errorf("the tools lack %s", want)
		}
	}
	if text, res := callTool(ctx, t, cs, agent.ToolNotebookRead, map[string]any{}); res.IsError || !strings.Contains(text, "Served to Claude Code.") {
		t.Fatalf("notebook_read: %s", text)
	}
	if text, res := callTool(ctx, t, cs, agent.ToolNotebookInsert, map[string]any{"source": "answer = 21 * 2"}); res.IsError {
		t.Fatalf("notebook_insert_cell: %s", text)
	}
	// A code cell of this prompt-mode kernel, as the agent's are.
	if got := fe.sources(); !slices.Contains(got, "%%code\nanswer = 21 * 2") {
		t.Fatalf("the frontend's cells %q lack the inserted one", got)
	}

	if out := magicOutput(ctx, t, c, "%agent mcp stop"); !strings.Contains(out, "stopped") {
		t.Errorf("%%agent mcp stop: %s", out)
	}
	if _, err := http.Post(url, "application/json", strings.NewReader("{}")); err == nil {
		t.Error("the server still answers after %agent mcp stop")
	}
}

// magicOutput runs code as a cell of c and returns what it printed; the
// cell must succeed.
func magicOutput(ctx context.Context, t *testing.T, c *client.Client, code string) string {
	t.Helper()
	var out strings.Builder
	rep, err := c.Execute(ctx, code, client.ExecuteOptions{}, client.Handlers{
		IOPub: func(m *wire.Message) { out.WriteString(outputText(m)) }})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rep.Content), `"status":"ok"`) {
		t.Fatalf("%s: %s\n%s", code, rep.Content, out.String())
	}
	return out.String()
}

// postStatus is the status of an MCP request to url with token.
func postStatus(ctx context.Context, t *testing.T, url, token string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// bearerTransport adds the bearer token to every request.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// callTool calls tool and returns the text of its result.
func callTool(ctx context.Context, t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (string, *sdk.CallToolResult) {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	texts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, ""), res
}
