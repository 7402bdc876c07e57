package bridge

import (
	"context"
	"errors"
	"fmt"
	"html"
	"os"
	"strconv"

	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/surface/webview"
	"github.com/agentkernel/agentkernel/surface/webview/hostagent"
)

// The web panel (%agent webview): a webview.Server started on first use,
// mirroring the host's current agent session. hostagent adapts the host
// to webview.Agent. Its state is the Bridge's panel field, under pmu.

type panel struct {
	srv *webview.Server
}

// panelFor returns the bridge's panel, starting it on first use.
func (b *Bridge) panelFor(ctx context.Context) (*panel, error) {
	if p := b.currentPanel(); p != nil {
		return p, nil
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, errors.New("bridge: closed")
	}
	if _, err := b.host.Current(ctx); err != nil {
		return nil, err
	}
	opts, err := webview.OptionsFromEnv(webview.Options{Logger: b.log, RuntimeDir: client.RuntimeDir(),
		Info: map[string]string{"kernel_pid": strconv.Itoa(os.Getpid()), "workspace": b.host.Workspace()}}, nil)
	if err != nil {
		return nil, err
	}
	srv, err := webview.Start(hostagent.New(b.host), opts)
	if err != nil {
		return nil, err
	}
	p := &panel{srv: srv}
	b.pmu.Lock()
	if prev := b.panel; prev != nil {
		// Another cell started one at the same time: keep that one.
		b.pmu.Unlock()
		srv.Close()
		return prev, nil
	}
	b.panel = p
	b.pmu.Unlock()
	b.log.Info("web panel", "url", srv.URL())
	return p, nil
}

func (b *Bridge) currentPanel() *panel {
	b.pmu.Lock()
	defer b.pmu.Unlock()
	return b.panel
}

// closePanel stops the bridge's panel, if any. Bridge.Close calls it.
func (b *Bridge) closePanel() {
	b.pmu.Lock()
	p := b.panel
	b.panel = nil
	b.pmu.Unlock()
	if p == nil {
		return
	}
	if err := p.srv.Close(); err != nil {
		b.log.Debug("close web panel", "error", err)
	}
}

// webviewMagic answers %agent webview [stop] as text.
func (b *Bridge) webviewMagic(ctx context.Context, args []string) (string, error) {
	if len(args) == 1 && args[0] == "stop" {
		b.closePanel()
		return "Web panel stopped.", nil
	}
	if len(args) != 0 {
		return "", fmt.Errorf("usage: %%agent webview [stop]")
	}
	p, err := b.panelFor(ctx)
	if err != nil {
		return "", err
	}
	return "Web panel: " + p.srv.URL(), nil
}

// magicWebview answers %agent webview in a cell: the URL as a link and
// the panel in an IFrame.
func (b *Bridge) magicWebview(ctx context.Context, r *kernel.Request, args []string, count int) {
	if len(args) != 0 {
		out, err := b.webviewMagic(ctx, args)
		if err != nil {
			b.replyError(r, count, "AgentMagicError", err.Error())
			return
		}
		_ = r.Publish(wire.MsgStream, map[string]any{"name": "stdout", "text": out + "\n"})
		b.replyOK(r, count, "")
		return
	}
	p, err := b.panelFor(ctx)
	if err != nil {
		b.replyError(r, count, "AgentMagicError", err.Error())
		return
	}
	u := html.EscapeString(p.srv.URL())
	htm := `<div><a href="` + u + `" target="_blank" rel="noopener">Open the agent panel in a new tab</a></div>` +
		`<iframe src="` + u + `" title="agentkernel panel" style="width:100%;height:640px;border:1px solid #ccc;border-radius:4px"></iframe>`
	if err := r.Publish(wire.MsgDisplayData, map[string]any{
		"data":     map[string]any{"text/html": htm, "text/plain": "Web panel: " + p.srv.URL()},
		"metadata": map[string]any{},
	}); err != nil {
		b.log.Debug("publish web panel display", "error", err)
	}
	b.replyOK(r, count, "")
}
