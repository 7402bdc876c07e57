package webview

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/go-hclog"
)

//go:embed static
var staticFS embed.FS

// Options configure a Server. The zero value works: loopback, an ephemeral
// port, a random token, no runtime file.
type Options struct {
	// Host to bind; default "127.0.0.1". Anything but loopback is logged as
	// a warning: whoever reaches it with the token controls the agent.
	Host string
	// Port to bind; default 0 (an ephemeral port).
	Port int
	// Token the page and socket require; default 32 random bytes in hex.
	Token string
	// SendBuffer is each client's queue, in frames; default 1024. A client
	// whose queue is full is dropped.
	SendBuffer int
	// MaxFrameBytes is the largest inbound frame answered normally; a
	// larger one gets a too_large error frame. Default 8 MiB: a prompt
	// with its four attached images fits. Frames over 4 times that close
	// the connection (the socket's read limit).
	MaxFrameBytes int64
	// WriteTimeout bounds one frame's write; default 10s.
	WriteTimeout time.Duration
	// OriginPatterns are extra Origin host patterns the socket accepts
	// (coder/websocket AcceptOptions.OriginPatterns); by default only the
	// page's own origin.
	OriginPatterns []string
	// RuntimeDir, when set, gets a runtime file naming the URL while the
	// server runs (see ListRunning).
	RuntimeDir string
	// Info is extra data for the runtime file (the kernel's connection
	// file, the session id); never secrets.
	Info map[string]string
	// Logger; default a null logger.
	Logger hclog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Token == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return o, fmt.Errorf("webview: make token: %w", err)
		}
		o.Token = hex.EncodeToString(b)
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	// SendBuffer, MaxFrameBytes and WriteTimeout are the Panel's
	// (PanelOptions' defaults): Start takes them back from it.
	return o, nil
}

// OptionsFromEnv reads AGENTKERNEL_WEBVIEW_HOST and AGENTKERNEL_WEBVIEW_PORT
// through getenv (os.Getenv when nil) into o.
func OptionsFromEnv(o Options, getenv func(string) string) (Options, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if h := getenv("AGENTKERNEL_WEBVIEW_HOST"); h != "" {
		o.Host = h
	}
	if p := getenv("AGENTKERNEL_WEBVIEW_PORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 {
			return o, fmt.Errorf("webview: AGENTKERNEL_WEBVIEW_PORT=%q is not a port number", p)
		}
		o.Port = n
	}
	return o, nil
}

// Server is a running web panel. Its methods are safe for concurrent use.
type Server struct {
	opts    Options
	log     hclog.Logger
	panel   *Panel
	hub     *hub // the panel's
	ln      net.Listener
	hs      *http.Server
	url     string
	runFile string
	static  http.Handler
	loop    bool // bound to loopback: check Host

	ctx    context.Context // the server's lifetime
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex // guards closed and conns.Add
	closed    bool
	conns     sync.WaitGroup // the socket handlers
	closeOnce sync.Once
}

// Start binds the server, mirrors a's state and serves until Close.
func Start(a Agent, opts Options) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port)))
	if err != nil {
		return nil, fmt.Errorf("webview: listen on %s:%d: %w", opts.Host, opts.Port, err)
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("webview: static files: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	log := opts.Logger.Named("webview")
	panel := NewPanel(a, PanelOptions{SendBuffer: opts.SendBuffer, MaxFrameBytes: opts.MaxFrameBytes,
		WriteTimeout: opts.WriteTimeout, Logger: log})
	opts.SendBuffer, opts.MaxFrameBytes, opts.WriteTimeout = panel.opts.SendBuffer, panel.opts.MaxFrameBytes, panel.opts.WriteTimeout
	s := &Server{
		opts:   opts,
		log:    log,
		panel:  panel,
		hub:    panel.hub,
		ln:     ln,
		static: http.FileServerFS(sub),
		loop:   isLoopback(opts.Host),
		ctx:    ctx,
		cancel: cancel,
	}
	s.url = buildURL(opts.Host, ln.Addr().(*net.TCPAddr).Port, opts.Token)
	if !s.loop {
		log.Warn("the web panel is bound to a non-loopback address: anyone who can reach it and has its URL (token included) can control the agent",
			"host", opts.Host)
	}
	s.hs = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("web panel server stopped", "error", err)
		}
	}()
	if opts.RuntimeDir != "" {
		if s.runFile, err = writeRuntimeFile(opts.RuntimeDir, s.url, opts.Info); err != nil {
			log.Warn("could not write the web panel's runtime file", "error", err)
		}
	}
	log.Info("web panel listening", "addr", ln.Addr().String())
	return s, nil
}

func buildURL(host string, port int, token string) string {
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(urlHost(host), strconv.Itoa(port)), Path: "/",
		RawQuery: url.Values{"token": {token}}.Encode()}
	return u.String()
}

// urlHost turns a bind address into one a browser can open.
func urlHost(h string) string {
	switch h {
	case "", "0.0.0.0", "::":
		if name, err := os.Hostname(); err == nil {
			return name
		}
		return "127.0.0.1"
	}
	return h
}

func isLoopback(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// URL returns the panel's address, token included.
func (s *Server) URL() string { return s.url }

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Clients returns the number of connected clients.
func (s *Server) Clients() int { return s.hub.count() }

// Dropped returns how many clients were dropped for being too slow (or
// failing a write) since Start.
func (s *Server) Dropped() int64 { return s.hub.dropped.Load() }

// State returns a copy of the mirrored state.
func (s *Server) State() State { return s.hub.snapshot() }

// RuntimeFile returns the runtime file's path, or "".
func (s *Server) RuntimeFile() string { return s.runFile }

// Close stops the server: it closes every connection, waits for their
// goroutines, unsubscribes from the agent and removes the runtime file.
// A second call returns net.ErrClosed.
func (s *Server) Close() error {
	err := net.ErrClosed
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.hub.closeAll(reasonShutdown)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err = s.hs.Shutdown(ctx)
		// Give the clients a moment to answer the close handshake.
		handlers := make(chan struct{})
		go func() { s.conns.Wait(); close(handlers) }()
		select {
		case <-handlers:
		case <-ctx.Done():
		}
		cancel()
		s.cancel() // ends the remaining socket handlers
		<-handlers
		s.wg.Wait()
		s.panel.Close()
		if s.runFile != "" {
			if rerr := os.Remove(s.runFile); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = errors.Join(err, rerr)
			}
		}
		if err != nil {
			err = fmt.Errorf("webview: close: %w", err)
		}
	})
	return err
}

// ServeHTTP serves the page (token required), its static files, and the
// socket at /ws (token, Origin and Host checked).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if s.loop && !loopbackHost(r.Host) {
		// A DNS-rebinding page would come with its own host name.
		http.Error(w, "forbidden host", http.StatusForbidden)
		return
	}
	switch {
	case r.URL.Path == "/" || r.URL.Path == "/index.html":
		if !s.tokenOK(r) {
			http.Error(w, "missing or wrong token: open the URL that %agent webview prints", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		// The panel runs only its own scripts; model text never becomes HTML.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; "+
			"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'")
		data, err := staticFS.ReadFile("static/index.html")
		if err != nil {
			http.Error(w, "page missing", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(data)
	case r.URL.Path == "/ws":
		if !s.tokenOK(r) {
			http.Error(w, "missing or wrong token", http.StatusUnauthorized)
			return
		}
		s.serveWS(w, r)
	case strings.HasPrefix(r.URL.Path, "/static/"):
		// The panel's code and style: public, no data in them.
		http.StripPrefix("/static", s.static).ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

func loopbackHost(hostport string) bool {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		h = hostport
	}
	h = strings.Trim(h, "[]")
	return isLoopback(h)
}

func (s *Server) tokenOK(r *http.Request) bool {
	got := r.URL.Query().Get("token")
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.Token)) == 1
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	s.conns.Add(1)
	s.mu.Unlock()
	defer s.conns.Done()
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.opts.OriginPatterns})
	if err != nil {
		s.log.Warn("web panel connection refused", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"), "error", err)
		return // Accept has written the response
	}
	ws.SetReadLimit(4 * s.opts.MaxFrameBytes)
	cl, err := s.panel.Attach(wsTransport{ws})
	if err != nil {
		ws.Close(websocket.StatusGoingAway, reasonShutdown)
		return
	}
	s.log.Debug("web panel client connected", "client", cl.ID(), "remote", r.RemoteAddr)
	err = s.readLoop(s.ctx, ws, cl)
	cl.Detach()
	ws.CloseNow()
	s.log.Debug("web panel client gone", "client", cl.ID(), "error", err)
}

// wsTransport is a panel client's WebSocket.
type wsTransport struct{ ws *websocket.Conn }

func (t wsTransport) Write(ctx context.Context, msg []byte) error {
	return t.ws.Write(ctx, websocket.MessageText, msg)
}

// Close sends the close frame (best effort: a stalled peer will not read
// it): going away at shutdown, else a policy violation with the reason.
func (t wsTransport) Close(reason string, shutdown bool) {
	status := websocket.StatusPolicyViolation
	if shutdown {
		status = websocket.StatusGoingAway
	}
	_ = t.ws.Close(status, reason)
}

// readLoop reads the socket's frames into the client until the peer goes
// away.
func (s *Server) readLoop(ctx context.Context, ws *websocket.Conn, cl *Client) error {
	for {
		typ, r, err := ws.Reader(ctx)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(io.LimitReader(r, s.opts.MaxFrameBytes+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > s.opts.MaxFrameBytes {
			// Discard the rest (the socket's read limit bounds it).
			if _, err := io.Copy(io.Discard, r); err != nil {
				return err
			}
		}
		if typ != websocket.MessageText {
			cl.Error(CodeBadFrame, "binary frames are not part of the protocol")
			continue
		}
		cl.Handle(ctx, data)
	}
}
