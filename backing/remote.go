package backing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// RemoteOptions configure NewRemote.
type RemoteOptions struct {
	// Gateway is the server; its URL is required.
	Gateway Gateway
	// Kernel names the kernelspec on the server. Default "python3".
	Kernel string
	// Owner is the kernelspec name of the agentkernel that owns this
	// runner, for the chain mark given to the kernel's environment.
	Owner string
	// OnIOPub receives the kernel's iopub messages that belong to no
	// pending request. It must not block.
	OnIOPub func(*wire.Message)
	// InterruptGrace is how long Execute waits for the kernel's reply
	// after interrupting it when its ctx ends. Default 10s.
	InterruptGrace time.Duration
	// Reaper is the command line of the reaper (see reaper.go): started
	// with the first kernel, it deletes the kernels from the server if
	// this process dies without doing so. Nil: no reaper.
	Reaper []string
	// Logger; default a null logger.
	Logger hclog.Logger
}

// Remote is a Runner over a kernel on a Jupyter server: it is started with
// POST /api/kernels, talked to over /api/kernels/{id}/channels (a
// WebSocket), interrupted and restarted through the REST API, and deleted
// when the runner closes. If the WebSocket drops, the requests in flight
// fail and the next one reconnects; a kernel the server no longer has is
// replaced at the next use, as a local one that died.
type Remote struct {
	opts  RemoteOptions
	log   hclog.Logger
	httpc *http.Client

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	kernels *starter[*wsKernel]

	mu     sync.Mutex
	spec   *client.Spec // the server's kernelspec, once checked
	info   *infoCache
	reaper *reaper // started with the first kernel
}

var _ Runner = (*Remote)(nil)

// NewRemote returns a Remote. It starts nothing.
func NewRemote(opts RemoteOptions) (*Remote, error) {
	if opts.Kernel == "" {
		opts.Kernel = "python3"
	}
	if opts.InterruptGrace <= 0 {
		opts.InterruptGrace = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if err := opts.Gateway.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGateway, err)
	}
	opts.Gateway = opts.Gateway.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Remote{opts: opts, log: opts.Logger.Named("gateway"), httpc: opts.Gateway.HTTPClient(), ctx: ctx, cancel: cancel,
		info: newInfoCache("gateway-" + opts.Kernel)}
	r.kernels = newStarter(&r.wg, r.launch, r.alive, r.discard)
	return r, nil
}

// api makes one REST request and decodes the JSON answer into out (may be
// nil). Errors name the URL and the HTTP status, never the token.
func (r *Remote) api(ctx context.Context, method, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Gateway.RequestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	u := r.opts.Gateway.endpoint(path)
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrGateway, method, u, err)
	}
	req.Header = r.opts.Gateway.header()
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.httpc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: cannot reach %s: %v", ErrGateway, r.opts.Gateway.URL, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: %s refused the request (HTTP %d): check JUPYTER_GATEWAY_AUTH_TOKEN", ErrGateway, r.opts.Gateway.URL, resp.StatusCode)
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %s %s: not found (HTTP 404)", errNotFound, method, u)
	case resp.StatusCode >= 300:
		msg := strings.TrimSpace(string(data))
		var e struct {
			Message string `json:"message"`
			Reason  string `json:"reason"`
		}
		if json.Unmarshal(data, &e) == nil && e.Message != "" {
			msg = e.Message
		}
		return fmt.Errorf("%w: %s %s: HTTP %d: %.300s", ErrGateway, method, u, resp.StatusCode, msg)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%w: %s %s: not the kernels API (%v)", ErrGateway, method, u, err)
		}
	}
	return nil
}

// errNotFound is what api returns for HTTP 404.
var errNotFound = fmt.Errorf("%w: not found", ErrGateway)

// kernelSpec checks, once, that the server has the kernelspec and that it
// is not agentkernel.
func (r *Remote) kernelSpec(ctx context.Context) (*client.Spec, error) {
	r.mu.Lock()
	spec := r.spec
	r.mu.Unlock()
	if spec != nil {
		return spec, nil
	}
	var list struct {
		Default     string `json:"default"`
		Kernelspecs map[string]struct {
			Name string      `json:"name"`
			Spec client.Spec `json:"spec"`
		} `json:"kernelspecs"`
	}
	if err := r.api(ctx, http.MethodGet, "/api/kernelspecs", nil, &list); err != nil {
		return nil, err
	}
	ks, ok := list.Kernelspecs[r.opts.Kernel]
	if !ok {
		names := make([]string, 0, len(list.Kernelspecs))
		for n := range list.Kernelspecs {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w: %s has no kernelspec %q (it has: %s)", ErrGateway, r.opts.Gateway.URL, r.opts.Kernel, strings.Join(names, ", "))
	}
	spec = &ks.Spec
	spec.Name = r.opts.Kernel
	if IsAgentKernel(spec) {
		return nil, fmt.Errorf("%w: %q on %s is agentkernel's own kernelspec; pick a real kernel with --backing", ErrSelf, r.opts.Kernel, r.opts.Gateway.URL)
	}
	r.mu.Lock()
	r.spec = spec
	r.mu.Unlock()
	return spec, nil
}

// Spec returns the server's kernelspec, checking that it exists and is not
// agentkernel.
func (r *Remote) Spec(ctx context.Context) (*client.Spec, error) { return r.kernelSpec(ctx) }

// launch starts a kernel on the server and connects to it.
func (r *Remote) launch() (*wsKernel, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.Gateway.RequestTimeout)
	defer cancel()
	if _, err := r.kernelSpec(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	var model struct {
		ID string `json:"id"`
	}
	// env reaches the kernel on Enterprise and Kernel Gateway (KERNEL_*
	// variables and the ones they allow); the chain mark goes with it.
	mark := Mark(r.opts.Owner)
	name, value, _ := strings.Cut(mark, "=")
	body := map[string]any{"name": r.opts.Kernel, "env": map[string]string{name: value}}
	if err := r.api(ctx, http.MethodPost, "/api/kernels", body, &model); err != nil {
		return nil, fmt.Errorf("start kernel %q: %w", r.opts.Kernel, err)
	}
	if model.ID == "" {
		return nil, fmt.Errorf("%w: %s started a kernel without an id", ErrGateway, r.opts.Gateway.URL)
	}
	if rp := r.reaperOf(); rp != nil {
		rp.started(model.ID)
	}
	k := newWSKernel(r.opts.Gateway, model.ID, r.httpc, r.log.With("kernel", model.ID), r.opts.OnIOPub)
	k.probe = func(ctx context.Context) error {
		err := r.api(ctx, http.MethodGet, "/api/kernels/"+model.ID, nil, nil)
		if errors.Is(err, errNotFound) {
			return fmt.Errorf("%w: kernel %s is gone from %s", client.ErrDead, model.ID, r.opts.Gateway.URL)
		}
		return err
	}
	rep, err := k.Do(ctx, client.Request{MsgType: wire.MsgKernelInfoRequest}, client.Handlers{})
	if err != nil {
		k.close()
		r.deleteKernel(model.ID)
		return nil, fmt.Errorf("kernel %s on %s did not answer kernel_info: %w", model.ID, r.opts.Gateway.URL, err)
	}
	r.mu.Lock()
	spec := r.spec
	r.mu.Unlock()
	if err := r.info.learn(rep, spec); err != nil {
		r.log.Debug("cache language_info failed", "error", err)
	}
	r.log.Info("server kernel ready", "kernel", model.ID, "spec", r.opts.Kernel, "url", r.opts.Gateway.URL, "elapsed", time.Since(start))
	return k, nil
}

// alive reports whether the server still has the kernel, as far as we know:
// a kernel found gone is dropped by the request that found it.
func (r *Remote) alive(k *wsKernel) bool { return k.ctx.Err() == nil }

// discard deletes a kernel started after Close.
func (r *Remote) discard(k *wsKernel) {
	k.close()
	r.deleteKernel(k.id)
}

// deleteKernel deletes the kernel from the server; false when it could
// not (the reaper still lists it).
func (r *Remote) deleteKernel(id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.Gateway.RequestTimeout)
	defer cancel()
	if err := r.api(ctx, http.MethodDelete, "/api/kernels/"+id, nil, nil); err != nil && !errors.Is(err, errNotFound) {
		r.log.Warn("delete the server kernel", "kernel", id, "error", err)
		return false
	}
	r.mu.Lock()
	rp := r.reaper
	r.mu.Unlock()
	if rp != nil {
		rp.deleted(id)
	}
	return true
}

// reaperOf returns the reaper, starting it on first use (nil when there is
// none, or it could not start: logged).
func (r *Remote) reaperOf() *reaper {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reaper != nil || len(r.opts.Reaper) == 0 {
		return r.reaper
	}
	rp, err := startReaper(r.opts.Reaper, r.opts.Gateway)
	if err != nil {
		r.log.Warn("the server's kernels will not be deleted if this process is killed", "error", err)
		r.opts.Reaper = nil
		return nil
	}
	r.reaper = rp
	return rp
}

// Start implements Runner.
func (r *Remote) Start() { r.kernels.start() }

// Running implements Runner.
func (r *Remote) Running() bool {
	_, ok := r.kernels.current()
	return ok
}

// Ready implements Runner.
func (r *Remote) Ready(ctx context.Context) error {
	_, err := r.kernels.get(ctx)
	return err
}

// Describe implements Runner.
func (r *Remote) Describe() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := r.opts.Kernel
	if r.spec != nil && r.spec.DisplayName != "" {
		name = r.spec.DisplayName
	}
	return name + " on " + r.opts.Gateway.URL
}

// do runs one request on the current kernel; a kernel the server no longer
// has is dropped (the next request starts another).
func (r *Remote) do(ctx context.Context, req client.Request, h client.Handlers) (*wsKernel, *wire.Message, error) {
	k, err := r.kernels.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	rep, err := k.Do(ctx, req, h)
	if errors.Is(err, client.ErrDead) {
		r.kernels.drop(k)
		k.close()
	}
	if errors.Is(err, errLinkLost) {
		err = fmt.Errorf("%w: the request's outcome is unknown", err)
	}
	return k, rep, err
}

// Do implements Runner.
func (r *Remote) Do(ctx context.Context, req client.Request, h client.Handlers) (*wire.Message, error) {
	_, rep, err := r.do(ctx, req, h)
	return rep, err
}

// Execute implements Runner.
func (r *Remote) Execute(ctx context.Context, e Exec) (Result, error) {
	k, err := r.kernels.get(ctx)
	if err != nil {
		return Result{}, err
	}
	interrupt := func(ctx context.Context) error { return r.interruptKernel(ctx, k) }
	res, err := runCell(ctx, r.ctx, r.opts.InterruptGrace, r.log, e, interrupt, k.Do)
	if errors.Is(err, client.ErrDead) {
		r.kernels.drop(k)
		k.close()
	}
	switch {
	case errors.Is(err, client.ErrDead):
		return res, fmt.Errorf("%w: the server's kernel (%s) is gone; a new one starts at the next execution", client.ErrDead, r.opts.Kernel)
	case ctx.Err() != nil:
		return res, ctx.Err()
	case err != nil:
		return res, fmt.Errorf("backing: execute: %w", err)
	}
	return res, nil
}

func (r *Remote) interruptKernel(ctx context.Context, k *wsKernel) error {
	return r.api(ctx, http.MethodPost, "/api/kernels/"+k.id+"/interrupt", nil, nil)
}

// Interrupt implements Runner.
func (r *Remote) Interrupt(ctx context.Context) error {
	k, ok := r.kernels.interrupt()
	if !ok {
		return nil
	}
	return r.interruptKernel(ctx, k)
}

// Restart implements Runner: the server restarts the kernel in place.
func (r *Remote) Restart(ctx context.Context) error {
	k, err := r.kernels.get(ctx)
	if err != nil {
		return err
	}
	if err := r.api(ctx, http.MethodPost, "/api/kernels/"+k.id+"/restart", nil, nil); err != nil {
		return fmt.Errorf("backing: restart: %w", err)
	}
	r.kernels.restarted()
	// The kernel answers on the same channels once it is back.
	_, err = k.Do(ctx, client.Request{MsgType: wire.MsgKernelInfoRequest}, client.Handlers{})
	return err
}

// Generation implements Generations.
func (r *Remote) Generation() int { return r.kernels.generation() }

// LanguageInfo implements Runner.
func (r *Remote) LanguageInfo(ctx context.Context) json.RawMessage {
	return r.info.wait(ctx, r.kernels.starting()).LanguageInfo
}

// Debugger implements Runner.
func (r *Remote) Debugger() bool { return r.info.get().Debugger }

// Subshells reports whether the kernel offers kernel subshells (protocol
// 5.5), as far as LanguageInfo knows.
func (r *Remote) Subshells() bool { return r.info.get().subshells() }

// Close implements Runner: the server's kernel is deleted. A second call
// returns net.ErrClosed.
func (r *Remote) Close() error {
	k, ok := r.kernels.close()
	if !ok {
		return net.ErrClosed
	}
	deleted := true
	if k != nil {
		k.close()
		deleted = r.deleteKernel(k.id)
	}
	r.cancel()
	r.wg.Wait()
	r.mu.Lock()
	rp := r.reaper
	r.mu.Unlock()
	if rp != nil {
		// A kernel that could not be deleted is left to the reaper, which
		// keeps trying for ReapWindow.
		rp.close(deleted)
	}
	return nil
}
