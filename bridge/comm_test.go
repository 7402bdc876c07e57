package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/webview/paneltest"
)

// TestCommConformance: the panel's protocol through a Jupyter comm (what
// the JupyterLab sidebar speaks, through the notebook's own kernel
// connection) passes the surface suite, in a code-mode kernel: the panel
// drives the agent while the notebook's cells run code.
func TestCommConformance(t *testing.T) {
	surfacetest.Run(t, func(t *testing.T, h *surfacetest.Host) surfacetest.Surface {
		b, err := New(Config{Runner: h.Runner, Host: h.Host, Mode: ModeCode, Logger: logger()})
		if err != nil {
			t.Fatal(err)
		}
		conn, err := wire.NewConnectionInfo("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		srv, err := kernel.New(kernel.Config{Conn: conn, Handler: b, Logger: logger()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx) }()
		s, err := paneltest.Surface(ctx, func(ctx context.Context) (paneltest.Conn, error) {
			return dialComm(ctx, conn)
		}, func() error {
			cancel()
			<-served
			return b.Close()
		})
		if err != nil {
			cancel()
			<-served
			b.Close()
			t.Fatal(err)
		}
		return s
	})
}

// commConn is a frontend's comm to the panel target on its own kernel
// connection.
type commConn struct {
	c      *client.Client
	id     string
	frames chan []byte
}

func dialComm(ctx context.Context, conn *wire.ConnectionInfo) (*commConn, error) {
	cc := &commConn{id: uuid.NewString(), frames: make(chan []byte, 4096)}
	c, err := client.Dial(ctx, conn, client.Options{Logger: logger(), OnIOPub: cc.iopub})
	if err != nil {
		return nil, err
	}
	cc.c = c
	if _, err := c.Do(ctx, client.Request{MsgType: wire.MsgCommOpen, Content: map[string]any{
		"comm_id": cc.id, "target_name": PanelTarget, "data": map[string]any{}}}, client.Handlers{IOPub: cc.iopub}); err != nil {
		c.Close()
		return nil, err
	}
	return cc, nil
}

// iopub takes the comm's messages, wherever their parent is.
func (cc *commConn) iopub(m *wire.Message) {
	if m.Header.MsgType != wire.MsgCommMsg {
		return
	}
	var c struct {
		CommID string `json:"comm_id"`
		Data   struct {
			Frame json.RawMessage `json:"frame"`
		} `json:"data"`
	}
	if json.Unmarshal(m.Content, &c) == nil && c.CommID == cc.id {
		cc.frames <- c.Data.Frame
	}
}

func (cc *commConn) Send(ctx context.Context, frame []byte) error {
	_, err := cc.c.Do(ctx, client.Request{MsgType: wire.MsgCommMsg, Content: map[string]any{
		"comm_id": cc.id, "data": map[string]json.RawMessage{"frame": frame}}}, client.Handlers{IOPub: cc.iopub})
	return err
}

func (cc *commConn) Recv(ctx context.Context) ([]byte, error) {
	select {
	case f := <-cc.frames:
		return f, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("no panel frame: %w", ctx.Err())
	}
}

func (cc *commConn) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cc.c.Do(ctx, client.Request{MsgType: wire.MsgCommClose, Content: map[string]any{"comm_id": cc.id, "data": map[string]any{}}},
		client.Handlers{})
	return errors.Join(err, cc.c.Close())
}
