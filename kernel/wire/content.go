package wire

import "encoding/json"

// Channel names one of a kernel's sockets. The server (package kernel) and
// the client (kernel/client) share it.
type Channel string

// The channels.
const (
	Shell     Channel = "shell"
	Control   Channel = "control"
	Stdin     Channel = "stdin"
	IOPub     Channel = "iopub"
	Heartbeat Channel = "hb"
)

// Message types of the messaging spec that agentkernel builds or reads.
const (
	MsgExecuteRequest    = "execute_request"
	MsgExecuteReply      = "execute_reply"
	MsgExecuteInput      = "execute_input"
	MsgExecuteResult     = "execute_result"
	MsgKernelInfoRequest = "kernel_info_request"
	MsgKernelInfoReply   = "kernel_info_reply"
	MsgCompleteRequest   = "complete_request"
	MsgCompleteReply     = "complete_reply"
	MsgInspectRequest    = "inspect_request"
	MsgInspectReply      = "inspect_reply"
	MsgIsCompleteRequest = "is_complete_request"
	MsgIsCompleteReply   = "is_complete_reply"
	MsgHistoryRequest    = "history_request"
	MsgHistoryReply      = "history_reply"
	MsgCommInfoRequest   = "comm_info_request"
	MsgCommInfoReply     = "comm_info_reply"
	MsgCommOpen          = "comm_open"
	MsgCommMsg           = "comm_msg"
	MsgCommClose         = "comm_close"
	MsgShutdownRequest   = "shutdown_request"
	MsgShutdownReply     = "shutdown_reply"
	MsgInterruptRequest  = "interrupt_request"
	MsgInterruptReply    = "interrupt_reply"
	MsgInputRequest      = "input_request"
	MsgInputReply        = "input_reply"
	MsgStatus            = "status"
	MsgStream            = "stream"
	MsgDisplayData       = "display_data"
	MsgUpdateDisplayData = "update_display_data"
	MsgClearOutput       = "clear_output"
	MsgError             = "error"
	MsgDebugRequest      = "debug_request"
	MsgDebugReply        = "debug_reply"
	MsgDebugEvent        = "debug_event"
	MsgIOPubWelcome      = "iopub_welcome"
	// Kernel subshells (protocol 5.5), on control.
	MsgCreateSubshellRequest = "create_subshell_request"
	MsgCreateSubshellReply   = "create_subshell_reply"
	MsgDeleteSubshellRequest = "delete_subshell_request"
	MsgDeleteSubshellReply   = "delete_subshell_reply"
	MsgListSubshellRequest   = "list_subshell_request"
	MsgListSubshellReply     = "list_subshell_reply"
)

// Execution states of a status message.
const (
	StateBusy     = "busy"
	StateIdle     = "idle"
	StateStarting = "starting"
)

// Reply statuses.
const (
	StatusOK      = "ok"
	StatusError   = "error"
	StatusAborted = "aborted"
)

// Status is the content of a status message.
type Status struct {
	ExecutionState string `json:"execution_state"`
}

// Stream is the content of a stream message.
type Stream struct {
	Name string `json:"name"` // "stdout" or "stderr"
	Text string `json:"text"`
}

// Error is the content of an error message, and the error part of a reply
// whose status is "error".
type Error struct {
	EName     string   `json:"ename"`
	EValue    string   `json:"evalue"`
	Traceback []string `json:"traceback"`
}

// DisplayData is the content of display_data, update_display_data and (with
// ExecutionCount) execute_result.
type DisplayData struct {
	Data           map[string]json.RawMessage `json:"data"`
	Metadata       map[string]any             `json:"metadata"`
	Transient      map[string]any             `json:"transient,omitempty"`
	ExecutionCount int                        `json:"execution_count,omitempty"`
}

// ExecuteRequest is the content of an execute_request.
type ExecuteRequest struct {
	Code            string            `json:"code"`
	Silent          bool              `json:"silent"`
	StoreHistory    *bool             `json:"store_history,omitempty"` // default true
	UserExpressions map[string]string `json:"user_expressions"`
	AllowStdin      bool              `json:"allow_stdin"`
	StopOnError     *bool             `json:"stop_on_error,omitempty"` // default true
}

// ExecuteReply is the content of an execute_reply. With Status "error",
// Error is set (nil leaves its fields out).
type ExecuteReply struct {
	Status         string `json:"status"`
	ExecutionCount int    `json:"execution_count"`
	*Error
	UserExpressions map[string]any `json:"user_expressions"`
	Payload         []any          `json:"payload"`
}

// ErrorReply is the content of any other reply whose status is "error".
type ErrorReply struct {
	Status string `json:"status"`
	*Error
}
