package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/internal/gate"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/session/surfacetest"
	"github.com/agentkernel/agentkernel/tests/scripted"
)

// TestConformance: the ACP agent, driven by the SDK's client side over
// pipes as an editor drives it (session/prompt, session/request_permission
// answered allow_once, session/cancel, the _agentkernel/rewind extension,
// a new connection that loads the session), passes the surface suite.
func TestConformance(t *testing.T) {
	surfacetest.Run(t, func(t *testing.T, h *surfacetest.Host) surfacetest.Surface {
		// Every session of the agent is the suite's host (which the suite
		// closes).
		open := func(string) (*session.Host, func() error, error) { return h.Host, func() error { return nil }, nil }
		e := &editor{open: open, cwd: h.Workspace()}
		if err := e.connect(context.Background(), func(c *sdk.ClientSideConnection) error {
			resp, err := c.NewSession(context.Background(), sdk.NewSessionRequest{Cwd: e.cwd, McpServers: []sdk.McpServer{}})
			e.sid = resp.SessionId
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return e
	})
}

// editor is an ACP client of an agent served on pipes.
type editor struct {
	open Opener
	cwd  string
	sid  sdk.SessionId

	conn  *sdk.ClientSideConnection
	stop  func() // ends the connection and waits for the agent
	mu    sync.Mutex
	text  string   // agent_message_chunk texts since the last take
	asked []string // the permission requests' titles and code
	users []string // user_message_chunk texts (a load's replay)
	// loading is set while a session/load runs; misplaced counts the
	// updates whose _meta.agentkernel.replay mark says the wrong thing:
	// missing on the replay, or present on a live update.
	loading   bool
	misplaced int
	// chunk, when set, is told of each agent_message_chunk (a benchmark
	// times the first).
	chunk func()
	// buffers, when set, are the editor's files, offered as fs/*: what
	// the agent reads and writes (by absolute path).
	buffers map[string]string
	prompt  chan error
}

// connect starts an agent on pipes, initializes it and runs then.
func (e *editor) connect(ctx context.Context, then func(*sdk.ClientSideConnection) error) error {
	toAgent, agentIn := io.Pipe()
	agentOut, fromAgent := io.Pipe()
	a := NewWithOpener(e.open, "test", nil)
	served := make(chan error, 1)
	go func() { served <- a.Serve(context.Background(), toAgent, fromAgent) }()
	out := gate.New(agentOut)
	e.conn = sdk.NewClientSideConnection(e, agentIn, out)
	e.conn.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	out.Open()
	e.stop = func() {
		agentIn.Close()
		agentOut.Close()
		<-served
	}
	req := sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}
	if e.buffers != nil {
		req.ClientCapabilities.Fs = sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}
	}
	init, err := e.conn.Initialize(ctx, req)
	if err != nil {
		return err
	}
	if !init.AgentCapabilities.LoadSession {
		return errors.New("the agent does not offer session/load")
	}
	return then(e.conn)
}

// The client's side (sdk.Client): permissions are allowed once, updates
// collected, files and terminals not offered.

func (e *editor) RequestPermission(_ context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	e.mu.Lock()
	e.asked = append(e.asked, fmt.Sprintf("%v %v", deref(p.ToolCall.Title), p.ToolCall.RawInput))
	e.mu.Unlock()
	for _, o := range p.Options {
		if o.Kind == sdk.PermissionOptionKindAllowOnce {
			return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(o.OptionId)}, nil
		}
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (e *editor) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m, ok := updateMeta(n.Update); ok {
		ak, _ := m["agentkernel"].(map[string]any)
		if replay, _ := ak["replay"].(bool); replay != e.loading {
			e.misplaced++
		}
	}
	switch u := n.Update; {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		e.text += u.AgentMessageChunk.Content.Text.Text
		if e.chunk != nil {
			e.chunk()
		}
	case u.UserMessageChunk != nil && u.UserMessageChunk.Content.Text != nil:
		e.users = append(e.users, u.UserMessageChunk.Content.Text.Text)
	}
	return nil
}

func (e *editor) ReadTextFile(_ context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if text, ok := e.buffers[p.Path]; ok {
		return sdk.ReadTextFileResponse{Content: text}, nil
	}
	if e.buffers == nil {
		return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsReadTextFile)
	}
	// As an editor does: a file without a buffer is read from the disk.
	b, err := os.ReadFile(p.Path)
	if err != nil {
		return sdk.ReadTextFileResponse{}, sdk.NewInvalidParams(map[string]string{"path": p.Path, "error": "not found"})
	}
	return sdk.ReadTextFileResponse{Content: string(b)}, nil
}

func (e *editor) WriteTextFile(_ context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.buffers != nil {
		e.buffers[p.Path] = p.Content
		return sdk.WriteTextFileResponse{}, nil
	}
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsWriteTextFile)
}

func (e *editor) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalCreate)
}

func (e *editor) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalKill)
}

func (e *editor) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalOutput)
}

func (e *editor) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalRelease)
}

func (e *editor) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalWaitForExit)
}

// take returns and clears what the client was shown.
func (e *editor) take() surfacetest.Turn {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := surfacetest.Turn{Text: e.text, Asked: e.asked}
	e.text, e.asked = "", nil
	return t
}

func (e *editor) send(ctx context.Context, text string) (sdk.PromptResponse, error) {
	return e.conn.Prompt(ctx, sdk.PromptRequest{SessionId: e.sid, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
}

func (e *editor) Prompt(ctx context.Context, text string) (surfacetest.Turn, error) {
	e.take()
	resp, err := e.send(ctx, text)
	if err == nil && resp.StopReason != sdk.StopReasonEndTurn {
		err = fmt.Errorf("stop reason %q", resp.StopReason)
	}
	return e.take(), err
}

func (e *editor) Start(ctx context.Context, text string) error {
	e.prompt = make(chan error, 1)
	go func() {
		resp, err := e.send(ctx, text)
		if err == nil && resp.StopReason != sdk.StopReasonCancelled {
			err = fmt.Errorf("the cancelled prompt's stop reason is %q", resp.StopReason)
		}
		e.prompt <- err
	}()
	return nil
}

// Cancel sends session/cancel; the prompt answers cancelled.
func (e *editor) Cancel(ctx context.Context) error {
	if err := e.conn.Cancel(ctx, sdk.CancelNotification{SessionId: e.sid}); err != nil {
		return err
	}
	select {
	case err := <-e.prompt:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *editor) Rewind(ctx context.Context, ts int64) error {
	_, err := e.conn.CallExtension(ctx, "_agentkernel/rewind", map[string]any{"sessionId": e.sid, "ts": ts, "conversationOnly": true})
	return err
}

// Reconnect closes the connection (the agent ends), starts another agent
// and loads the session: the prompts it replays.
func (e *editor) Reconnect(ctx context.Context) ([]string, error) {
	e.stop()
	e.mu.Lock()
	e.users, e.loading = nil, true
	e.mu.Unlock()
	err := e.connect(ctx, func(c *sdk.ClientSideConnection) error {
		_, err := c.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: e.sid, Cwd: e.cwd, McpServers: []sdk.McpServer{}})
		return err
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	e.loading = false
	if err == nil && e.misplaced > 0 {
		err = fmt.Errorf("%d updates marked _meta.agentkernel.replay wrongly (the replay's must be, live ones not)", e.misplaced)
	}
	return e.users, err
}

// updateMeta is the _meta of the updates that carry a message's stamp.
func updateMeta(u sdk.SessionUpdate) (map[string]any, bool) {
	switch {
	case u.UserMessageChunk != nil:
		return u.UserMessageChunk.Meta, true
	case u.AgentMessageChunk != nil:
		return u.AgentMessageChunk.Meta, true
	case u.AgentThoughtChunk != nil:
		return u.AgentThoughtChunk.Meta, true
	case u.ToolCall != nil:
		return u.ToolCall.Meta, true
	}
	return nil, false
}

func (e *editor) Close() error {
	e.stop()
	return nil
}

// TestEditorFiles: a client that offers fs/* is where the file tools read
// and write: the agent reads the editor's unsaved buffer, not the disk,
// and its edit lands in the buffer.
func TestEditorFiles(t *testing.T) {
	h := surfacetest.NewHost(t)
	path := filepath.Join(h.Workspace(), "notes.txt")
	if err := os.WriteFile(path, []byte("on disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &editor{open: func(string) (*session.Host, func() error, error) { return h.Host, func() error { return nil }, nil },
		cwd: h.Workspace(), buffers: map[string]string{path: "unsaved in the editor\n"}}
	ctx := context.Background()
	if err := e.connect(ctx, func(c *sdk.ClientSideConnection) error {
		resp, err := c.NewSession(ctx, sdk.NewSessionRequest{Cwd: e.cwd, McpServers: []sdk.McpServer{}})
		e.sid = resp.SessionId
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := h.Modes().SetPermission(ctx, agent.PermissionAcceptEdits); err != nil {
		t.Fatal(err)
	}
	h.Script.Enqueue(
		scripted.Reply(scripted.ToolCall("r1", "read_file", `{"path":"notes.txt"}`)),
		scripted.Reply(scripted.ToolCall("e1", "edit_file", `{"path":"notes.txt","search":"unsaved","replace":"edited"}`)),
		scripted.Reply(scripted.Text("Done.")),
	)
	if _, err := e.Prompt(ctx, "Edit my notes"); err != nil {
		t.Fatal(err)
	}
	reqs := h.Script.Requests()
	b, _ := json.Marshal(reqs[1].Body)
	if !strings.Contains(string(b), "unsaved in the editor") {
		t.Errorf("read_file did not read the editor's buffer: %s", b)
	}
	e.mu.Lock()
	got := e.buffers[path]
	e.mu.Unlock()
	if got != "edited in the editor\n" {
		t.Errorf("the buffer after the edit: %q", got)
	}
	if disk, _ := os.ReadFile(path); string(disk) != "on disk\n" {
		t.Errorf("the disk changed: %q", disk)
	}

	// A file that exists only in the editor (written to an unsaved
	// buffer) is read and edited there too; a file the editor does not
	// know either is an error said once.
	h.Script.Enqueue(
		scripted.Reply(scripted.ToolCall("w2", "write_file", `{"path":"buffer.txt","content":"only in the editor\n"}`)),
		scripted.Reply(scripted.ToolCall("r2", "read_file", `{"path":"buffer.txt"}`)),
		scripted.Reply(scripted.ToolCall("e2", "edit_file", `{"path":"buffer.txt","search":"only","replace":"still only"}`)),
		scripted.Reply(scripted.ToolCall("r3", "read_file", `{"path":"nowhere.txt"}`)),
		scripted.Reply(scripted.Text("Done.")),
	)
	if _, err := e.Prompt(ctx, "Write a buffer and read it back"); err != nil {
		t.Fatal(err)
	}
	// toolResult is what the model was told of call id.
	toolResult := func(id string) string {
		for _, r := range h.Script.Requests() {
			msgs, _ := r.Body["messages"].([]any)
			for _, m := range msgs {
				if m, _ := m.(map[string]any); m["role"] == "tool" && m["tool_call_id"] == id {
					s, _ := m["content"].(string)
					return s
				}
			}
		}
		return ""
	}
	if got := toolResult("r2"); !strings.Contains(got, "only in the editor") {
		t.Errorf("read_file of a file only in the editor: %q", got)
	}
	e.mu.Lock()
	got = e.buffers[filepath.Join(h.Workspace(), "buffer.txt")]
	e.mu.Unlock()
	if got != "still only in the editor\n" {
		t.Errorf("the buffer after the edit: %q", got)
	}
	if _, err := os.Stat(filepath.Join(h.Workspace(), "buffer.txt")); err == nil {
		t.Error("buffer.txt was written to disk")
	}
	if got := toolResult("r3"); !strings.HasPrefix(got, "Error: ") || strings.Contains(got, "Error: Error:") || !strings.Contains(got, "nowhere.txt") {
		t.Errorf("the failed read as the model was told it: %q", got)
	}
}
