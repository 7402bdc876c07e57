package webview

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// ProtocolVersion is the version of the frames in docs/webview-protocol.md.
// Every frame the server sends carries it as "v"; a client frame may omit
// it, and is refused when it names another version. Version 3: ask
// messages carry their answer, message frames say whether theirs is the
// pending ask.
const ProtocolVersion = 3

// Limits on inbound frames.
const (
	// MaxTextBytes caps a prompt, answer or edit.
	MaxTextBytes = 256 << 10
	maxIDBytes   = 128
	maxQuery     = 1024
	maxLimit     = 500
	// MaxImages caps the images attached to a newTask or a message
	// answer, and MaxImageURLBytes each one's data: URL (a 1 MiB image in
	// base64, and its header). The agent checks the images themselves.
	MaxImages        = 4
	MaxImageURLBytes = (1<<20+2)/3*4 + 64
)

// The client → server frame types.
const (
	TypeNewTask           = "newTask"
	TypeAskResponse       = "askResponse"
	TypeCancelTask        = "cancelTask"
	TypeDeleteMessage     = "deleteMessage"
	TypeForkSession       = "forkSession"
	TypeEditMessage       = "editMessage"
	TypeSetPermissionMode = "setPermissionMode"
	TypeSetAgentMode      = "setAgentMode"
	TypeSetModel          = "setModel"
	TypeListSessions      = "listSessions"
	TypeSearchMessages    = "searchMessages"
	TypeLoadSession       = "loadSession"
	TypeGetState          = "getState"
	TypeLoadOlder         = "loadOlder"
)

// StateWindow is how many of the newest messages a state or
// messagesRewound frame carries; a client loads the older ones a page at
// a time (loadOlder), as it scrolls up.
const StateWindow = 400

// Error codes of error frames.
const (
	CodeBadJSON      = "bad_json"
	CodeBadFrame     = "bad_frame"
	CodeUnknownType  = "unknown_type"
	CodeTooLarge     = "too_large"
	CodeBadVersion   = "bad_version"
	CodeFailed       = "failed"
	CodeResyncFailed = "resync_failed"
)

// Inbound is a decoded, validated client frame. Only the fields of its
// Type are meaningful.
type Inbound struct {
	V        int    `json:"v,omitempty"`
	Type     string `json:"type"`
	ID       string `json:"id,omitempty"` // echoed in the ack or error
	Text     string `json:"text,omitempty"`
	TS       int64  `json:"ts,omitempty"`
	Response string `json:"response,omitempty"`
	// PermissionMode is setPermissionMode's, AgentMode setAgentMode's.
	PermissionMode string `json:"permissionMode,omitempty"`
	AgentMode      string `json:"agentMode,omitempty"`
	Model          string `json:"model,omitempty"`
	Search         string `json:"search,omitempty"`
	Query          string `json:"query,omitempty"`
	Limit          int    `json:"limit,omitempty"`
	SessionID      string `json:"sessionId,omitempty"`
	// Images are data: URLs attached to a newTask or a messageResponse.
	Images []string `json:"images,omitempty"`
	// Rewind chooses what deleteMessage (a rewind), forkSession and
	// editMessage turn back besides the conversation; absent: everything.
	Rewind *RewindChoice `json:"rewind,omitempty"`
	// Provider and Key are a setKey's (settings.go), Provider and URL a
	// setBaseURL's; Effort a setEffort's.
	Provider string `json:"provider,omitempty"`
	Key      string `json:"key,omitempty"`
	URL      string `json:"url,omitempty"`
	Effort   string `json:"effort,omitempty"`
	// Prefix is a completeMention's: what follows the @ (mentions.go).
	Prefix string `json:"prefix,omitempty"`
}

// FrameError is why an inbound frame was refused: Code is one of the
// Code* constants, ID the frame's id when it could be read.
type FrameError struct {
	Code    string
	ID      string
	Message string
}

func (e *FrameError) Error() string { return "webview: " + e.Code + ": " + e.Message }

func frameErr(code, id, format string, args ...any) *FrameError {
	return &FrameError{Code: code, ID: id, Message: fmt.Sprintf(format, args...)}
}

// DecodeInbound parses and validates one client frame. Any problem is a
// *FrameError; the function never panics, whatever data holds.
func DecodeInbound(data []byte) (Inbound, error) {
	var in Inbound
	if !utf8.Valid(data) {
		return in, frameErr(CodeBadJSON, "", "frame is not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		// Try to recover the id so the error can be matched.
		var probe struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(data, &probe)
		var ute *json.UnmarshalTypeError
		code := CodeBadJSON
		if errors.As(err, &ute) || bytes.Contains([]byte(err.Error()), []byte("unknown field")) {
			code = CodeBadFrame
		}
		return Inbound{}, frameErr(code, clip(probe.ID, maxIDBytes), "%v", err)
	}
	if dec.More() {
		return Inbound{}, frameErr(CodeBadJSON, in.ID, "trailing data after the JSON object")
	}
	if err := in.validate(); err != nil {
		err.ID = clip(in.ID, maxIDBytes)
		return Inbound{}, err
	}
	return in, nil
}

// validate checks the frame's common fields, then its type's own
// (commands).
func (in *Inbound) validate() *FrameError {
	if in.V != 0 && in.V != ProtocolVersion {
		return frameErr(CodeBadVersion, "", "protocol version %d is not supported (want %d)", in.V, ProtocolVersion)
	}
	if len(in.ID) > maxIDBytes {
		return badFrame("id longer than %d bytes", maxIDBytes)
	}
	if len(in.Text) > MaxTextBytes {
		return frameErr(CodeTooLarge, "", "text longer than %d bytes", MaxTextBytes)
	}
	cmd, known := commands[in.Type]
	if len(in.Images) == 0 {
		in.Images = nil // "images": [] is none
	} else {
		if cmd.images == nil || !cmd.images(in) {
			return badFrame("only newTask and a messageResponse take images")
		}
		if err := checkImages(in.Images); err != nil {
			return err
		}
	}
	switch {
	case in.Type == "":
		return badFrame("frame has no type")
	case !known:
		return frameErr(CodeUnknownType, "", "unknown frame type %q", clip(in.Type, 40))
	}
	if cmd.check != nil {
		if err := cmd.check(in); err != nil {
			return err
		}
	}
	if in.Limit < 0 || in.Limit > maxLimit {
		return badFrame("limit must be between 0 and %d", maxLimit)
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) && len(s) > 0 {
		s = s[:len(s)-1]
	}
	return s
}

// Outbound frames. Each is marshalled once and shared by every client.

type stateFrame struct {
	V     int       `json:"v"`
	Type  string    `json:"type"` // "state"
	State wireState `json:"state"`
}

// messageFrame carries a new message, or a new version of one. Pending
// says that it is now the pending ask; without it, it is not (and stops
// being so if it was).
type messageFrame struct {
	V       int          `json:"v"`
	Type    string       `json:"type"` // messageCreated | messageUpdated
	Message *wireMessage `json:"message"`
	Pending bool         `json:"pending,omitempty"`
}

// appendFrame is a messageUpdated that only appends streamed text: the
// client adds Text and Reasoning to its copy of the message ts and sets
// partial.
type appendFrame struct {
	V         int    `json:"v"`
	Type      string `json:"type"` // messageUpdated
	TS        int64  `json:"ts"`
	Append    string `json:"append,omitempty"`
	Reasoning string `json:"appendReasoning,omitempty"`
	Partial   bool   `json:"partial"`
}

type rewoundFrame struct {
	V          int           `json:"v"`
	Type       string        `json:"type"` // messagesRewound
	Messages   []wireMessage `json:"messages"`
	PendingAsk *wireMessage  `json:"pendingAsk"`
	// Older is how many messages come before Messages (StateWindow).
	Older int `json:"older,omitempty"`
}

// olderFrame answers loadOlder: the page of messages before the ts asked
// for, oldest first, and how many remain before them.
type olderFrame struct {
	V        int           `json:"v"`
	Type     string        `json:"type"` // olderMessages
	ID       string        `json:"id,omitempty"`
	Messages []wireMessage `json:"messages"`
	Older    int           `json:"older"`
}

type statusFrame struct {
	V      int    `json:"v"`
	Type   string `json:"type"` // kernelStatus
	Status string `json:"status"`
}

type totalsFrame struct {
	V      int    `json:"v"`
	Type   string `json:"type"` // tokenUsage
	Totals Totals `json:"totals"`
}

type settingsFrame struct {
	V              int    `json:"v"`
	Type           string `json:"type"` // settings
	PermissionMode string `json:"permissionMode"`
	Model          string `json:"model"`
	Title          string `json:"title,omitempty"`
	AgentMode      string `json:"agentMode,omitempty"`
}

type mcpFrame struct {
	V       int         `json:"v"`
	Type    string      `json:"type"` // mcpServers
	Servers []MCPServer `json:"servers"`
}

type errorFrame struct {
	V       int    `json:"v"`
	Type    string `json:"type"` // error
	ID      string `json:"id,omitempty"`
	Code    string `json:"code"`
	Message string `json:"text"`
}

type ackFrame struct {
	V    int    `json:"v"`
	Type string `json:"type"` // ack
	ID   string `json:"id"`
}

// rewindReportFrame answers deleteMessage, forkSession and editMessage,
// to the client that sent it: what the rewind did (it also acks the
// frame's id).
type rewindReportFrame struct {
	V      int          `json:"v"`
	Type   string       `json:"type"` // rewindReport
	ID     string       `json:"id,omitempty"`
	Report RewindReport `json:"report"`
}

type sessionsFrame struct {
	V        int           `json:"v"`
	Type     string        `json:"type"` // sessions
	ID       string        `json:"id,omitempty"`
	Search   string        `json:"search,omitempty"`
	Sessions []SessionInfo `json:"sessions"`
}

type searchFrame struct {
	V     int         `json:"v"`
	Type  string      `json:"type"` // searchResults
	ID    string      `json:"id,omitempty"`
	Query string      `json:"query"`
	Hits  []SearchHit `json:"hits"`
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own frame types reach here; they always marshal.
		b, _ = json.Marshal(errorFrame{V: ProtocolVersion, Type: "error", Code: CodeFailed, Message: "encode frame: " + err.Error()})
	}
	return b
}

func errorJSON(e *FrameError) []byte {
	return mustJSON(errorFrame{V: ProtocolVersion, Type: "error", ID: e.ID, Code: e.Code, Message: e.Message})
}
