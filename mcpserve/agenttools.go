package mcpserve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/agentkernel/agentkernel/agent/provider/acpagent"
)

// AgentTools serves o's live kernel to an external agent (a model acp:…
// of the same host): at the first session the agent opens, s is served
// over streamable HTTP on a new loopback port behind a new token, which
// the agent is given as its "agentkernel" MCP server. close stops it.
//
// The agent's own permission requests are asks of the host already (the
// agent asks before it calls an MCP tool): its calls are decided by the
// policy (the mode, the rules, the hooks), and where that says ask,
// answered by o.Approve, never by asking the agent (o.NoElicitation) —
// the kernel command gives ApproveAll, as the user answered the agent's
// request.
func AgentTools(o Options) (tools func(context.Context) ([]acpagent.ToolServer, error), close func() error) {
	o.NoElicitation = true
	var (
		mu     sync.Mutex
		srv    *http.Server
		server []acpagent.ToolServer
		closed bool
	)
	tools = func(context.Context) ([]acpagent.ToolServer, error) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return nil, errors.New("mcpserve: closed")
		}
		if srv != nil {
			return server, nil
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		token := hex.EncodeToString(b)
		mux := http.NewServeMux()
		mux.Handle("/mcp", New(o).Handler(token))
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		server = []acpagent.ToolServer{{Name: "agentkernel", URL: "http://" + ln.Addr().String() + "/mcp",
			Headers: map[string]string{"Authorization": "Bearer " + token}}}
		return server, nil
	}
	close = func() error {
		mu.Lock()
		defer mu.Unlock()
		closed = true
		if srv == nil {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return srv.Shutdown(ctx)
	}
	return tools, close
}
