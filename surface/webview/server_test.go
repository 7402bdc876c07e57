package webview

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentkernel/agentkernel/messages"
)

func TestAuth(t *testing.T) {
	s := startServer(t, newFake().parts(), Options{})
	base := strings.TrimSuffix(s.URL()[:strings.Index(s.URL(), "?")], "/")
	good := s.opts.Token
	tests := []struct {
		name   string
		path   string
		host   string
		origin string
		ws     bool
		want   int
	}{
		{"page with token", "/?token=" + good, "", "", false, http.StatusOK},
		{"page without token", "/", "", "", false, http.StatusUnauthorized},
		{"page with wrong token", "/?token=" + strings.Repeat("0", len(good)), "", "", false, http.StatusUnauthorized},
		{"page with short token", "/?token=" + good[:10], "", "", false, http.StatusUnauthorized},
		{"page through a rebinding host", "/?token=" + good, "evil.example:80", "", false, http.StatusForbidden},
		{"static files need no token", "/static/panel.js", "", "", false, http.StatusOK},
		{"socket without token", "/ws", "", "", true, http.StatusUnauthorized},
		{"socket with wrong token", "/ws?token=nope", "", "", true, http.StatusUnauthorized},
		{"socket from a foreign origin", "/ws?token=" + good, "", "http://evil.example", true, http.StatusForbidden},
		{"socket from its own origin", "/ws?token=" + good, "", base, true, http.StatusSwitchingProtocols},
		{"socket without origin (not a browser)", "/ws?token=" + good, "", "", true, http.StatusSwitchingProtocols},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ws {
				req, _ := http.NewRequest("GET", base+tt.path, nil)
				if tt.host != "" {
					req.Host = tt.host
				}
				if got := httpStatus(t, req); got != tt.want {
					t.Fatalf("status %d, want %d", got, tt.want)
				}
				return
			}
			h := http.Header{}
			if tt.origin != "" {
				h.Set("Origin", tt.origin)
			}
			ws, resp, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(base, "http")+tt.path,
				&websocket.DialOptions{HTTPHeader: h})
			if ws != nil {
				defer ws.CloseNow()
			}
			if resp == nil {
				t.Fatalf("no response: %v", err)
			}
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, tt.want, err)
			}
			if tt.want == http.StatusSwitchingProtocols {
				_, data, err := ws.Read(context.Background())
				if err != nil || !strings.Contains(string(data), `"type":"state"`) {
					t.Fatalf("first frame %q, %v", data, err)
				}
			}
		})
	}
}

func TestPageHeaders(t *testing.T) {
	s := startServer(t, newFake().parts(), Options{})
	resp, err := http.Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("CSP %q", csp)
	}
}

func TestInboundErrors(t *testing.T) {
	s := startServer(t, newFake().parts(), Options{MaxFrameBytes: 4096})
	c := dial(t, s)
	c.until("state")
	tests := []struct {
		name  string
		frame string
		code  string
	}{
		{"bad json", `{"type":`, CodeBadJSON},
		{"not an object", `[1,2]`, CodeBadFrame},
		{"unknown type", `{"type":"launchMissiles","id":"x1"}`, CodeUnknownType},
		{"no type", `{}`, CodeBadFrame},
		{"unknown field", `{"type":"cancelTask","evil":1}`, CodeBadFrame},
		{"wrong version", `{"v":9,"type":"cancelTask"}`, CodeBadVersion},
		{"askResponse without ts", `{"type":"askResponse","response":"yesButtonClicked"}`, CodeBadFrame},
		{"askResponse unknown answer", `{"type":"askResponse","ts":5,"response":"maybe"}`, CodeBadFrame},
		{"messageResponse without text", `{"type":"askResponse","ts":5,"response":"messageResponse"}`, CodeBadFrame},
		{"newTask without text", `{"type":"newTask"}`, CodeBadFrame},
		{"images on a yes", `{"type":"askResponse","ts":5,"response":"yesButtonClicked","images":["data:image/png;base64,AA=="]}`, CodeBadFrame},
		{"images on cancelTask", `{"type":"cancelTask","images":["data:image/png;base64,AA=="]}`, CodeBadFrame},
		{"an image that is no data URL", `{"type":"newTask","text":"see","images":["https://example.com/a.png"]}`, CodeBadFrame},
		{"images of the wrong type", `{"type":"newTask","text":"see","images":[1]}`, CodeBadFrame},
		{"too many images", `{"type":"newTask","text":"see","images":["data:image/png;base64,AA==","data:image/png;base64,AA==","data:image/png;base64,AA==","data:image/png;base64,AA==","data:image/png;base64,AA=="]}`, CodeTooLarge},
		{"ts of the wrong type", `{"type":"deleteMessage","ts":"5"}`, CodeBadFrame},
		{"trailing data", `{"type":"cancelTask"}{}`, CodeBadJSON},
		{"oversized", `{"type":"newTask","text":"` + strings.Repeat("a", 5000) + `"}`, CodeTooLarge},
		{"failing command", `{"type":"askResponse","id":"q","ts":5,"response":"yesButtonClicked"}`, CodeFailed},
		{"a mention's prefix too long", `{"type":"completeMention","prefix":"` + strings.Repeat("d", 300) + `"}`, CodeBadFrame},
		{"a mention's prefix not a string", `{"type":"completeMention","prefix":1}`, CodeBadFrame},
		{"mentions of an Agent without them", `{"type":"completeMention","id":"m","prefix":"d"}`, CodeFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.ws.Write(context.Background(), websocket.MessageText, []byte(tt.frame)); err != nil {
				t.Fatal(err)
			}
			e := c.until("error")
			if e["code"] != tt.code {
				t.Fatalf("error %v, want code %s", e, tt.code)
			}
		})
	}
	// Binary frames are refused too, and the connection still works.
	if err := c.ws.Write(context.Background(), websocket.MessageBinary, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if e := c.until("error"); e["code"] != CodeBadFrame {
		t.Fatalf("binary: %v", e)
	}
	c.send(map[string]any{"type": "getState"})
	c.until("state")
	if s.Clients() != 1 {
		t.Fatalf("%d clients", s.Clients())
	}
}

func TestCommands(t *testing.T) {
	f := newFake()
	s := startServer(t, f.parts(), Options{})
	c := dial(t, s)
	other := dial(t, s)
	c.until("state")
	other.until("state")

	c.send(map[string]any{"type": "newTask", "id": "1", "text": "hello"})
	if a := c.until("ack"); a["id"] != "1" {
		t.Fatalf("ack %v", a)
	}
	// Attached images reach the agent, which shows them.
	const pixel = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	c.send(map[string]any{"type": "newTask", "id": "1b", "text": "this", "images": []string{pixel, pixel}})
	c.until("ack")
	c.waitFor(func() bool {
		m := c.st.Messages[len(c.st.Messages)-1]
		return m.Text == "this (+2 images)" && len(m.Images) == 2 && m.Images[1] == pixel
	})
	c.send(map[string]any{"type": "deleteMessage", "ts": c.st.Messages[len(c.st.Messages)-1].TS, "id": "1c"})
	c.until("rewindReport")
	ask := messages.UIMessage{TS: f.nextTS(), Type: messages.TypeAsk, Ask: messages.AskTool, Text: `{"tool":"write_file"}`}
	f.create(ask)
	c.until("messageCreated") // the ask (after hello's)
	if c.st.PendingAsk == nil || c.st.PendingAsk.TS != ask.TS {
		t.Fatalf("pending ask %+v", c.st.PendingAsk)
	}
	// Answered by the other client: closes on both.
	other.send(map[string]any{"type": "askResponse", "id": "2", "ts": ask.TS, "response": "yesButtonClicked"})
	other.until("ack")
	c.until("messageUpdated")
	if c.st.PendingAsk != nil {
		t.Fatal("ask still pending after another client answered")
	}
	// A second answer loses.
	c.send(map[string]any{"type": "askResponse", "id": "3", "ts": ask.TS, "response": "noButtonClicked"})
	if e := c.until("error"); e["id"] != "3" || e["code"] != CodeFailed {
		t.Fatalf("late answer: %v", e)
	}
	c.send(map[string]any{"type": "setPermissionMode", "permissionMode": "plan"})
	c.until("settings")
	c.send(map[string]any{"type": "setAgentMode", "agentMode": "plan"})
	c.until("settings")
	if c.st.AgentMode != "plan" || c.st.PermissionMode != "plan" {
		t.Fatalf("agent mode %q, permission mode %q", c.st.AgentMode, c.st.PermissionMode)
	}
	c.send(map[string]any{"type": "setModel", "model": "openai:gpt-4.1"})
	c.until("settings")
	if c.st.PermissionMode != "plan" || c.st.Model != "openai:gpt-4.1" {
		t.Fatalf("settings %q %q", c.st.PermissionMode, c.st.Model)
	}
	c.send(map[string]any{"type": "listSessions", "id": "4", "search": "fi"})
	if l := c.until("sessions"); len(l["sessions"].([]any)) != 2 || l["id"] != "4" {
		t.Fatalf("sessions %v", l)
	}
	c.send(map[string]any{"type": "searchMessages", "query": "plot"})
	if h := c.until("searchResults"); len(h["hits"].([]any)) != 1 {
		t.Fatalf("hits %v", h)
	}
	c.send(map[string]any{"type": "cancelTask", "id": "5"})
	c.until("ack")
	// Rewind to the ask, files only: hello stays; the report comes back.
	c.send(map[string]any{"type": "deleteMessage", "ts": ask.TS, "id": "6", "rewind": map[string]any{"noKernel": true}})
	if r := c.until("rewindReport"); r["id"] != "6" || r["report"].(map[string]any)["summary"] != "rewound to "+itoa(ask.TS) {
		t.Fatalf("rewind report %v", r)
	}
	c.waitFor(func() bool { return len(c.st.Messages) == 1 && c.st.Messages[0].Text == "hello" })
	c.send(map[string]any{"type": "forkSession", "ts": c.st.Messages[0].TS, "id": "7"})
	if r := c.until("rewindReport"); r["report"].(map[string]any)["forkId"] != "fork-1" {
		t.Fatalf("fork report %v", r)
	}
	c.send(map[string]any{"type": "editMessage", "ts": c.st.Messages[0].TS, "text": "hi again"})
	c.waitFor(func() bool { return len(c.st.Messages) == 1 && c.st.Messages[0].Text == "hi again" })
	c.send(map[string]any{"type": "loadSession", "sessionId": "s2"})
	c.until("state")
	if c.st.SessionID != "s2" || c.st.Messages[0].Text != "loaded s2" {
		t.Fatalf("after load %+v", c.st)
	}
	other.until("state")
	waitSame(t, s, other)
	want := []string{"newTask:hello", "newTask:this (+2 images)", "rewind:" + itoa(ask.TS-1) + ":{ConversationOnly:false NoFiles:false NoKernel:false Force:false}", "respond:" + itoa(ask.TS) + ":yesButtonClicked:", "respond:" + itoa(ask.TS) + ":noButtonClicked:",
		"mode:plan", "agentMode:plan", "model:openai:gpt-4.1", "list:fi", "search:plot", "cancel", "rewind:" + itoa(ask.TS) + ":{ConversationOnly:false NoFiles:false NoKernel:true Force:false}",
		"fork:" + itoa(ask.TS-2), "rewind:" + itoa(ask.TS-2) + ":{ConversationOnly:false NoFiles:false NoKernel:false Force:false}", "newTask:hi again", "load:s2"}
	if got := f.Calls(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("calls\n got %q\nwant %q", got, want)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// waitSame checks that client c's state equals the server's mirror once
// c has read everything queued for it (a getState round trip).
func waitSame(t testing.TB, s *Server, c *testClient) {
	t.Helper()
	got, _ := json.Marshal(c.st)
	want, _ := json.Marshal(s.State())
	if string(got) != string(want) {
		t.Fatalf("client state differs from the server's\n got %s\nwant %s", got, want)
	}
}

func TestRuntimeFile(t *testing.T) {
	dir := t.TempDir()
	s, err := Start(newFake().parts(), Options{RuntimeDir: dir, Info: map[string]string{"session": "s1"}})
	if err != nil {
		t.Fatal(err)
	}
	list, err := ListRunning(dir)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListRunning: %v %v", list, err)
	}
	if r := list[0]; r.URL != s.URL() || !r.Alive || r.PID != os.Getpid() || r.Info["session"] != "s1" {
		t.Fatalf("runtime entry %+v", r)
	}
	if fi, err := os.Stat(list[0].File); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("runtime file mode: %v %v", fi, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err == nil {
		t.Fatal("second Close returned nil")
	}
	if list, _ := ListRunning(dir); len(list) != 0 {
		t.Fatalf("runtime file left: %v", list)
	}
	if list, err := ListRunning(dir + "/missing"); err != nil || list != nil {
		t.Fatalf("missing dir: %v %v", list, err)
	}
}

func TestOptionsFromEnv(t *testing.T) {
	env := map[string]string{"AGENTKERNEL_WEBVIEW_HOST": "0.0.0.0", "AGENTKERNEL_WEBVIEW_PORT": "8123"}
	o, err := OptionsFromEnv(Options{}, func(k string) string { return env[k] })
	if err != nil || o.Host != "0.0.0.0" || o.Port != 8123 {
		t.Fatalf("%+v %v", o, err)
	}
	env["AGENTKERNEL_WEBVIEW_PORT"] = "http"
	if _, err := OptionsFromEnv(Options{}, func(k string) string { return env[k] }); err == nil {
		t.Fatal("bad port accepted")
	}
}

func TestShutdownClosesClients(t *testing.T) {
	s, err := Start(newFake().parts(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, s)
	c.until("state")
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err = c.next(ctx)
	if st := websocket.CloseStatus(err); st != websocket.StatusGoingAway {
		t.Fatalf("close status %v (%v)", st, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestMCPServers(t *testing.T) {
	f := newFake()
	s := startServer(t, f.parts(), Options{})
	c := dial(t, s)
	c.until("state")
	servers := []MCPServer{{Name: "everything", Scope: "project", Transport: "stdio", State: "ready", Tools: []string{"mcp__everything__echo"}},
		{Name: "broken", State: "failed", Error: "command not found"}}
	f.emit(Event{Kind: EventMCP, MCP: servers})
	fr := c.until("mcpServers")
	list, _ := fr["servers"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["tools"].([]any)[0] != "mcp__everything__echo" || list[1].(map[string]any)["error"] != "command not found" {
		t.Fatalf("mcpServers frame %v", fr)
	}
	// A client that connects later gets them in its state.
	late := dial(t, s)
	late.until("state")
	if len(late.st.MCPServers) != 2 || late.st.MCPServers[1].State != "failed" {
		t.Fatalf("state's MCP servers %+v", late.st.MCPServers)
	}
}

// TestOlderMessages: a long session's state frame carries its newest
// StateWindow messages and how many come before; loadOlder pages back
// through the rest, oldest first, to the session's first message.
func TestOlderMessages(t *testing.T) {
	f := newFake()
	const n = 1000
	for i := 0; i < n; i++ {
		f.create(messages.UIMessage{TS: f.nextTS(), Type: messages.TypeSay, Say: messages.SayText, Text: fmt.Sprintf("m%d", i)})
	}
	s := startServer(t, f.parts(), Options{})
	c := dial(t, s)
	c.until("state")
	if got := len(c.st.Messages); got != StateWindow || c.st.Older != n-StateWindow {
		t.Fatalf("state: %d messages, older %v", got, c.st.Older)
	}
	first := c.st.Messages[0].TS
	var texts []string
	older := n - StateWindow
	for older > 0 {
		c.send(map[string]any{"type": "loadOlder", "id": "p", "ts": first, "limit": 250})
		page := c.until("olderMessages")
		msgs := page["messages"].([]any)
		if len(msgs) == 0 || len(msgs) > 250 {
			t.Fatalf("a page of %d messages", len(msgs))
		}
		var pageTexts []string
		for _, m := range msgs {
			pageTexts = append(pageTexts, m.(map[string]any)["text"].(string))
		}
		texts = append(pageTexts, texts...)
		first = int64(msgs[0].(map[string]any)["ts"].(float64))
		if got := int(page["older"].(float64)); got != older-len(msgs) {
			t.Fatalf("older %d after a page of %d, was %d", got, len(msgs), older)
		}
		older -= len(msgs)
	}
	if len(texts) != n-StateWindow || texts[0] != "m0" || texts[len(texts)-1] != fmt.Sprintf("m%d", n-StateWindow-1) {
		t.Fatalf("paged back %d messages: %s … %s", len(texts), texts[0], texts[len(texts)-1])
	}
	c.send(map[string]any{"type": "loadOlder", "id": "bad"})
	if e := c.until("error"); e["code"] != CodeBadFrame {
		t.Errorf("loadOlder without ts: %v", e)
	}
}
