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
// over streamable HTTP on a new loopback port behind a new token (a
// Loopback), which the agent is given as its "agentkernel" MCP server.
// close stops it.
//
// The agent's own permission requests are asks of the host already (the
// agent asks before it calls an MCP tool): its calls are decided by the
// policy (the mode, the rules, the hooks), and where that says ask,
// answered by o.Approve, never by asking the agent (o.NoElicitation) —
// the kernel command gives ApproveAll, as the user answered the agent's
// request.
func AgentTools(o Options) (tools func(context.Context) ([]acpagent.ToolServer, error), close func() error) {
	o.NoElicitation = true
	l := NewLoopback(o)
	tools = func(context.Context) ([]acpagent.ToolServer, error) {
		url, token, err := l.Start()
		if err != nil {
			return nil, err
		}
		return []acpagent.ToolServer{{Name: "agentkernel", URL: url,
			Headers: map[string]string{"Authorization": "Bearer " + token}}}, nil
	}
	return tools, l.Close
}

// Loopback is a Server served over streamable HTTP on a loopback port
// behind a bearer token of its own, from Start to Stop: the kernel's
// server as an external agent (AgentTools) or an outside MCP client
// (%agent mcp serve) reach it. Its methods are safe for concurrent use.
type Loopback struct {
	o Options

	mu     sync.Mutex // guards what follows; held while the server starts or stops
	server *Server
	srv    *http.Server
	served chan struct{} // closed when srv's Serve returns
	url    string
	token  string
	closed bool
}

// NewLoopback returns the Loopback of o's server; it serves nothing until
// Start.
func NewLoopback(o Options) *Loopback { return &Loopback{o: o} }

// Start serves the server, unless it is served already, and returns its
// URL (http://127.0.0.1:PORT/mcp) and the token every request must carry
// ("Authorization: Bearer TOKEN").
func (l *Loopback) Start() (url, token string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return "", "", errors.New("mcpserve: closed")
	}
	if l.srv != nil {
		return l.url, l.token, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", err
	}
	l.token = newToken()
	l.url = "http://" + ln.Addr().String() + "/mcp"
	l.server = New(l.o)
	l.srv = httpServer(l.server, l.token)
	l.served = make(chan struct{})
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		_ = srv.Serve(ln)
	}(l.srv, l.served)
	return l.url, l.token, nil
}

// Stop stops serving (nil when not served): its token is good no more,
// and a later Start serves on a new port behind a new token.
func (l *Loopback) Stop() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stop()
}

// Close stops serving for good: Start fails after it.
func (l *Loopback) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.stop()
}

func (l *Loopback) stop() error {
	if l.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := l.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = l.srv.Close() // a client holds a stream open
	}
	<-l.served
	// The clients' sessions outlive their connections: end them.
	for ss := range l.server.srv.Sessions() {
		_ = ss.Close()
	}
	l.server, l.srv, l.served, l.url, l.token = nil, nil, nil, "", ""
	return err
}

// newToken is a fresh bearer token.
func newToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// httpServer serves s at /mcp behind token.
func httpServer(s *Server, token string) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.Handler(token))
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}
