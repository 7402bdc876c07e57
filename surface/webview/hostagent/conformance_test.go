package hostagent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/surface/webview"
	"github.com/agentkernel/agentkernel/surface/webview/hostagent"
	"github.com/agentkernel/agentkernel/surface/webview/paneltest"
)

// TestConformance: the web panel, its protocol served over the host by
// webview's own server and spoken by a WebSocket client as the page does,
// passes the surface suite.
func TestConformance(t *testing.T) {
	surfacetest.Run(t, func(t *testing.T, h *surfacetest.Host) surfacetest.Surface {
		srv, err := webview.Start(hostagent.New(h.Host), webview.Options{})
		if err != nil {
			t.Fatal(err)
		}
		url := "ws" + strings.TrimPrefix(strings.Replace(srv.URL(), "/?", "/ws?", 1), "http")
		s, err := paneltest.Surface(context.Background(), func(ctx context.Context) (paneltest.Conn, error) {
			ws, _, err := websocket.Dial(ctx, url, nil)
			if err != nil {
				return nil, err
			}
			ws.SetReadLimit(64 << 20)
			return wsConn{ws}, nil
		}, srv.Close)
		if err != nil {
			srv.Close()
			t.Fatal(err)
		}
		return s
	})
}

// wsConn is the panel's socket, as the page uses it.
type wsConn struct{ ws *websocket.Conn }

func (c wsConn) Send(ctx context.Context, frame []byte) error {
	return c.ws.Write(ctx, websocket.MessageText, frame)
}

func (c wsConn) Recv(ctx context.Context) ([]byte, error) {
	_, b, err := c.ws.Read(ctx)
	return b, err
}

func (c wsConn) Close() error { return c.ws.Close(websocket.StatusNormalClosure, "") }

// TestRenameReachesThePanel: a session named from another surface (a
// magic, sessions rename through the host) reaches the panel's header: a
// settings frame with the new title, or, as the rename opened the first
// session here, the new session's state frame when the panel's reread of
// it already held the title (the settings event then changes nothing and
// sends no frame; the header shows the title from the state).
func TestRenameReachesThePanel(t *testing.T) {
	h := surfacetest.NewHost(t)
	srv, err := webview.Start(hostagent.New(h.Host), webview.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := "ws" + strings.TrimPrefix(strings.Replace(srv.URL(), "/?", "/ws?", 1), "http")
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(64 << 20)
	if _, _, err := ws.Read(ctx); err != nil { // the state
		t.Fatal(err)
	}
	if err := h.Conversation().SetTitle(ctx, "Quarterly review"); err != nil {
		t.Fatal(err)
	}
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("no settings frame with the title: %v", err)
		}
		var frames []map[string]any
		if len(b) > 0 && b[0] == '[' {
			_ = json.Unmarshal(b, &frames)
		} else {
			var f map[string]any
			_ = json.Unmarshal(b, &f)
			frames = append(frames, f)
		}
		for _, f := range frames {
			if f["type"] == "settings" && f["title"] == "Quarterly review" {
				return
			}
			if st, _ := f["state"].(map[string]any); f["type"] == "state" && st["title"] == "Quarterly review" {
				return
			}
		}
	}
}
