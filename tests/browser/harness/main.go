// Command harness runs a real agentkernel prompt-mode kernel for the web
// panel's browser tests: the bridge and kernel server in this process, a
// scripted model server (package agent/provider/scripted) behind the
// OpenAI-compatible provider, and a notebook side driven through
// kernel/client. The Playwright script (../panel.test.mjs) controls it over
// a small HTTP API on 127.0.0.1, whose address is the first line printed:
//
//	{"control":"http://127.0.0.1:PORT"}
//
// Endpoints (JSON in and out):
//
//	POST /enqueue   {"turns":[[step, …], …]}  queue model replies; a step is
//	                {"text":[…]} | {"reasoning":[…]} | {"tool":{"id","name","args"}} |
//	                {"usage":{"input","output"}} | {"delayMs":N}
//	POST /execute   {"id","code"}              run a cell (allow_stdin) in the background
//	GET  /cell?id=                             {done, status, outputs, prompts, waiting}
//	POST /stdin     {"id","value"}             answer the cell's pending input_request
//	GET  /requests                             the model requests so far (messages only)
//	POST /file      {"path","content"}         write a file of the workspace (a user's edit)
//	GET  /file?path=                           {exists, content} of a workspace file
//	POST /quit                                 stop everything
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/store"
	"github.com/agentkernel/agentkernel/surface/bridge"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(1)
	}
}

type cell struct {
	mu      sync.Mutex
	done    bool
	status  string
	outputs []map[string]any // iopub messages: msg_type and content
	prompts []string
	waiting bool
	answer  chan string
}

type harness struct {
	work   string // the agent's workspace
	model  *scripted.Server
	client *client.Client
	ctx    context.Context

	mu    sync.Mutex
	cells map[string]*cell
	wg    sync.WaitGroup
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := hclog.New(&hclog.LoggerOptions{Name: "harness", Level: hclog.LevelFromString(envOr("HARNESS_LOG", "warn")), Output: os.Stderr})

	tmp, err := os.MkdirTemp("", "ak-browser-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := setUpDirs(tmp); err != nil {
		return err
	}
	model := scripted.New(nil)
	defer model.Close()
	setKernelEnv(tmp, model)
	var b *bridge.Bridge
	a, err := app.Open(ctx, app.Load(app.Flags{}, log), app.Surface{Kind: string(bridge.PromptCells),
		Workspace: filepath.Join(tmp, "work"), Logger: log,
		Backing: &backing.Options{OnIOPub: func(m *wire.Message) { b.Unsolicited(m) }}})
	if err != nil {
		return err
	}
	defer a.Close()
	if b, err = bridge.New(bridge.Config{Runner: a.Runner, Host: a.Host, Cells: bridge.PromptCells, Logger: log}); err != nil {
		return err
	}
	b.Start()
	// Ports 0: the server picks them as it binds them.
	conn := &wire.ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", SignatureScheme: wire.SignatureScheme, Key: wire.NewKey()}
	srv, err := kernel.New(kernel.Config{Conn: conn, Handler: b, Logger: log})
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx) }()
	select {
	case <-srv.Listening():
	case err := <-served:
		b.Close()
		return err
	}
	c, err := client.Dial(sctx, srv.ConnectionInfo(), client.Options{Logger: log})
	if err != nil {
		cancel()
		<-served
		b.Close()
		return err
	}
	h := &harness{model: model, client: c, ctx: sctx, cells: map[string]*cell{}, work: filepath.Join(tmp, "work")}

	hs, addr, quit, err := h.serveControl()
	if err != nil {
		return err
	}
	fmt.Printf("{\"control\":\"http://%s\"}\n", addr)

	select {
	case <-ctx.Done():
	case <-quit:
	}
	sd, cancelSD := context.WithTimeout(context.Background(), 5*time.Second)
	hs.Shutdown(sd)
	cancelSD()
	h.releaseAll()
	cancel()
	h.wg.Wait()
	c.Close()
	<-served
	return b.Close()
}

// setUpDirs makes the data, workspace, runtime and cache directories in
// tmp and points Jupyter's runtime and the XDG cache at theirs. With
// HARNESS_MCP_SERVER (server-everything's index.js) the workspace's
// .mcp.json names it, for the panel's MCP view.
func setUpDirs(tmp string) error {
	for _, d := range []string{"data", "work", "runtime", "cache"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o700); err != nil {
			return err
		}
	}
	os.Setenv("JUPYTER_RUNTIME_DIR", filepath.Join(tmp, "runtime"))
	os.Setenv("XDG_CACHE_HOME", filepath.Join(tmp, "cache"))
	if js := os.Getenv("HARNESS_MCP_SERVER"); js != "" {
		cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"everything": map[string]any{"command": "node", "args": []string{js, "stdio"}}}})
		if err := os.WriteFile(filepath.Join(tmp, "work", ".mcp.json"), cfg, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// setKernelEnv configures the kernel's own composition root as a user
// would: by the environment (the model, its key and URL, the data
// directory), with no config file.
func setKernelEnv(tmp string, model *scripted.Server) {
	for k, v := range map[string]string{"OPENAI_API_KEY": "sk-harness-key", "OPENAI_BASE_URL": model.OpenAIURL(),
		app.EnvModel: "openai:gpt-4.1", store.EnvDataDir: filepath.Join(tmp, "data"),
		app.EnvConfig: filepath.Join(tmp, "config.json")} {
		os.Setenv(k, v)
	}
}

// serveControl serves the control API on 127.0.0.1, at a port picked as it
// binds, and returns its server, its address, and quit, closed by POST
// /quit.
func (h *harness) serveControl() (hs *http.Server, addr net.Addr, quit <-chan struct{}, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, nil, err
	}
	q := make(chan struct{})
	var quitOnce sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("POST /enqueue", h.enqueue)
	mux.HandleFunc("POST /execute", h.execute)
	mux.HandleFunc("GET /cell", h.cell)
	mux.HandleFunc("POST /stdin", h.stdin)
	mux.HandleFunc("GET /requests", h.requests)
	mux.HandleFunc("POST /file", h.writeFile)
	mux.HandleFunc("GET /file", h.readFile)
	mux.HandleFunc("POST /quit", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]bool{"ok": true})
		quitOnce.Do(func() { close(q) })
	})
	hs = &http.Server{Handler: mux}
	go hs.Serve(ln)
	return hs, ln.Addr(), q, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, err error) { http.Error(w, err.Error(), http.StatusBadRequest) }

type step struct {
	Text      []string `json:"text"`
	Reasoning []string `json:"reasoning"`
	Tool      *struct {
		ID, Name, Args string
	} `json:"tool"`
	Usage *struct {
		Input, Output int
	} `json:"usage"`
	DelayMs int `json:"delayMs"`
}

func (h *harness) enqueue(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Turns [][]step `json:"turns"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(w, err)
		return
	}
	for _, t := range req.Turns {
		var steps []scripted.Step
		for _, s := range t {
			switch {
			case s.Text != nil:
				steps = append(steps, scripted.Text(s.Text...))
			case s.Reasoning != nil:
				steps = append(steps, scripted.Reasoning(s.Reasoning...))
			case s.Tool != nil:
				steps = append(steps, scripted.ToolCall(s.Tool.ID, s.Tool.Name, s.Tool.Args))
			case s.Usage != nil:
				steps = append(steps, scripted.UsageStep(scripted.Usage{Input: s.Usage.Input, Output: s.Usage.Output}))
			case s.DelayMs > 0:
				steps = append(steps, scripted.Delay(time.Duration(s.DelayMs)*time.Millisecond))
			}
		}
		h.model.Enqueue(scripted.Reply(steps...))
	}
	writeJSON(w, map[string]int{"pending": h.model.Pending()})
}

func (h *harness) execute(w http.ResponseWriter, r *http.Request) {
	var req struct{ ID, Code string }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.ID == "" {
		fail(w, errors.Join(err, errors.New("need id and code")))
		return
	}
	c := &cell{answer: make(chan string)}
	h.mu.Lock()
	h.cells[req.ID] = c
	h.mu.Unlock()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		rep, err := h.client.Execute(h.ctx, req.Code, client.ExecuteOptions{AllowStdin: true}, client.Handlers{
			IOPub: func(m *wire.Message) {
				if m.Header.MsgType == "status" {
					return
				}
				var content map[string]any
				_ = json.Unmarshal(m.Content, &content)
				c.mu.Lock()
				c.outputs = append(c.outputs, map[string]any{"msg_type": m.Header.MsgType, "content": content})
				c.mu.Unlock()
			},
			Input: func(prompt string, password bool) (string, error) {
				c.mu.Lock()
				c.prompts = append(c.prompts, prompt)
				c.waiting = true
				c.mu.Unlock()
				defer func() { c.mu.Lock(); c.waiting = false; c.mu.Unlock() }()
				select {
				case v := <-c.answer:
					return v, nil
				case <-h.ctx.Done():
					return "", h.ctx.Err()
				}
			},
		})
		c.mu.Lock()
		defer c.mu.Unlock()
		c.done = true
		switch {
		case err != nil:
			c.status = "failed: " + err.Error()
		default:
			var st struct{ Status string }
			_ = json.Unmarshal(rep.Content, &st)
			c.status = st.Status
		}
	}()
	writeJSON(w, map[string]bool{"ok": true})
}

func (h *harness) get(id string) *cell {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cells[id]
}

func (h *harness) cell(w http.ResponseWriter, r *http.Request) {
	c := h.get(r.URL.Query().Get("id"))
	if c == nil {
		fail(w, errors.New("no such cell"))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	writeJSON(w, map[string]any{"done": c.done, "status": c.status, "outputs": c.outputs, "prompts": c.prompts, "waiting": c.waiting})
}

func (h *harness) stdin(w http.ResponseWriter, r *http.Request) {
	var req struct{ ID, Value string }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(w, err)
		return
	}
	c := h.get(req.ID)
	if c == nil {
		fail(w, errors.New("no such cell"))
		return
	}
	select {
	case c.answer <- req.Value:
		writeJSON(w, map[string]bool{"ok": true})
	case <-time.After(10 * time.Second):
		fail(w, errors.New("the cell is not waiting for input"))
	}
}

func (h *harness) releaseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.cells {
		select {
		case c.answer <- "n":
		default:
		}
	}
}

// workPath resolves a workspace-relative path, refusing any that leave it.
func (h *harness) workPath(rel string) (string, error) {
	p := filepath.Join(h.work, filepath.FromSlash(rel))
	if r, err := filepath.Rel(h.work, p); err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return "", fmt.Errorf("path %q leaves the workspace", rel)
	}
	return p, nil
}

func (h *harness) writeFile(w http.ResponseWriter, r *http.Request) {
	var in struct{ Path, Content string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p, err := h.workPath(in.Path)
	if err == nil {
		err = os.WriteFile(p, []byte(in.Content), 0o644)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, map[string]any{"ok": true})
}

func (h *harness) readFile(w http.ResponseWriter, r *http.Request) {
	p, err := h.workPath(r.URL.Query().Get("path"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b, err := os.ReadFile(p)
	writeJSON(w, map[string]any{"exists": err == nil, "content": string(b)})
}

func (h *harness) requests(w http.ResponseWriter, r *http.Request) {
	var out []any
	for _, req := range h.model.Requests() {
		var texts []string
		for _, m := range req.Messages() {
			b, _ := json.Marshal(m)
			texts = append(texts, string(b))
		}
		out = append(out, map[string]any{"n": req.N, "messages": texts, "all": strings.Join(texts, "\n")})
	}
	writeJSON(w, out)
}
