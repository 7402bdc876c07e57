package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// The test binary is also a stdio MCP server (a real go-sdk server in its
// own process) when AK_MCP_TEST_SERVER is set: the faults need a process
// that can crash, hang and flood.
func TestMain(m *testing.M) {
	if os.Getenv("AK_MCP_TEST_SERVER") != "" {
		if d, err := time.ParseDuration(os.Getenv("AK_MCP_TEST_DELAY")); err == nil {
			time.Sleep(d) // a server slow to start
		}
		if err := testServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

type echoIn struct {
	Message string `json:"message" jsonschema:"the text to echo"`
}

type sumOut struct {
	Sum int `json:"sum"`
}

// testServer is the go-sdk server behind the stdio test server and the
// in-test HTTP server.
func testServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "ak-test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes the message."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "sum", Description: "Adds 2 and 3, as structured content."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, sumOut, error) {
			return nil, sumOut{Sum: 5}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "Returns AK_MCP_VAR."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "AK_MCP_VAR=" + os.Getenv("AK_MCP_VAR")}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "cwd", Description: "Returns the working directory."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			wd, err := os.Getwd()
			if err != nil {
				return nil, nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "cwd=" + wd}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Reports a tool error."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "no such file"}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Exits the server mid-call."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			os.Stderr.WriteString("crashing on purpose\n")
			os.Exit(7)
			return nil, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Never answers."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			select {}
		})
	sdk.AddTool(s, &sdk.Tool{Name: "big", Description: "Returns 50 MB of text."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			text := "BEGIN " + strings.Repeat("0123456789", 5<<20) + " END"
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "image", Description: "Returns a tiny PNG."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a pixel"},
				&sdk.ImageContent{MIMEType: "image/png", Data: tinyPNG},
			}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "slow", Description: "Reports progress three times."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			for i := 1; i <= 3; i++ {
				if token != nil {
					_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 3, Message: "step"})
				}
				time.Sleep(10 * time.Millisecond)
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil, nil
		})
	return s
}

// a 1×1 PNG
var tinyPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// stdioServer is the configuration of the test binary as a stdio server.
func stdioServer(t testing.TB, name string) ServerConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ServerConfig{Name: name, Scope: "project", Command: exe, Args: []string{"-test.run=^$"},
		Env: map[string]string{"AK_MCP_TEST_SERVER": "1", "AK_MCP_VAR": "${AK_MCP_TEST_HOME:-fallback}/x"}}
}

// httpServer runs the test server over streamable HTTP on loopback,
// requiring the header Authorization: Bearer token.
func httpServer(t testing.TB, token string) *httptest.Server {
	t.Helper()
	srv := testServer()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs
}

// newManager returns a Manager of servers, closed at the test's end.
func newManager(t testing.TB, opts Options, servers ...ServerConfig) *Manager {
	t.Helper()
	opts.Config.Servers = append(opts.Config.Servers, servers...)
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	m := NewManager(opts)
	t.Cleanup(func() { m.Close() })
	return m
}
