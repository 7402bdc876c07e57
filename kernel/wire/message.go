package wire

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// ProtocolVersion is the Jupyter messaging protocol version we speak: 5.5
// gives each new iopub subscriber an iopub_welcome and lists the optional
// features in kernel_info_reply (supported_features). Of those we offer
// the debugger and kernel subshells, in code mode, when the backing kernel
// offers them: we pass them through.
const ProtocolVersion = "5.5"

// Delimiter separates routing identities from the signed part of a message.
const Delimiter = "<IDS|MSG>"

// DateFormat is the ISO 8601 layout used for header dates (always UTC).
const DateFormat = "2006-01-02T15:04:05.000000Z"

// Header is a Jupyter message header.
type Header struct {
	MsgID    string `json:"msg_id"`
	Session  string `json:"session"`
	Username string `json:"username"`
	Date     string `json:"date"`
	MsgType  string `json:"msg_type"`
	Version  string `json:"version"`
	// SubshellID routes a shell request to a kernel subshell (protocol
	// 5.5); "" is the main shell.
	SubshellID string `json:"subshell_id,omitempty"`
}

// Message is one Jupyter message. ParentHeader, Metadata and Content hold raw
// JSON objects; a nil field encodes as {}.
type Message struct {
	// Identities are the ZeroMQ routing prefixes (ROUTER sockets) or the
	// topic (IOPub), everything before the delimiter.
	Identities [][]byte

	Header       Header
	ParentHeader json.RawMessage
	Metadata     json.RawMessage
	Content      json.RawMessage
	Buffers      [][]byte

	// rawHeader is the header exactly as received, so that forwarding or
	// using it as a parent header does not re-encode it.
	rawHeader json.RawMessage
	// signed holds, for a message read from a socket, its frames from the
	// signature on as they came, and signer the Signer that read them: a
	// proxy with the same key can send them on unchanged (Signer.Signed).
	signed [][]byte
	signer *Signer
	// check, for a message decoded lazily (Signer.DecodeLazy), verifies
	// its signature and metadata and content, once (Verify).
	check *lazyCheck
}

// RawHeader returns the header as JSON: the bytes received, or a fresh
// encoding for a message built locally.
func (m *Message) RawHeader() json.RawMessage {
	if m.rawHeader != nil {
		return m.rawHeader
	}
	b, err := json.Marshal(m.Header)
	if err != nil { // cannot happen: Header has only strings
		panic(fmt.Sprintf("wire: encode header: %v", err))
	}
	m.rawHeader = b
	return b
}

// Parent decodes the parent header. An empty parent ({} or absent) gives a
// zero Header and no error.
func (m *Message) Parent() (Header, error) {
	var h Header
	if len(m.ParentHeader) == 0 {
		return h, nil
	}
	if err := decodeHeader(m.ParentHeader, &h); err != nil {
		return h, fmt.Errorf("wire: decode parent header: %w", err)
	}
	return h, nil
}

// DecodeContent unmarshals the content into v.
func (m *Message) DecodeContent(v any) error {
	content := m.Content
	if len(content) == 0 {
		content = emptyObject
	}
	if err := json.Unmarshal(content, v); err != nil {
		return fmt.Errorf("wire: decode %s content: %w", m.Header.MsgType, err)
	}
	return nil
}

var emptyObject = json.RawMessage("{}")

// NewSessionID returns a fresh session id. A kernel calls it once per
// process (and per restart).
func NewSessionID() string { return uuid.NewString() }

// NewHeader returns a header for a new message of msgType in session.
func NewHeader(session, username, msgType string) Header {
	return Header{
		MsgID:    uuid.NewString(),
		Session:  session,
		Username: username,
		Date:     Now(),
		MsgType:  msgType,
		Version:  ProtocolVersion,
	}
}

// Complete fills what a header made elsewhere (a proxy keeps the
// frontend's msg_id and user) may lack: the type, session, user, date and
// version of a header of ours.
func (h *Header) Complete(session, username, msgType string) {
	if h.MsgType == "" {
		h.MsgType = msgType
	}
	if h.Session == "" {
		h.Session = session
	}
	if h.Username == "" {
		h.Username = username
	}
	if h.Date == "" {
		h.Date = Now()
	}
	if h.Version == "" {
		h.Version = ProtocolVersion
	}
}

// Now returns the current time in the header date format.
func Now() string { return time.Now().UTC().Format(DateFormat) }

// Reply builds a message of msgType answering parent: the parent's header
// becomes the parent header and the parent's identities are kept, so that a
// ROUTER socket sends it back to the peer that asked. content is marshalled
// to JSON (a json.RawMessage is used as is).
func Reply(parent *Message, session, msgType string, content any) (*Message, error) {
	raw, err := marshalContent(content)
	if err != nil {
		return nil, fmt.Errorf("wire: encode %s: %w", msgType, err)
	}
	username := "kernel"
	var ph json.RawMessage
	var ids [][]byte
	if parent != nil {
		if parent.Header.Username != "" {
			username = parent.Header.Username
		}
		ph = parent.RawHeader()
		ids = parent.Identities
	}
	return &Message{
		Identities:   ids,
		Header:       NewHeader(session, username, msgType),
		ParentHeader: ph,
		Content:      raw,
	}, nil
}

func marshalContent(content any) (json.RawMessage, error) {
	switch c := content.(type) {
	case nil:
		return emptyObject, nil
	case json.RawMessage:
		if len(c) == 0 {
			return emptyObject, nil
		}
		return c, nil
	default:
		return json.Marshal(c)
	}
}
