package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/session/surfacetest"
)

// TestConformance: the Jupyter mapping, a prompt-mode kernel served over
// ZeroMQ and driven by a Jupyter client as a notebook drives it (asks on
// stdin, Interrupt, %agent magics, a second frontend connecting), passes
// the surface suite.
func TestConformance(t *testing.T) {
	surfacetest.Run(t, func(t *testing.T, h *surfacetest.Host) surfacetest.Surface {
		conn, stop := serveBridge(t, h, PromptCells)
		nb := &notebook{conn: conn, stop: func() { stop() }}
		if err := nb.dial(context.Background()); err != nil {
			nb.Close()
			t.Fatal(err)
		}
		return nb
	})
}

// serveBridge serves a bridge over the scripted host h as a kernel;
// stop ends the server and closes the bridge.
func serveBridge(t *testing.T, h *surfacetest.Host, mode CellKind) (conn *wire.ConnectionInfo, stop func() error) {
	t.Helper()
	return serveHost(t, h.Host, h.Runner, mode)
}

// serveHost serves a bridge over host and its runner r as a kernel.
func serveHost(t testing.TB, host *session.Host, r backing.Runner, mode CellKind) (conn *wire.ConnectionInfo, stop func() error) {
	t.Helper()
	_, conn, stop = serveKernel(t, Config{Runner: r, Host: host, Cells: mode})
	return conn, stop
}

// serveConfig serves a bridge of cfg as a kernel.
func serveConfig(t testing.TB, cfg Config) (conn *wire.ConnectionInfo, stop func() error) {
	t.Helper()
	_, conn, stop = serveKernel(t, cfg)
	return conn, stop
}

// serveBridgeOf is serveHost, with the bridge served.
func serveBridgeOf(t testing.TB, host *session.Host, r backing.Runner, mode CellKind) (b *Bridge, conn *wire.ConnectionInfo, stop func() error) {
	t.Helper()
	return serveKernel(t, Config{Runner: r, Host: host, Cells: mode})
}

// serveKernel serves a bridge of cfg as a kernel, and returns it.
func serveKernel(t testing.TB, cfg Config) (b *Bridge, conn *wire.ConnectionInfo, stop func() error) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = logger()
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if conn, err = wire.NewConnectionInfo("127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	srv, err := kernel.New(kernel.Config{Conn: conn, Handler: b, Logger: logger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	return b, conn, func() error {
		cancel()
		<-served
		return b.Close()
	}
}

// notebook is a Jupyter frontend of the kernel.
type notebook struct {
	conn    *wire.ConnectionInfo
	c       *client.Client
	stop    func()
	running chan error // the reply of the cell Start sent
}

func (n *notebook) dial(ctx context.Context) error {
	c, err := client.Dial(ctx, n.conn, client.Options{Logger: logger()})
	n.c = c
	return err
}

// cell runs text as a cell and returns what it showed; the stdin prompts
// it asked are answered "y" and listed.
func (n *notebook) cell(ctx context.Context, text string) (surfacetest.Turn, error) {
	var turn surfacetest.Turn
	rep, err := n.c.Execute(ctx, text, client.ExecuteOptions{AllowStdin: true}, client.Handlers{
		IOPub: func(m *wire.Message) { turn.Text += outputText(m) },
		Input: func(prompt string, _ bool) (string, error) {
			turn.Asked = append(turn.Asked, prompt)
			return "y", nil
		},
	})
	if err != nil {
		return turn, err
	}
	var c struct {
		Status string `json:"status"`
		EName  string `json:"ename"`
		EValue string `json:"evalue"`
	}
	if err := json.Unmarshal(rep.Content, &c); err != nil {
		return turn, err
	}
	if c.Status != "ok" {
		return turn, fmt.Errorf("cell %q: %s %s: %s", text, c.Status, c.EName, c.EValue)
	}
	return turn, nil
}

// outputText is the text an output message shows.
func outputText(m *wire.Message) string {
	var c struct {
		Text string            `json:"text"`
		Data map[string]string `json:"data"`
	}
	switch m.Header.MsgType {
	case wire.MsgStream, wire.MsgDisplayData, wire.MsgUpdateDisplayData, wire.MsgExecuteResult:
		_ = json.Unmarshal(m.Content, &c)
	}
	if md, ok := c.Data["text/markdown"]; ok {
		return c.Text + md
	}
	return c.Text + c.Data["text/plain"]
}

func (n *notebook) Prompt(ctx context.Context, text string) (surfacetest.Turn, error) {
	return n.cell(ctx, text)
}

func (n *notebook) Start(ctx context.Context, text string) error {
	n.running = make(chan error, 1)
	go func() {
		_, err := n.cell(ctx, text)
		n.running <- err
	}()
	return nil
}

// Cancel is the notebook's Interrupt: an interrupt_request on control,
// then the cell's reply.
func (n *notebook) Cancel(ctx context.Context) error {
	if _, err := n.c.Do(ctx, client.Request{Channel: wire.Control, MsgType: wire.MsgInterruptRequest}, client.Handlers{}); err != nil {
		return err
	}
	select {
	case err := <-n.running:
		if err == nil || !strings.Contains(err.Error(), "KeyboardInterrupt") {
			return fmt.Errorf("the interrupted cell replied %v, want KeyboardInterrupt", err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (n *notebook) Rewind(ctx context.Context, ts int64) error {
	_, err := n.cell(ctx, fmt.Sprintf("%%agent rewind %d --conversation-only", ts))
	return err
}

// Reconnect is another frontend on the same kernel: it reads the prompts
// in %agent history (its KIND and TEXT columns).
func (n *notebook) Reconnect(ctx context.Context) ([]string, error) {
	n.c.Close()
	if err := n.dial(ctx); err != nil {
		return nil, err
	}
	turn, err := n.cell(ctx, "%agent history")
	if err != nil {
		return nil, err
	}
	var out []string
	first := true
	for _, l := range strings.Split(turn.Text, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || !strings.HasPrefix(f[0], "#") || f[0] == "#" {
			continue
		}
		if f[2] == "say:user_feedback" || (f[2] == "say:text" && first) {
			out = append(out, strings.Join(f[3:], " "))
		}
		if f[2] == "say:text" {
			first = false
		}
	}
	return out, nil
}

func (n *notebook) Close() error {
	var err error
	if n.c != nil {
		err = n.c.Close()
	}
	n.stop()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}
