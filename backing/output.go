package backing

import (
	"encoding/json"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// Output is one message the kernel published while it ran code (an iopub
// message: a stream, a display, a result, an error, a status…), as it
// came but without its envelope: what a surface shows or publishes again
// under its own request. Type is the message type (kernel/wire's Msg…).
type Output struct {
	Type     string
	Content  json.RawMessage
	Metadata json.RawMessage
	Buffers  [][]byte
}

// outputOf is m's output.
func outputOf(m *wire.Message) Output {
	return Output{Type: m.Header.MsgType, Content: m.Content, Metadata: m.Metadata, Buffers: m.Buffers}
}
