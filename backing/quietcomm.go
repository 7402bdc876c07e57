package backing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/google/uuid"
)

// quietTarget is the comm target Quiet registers in a Python kernel: a
// comm of it evaluates the expression each comm_msg carries in the
// user's namespace and sends back its value, as a silent
// execute_request's user expression would, without the execute's cost
// (ipykernel runs an empty cell, its hooks and its flushes for it: about
// 3 ms of a 5 ms read). Compiled expressions are kept by their text.
const quietTarget = "agentkernel.quiet"

// quietRegister registers quietTarget, in a namespace of its own (the
// user's gains no name); r is empty: the registration is what counts.
const quietRegister = `ip = get_ipython()
codes = {}
def target(comm, msg):
    def on_msg(m):
        e = m['content']['data'].get('expr', '')
        try:
            c = codes.get(e)
            if c is None:
                c = codes[e] = compile(e, '<agentkernel>', 'eval')
            comm.send({'status': 'ok', 'value': eval(c, ip.user_ns)})
        except Exception as x:
            comm.send({'status': 'error', 'ename': type(x).__name__, 'evalue': str(x)[:300]})
    comm.on_msg(on_msg)
ip.kernel.comm_manager.register_target('agentkernel.quiet', target)
r = ''
`

// errNoComm says that the kernel took no comm of quietTarget: the caller
// goes the execute_request's way.
var errNoComm = errors.New("backing: no quiet comm")

// commValue evaluates expr (a Python expression that gives a base64
// string) through Quiet's comm of the running kernel, registering the
// target and opening the comm on first use (and again for each new
// kernel). errNoComm when the kernel cannot have one.
func (q *Quiet) commValue(ctx context.Context, expr string) ([]byte, error) {
	id, err := q.comm(ctx)
	if err != nil {
		return nil, err
	}
	var got *wire.Message
	_, err = q.Runner.Do(ctx, client.Request{MsgType: wire.MsgCommMsg, Content: map[string]any{
		"comm_id": id, "data": map[string]string{"expr": expr}}}, client.Handlers{IOPub: func(m *wire.Message) {
		if m.Header.MsgType == wire.MsgCommMsg && got == nil {
			got = m
		}
	}})
	if err != nil {
		return nil, err
	}
	if got == nil { // the kernel lost the comm (a restart the generation did not show)
		q.forgetComm(ctx, id)
		return nil, errNoComm
	}
	var c struct {
		Data struct {
			evaluated
			Value any `json:"value"`
		} `json:"data"`
	}
	if err := json.Unmarshal(got.Content, &c); err != nil {
		return nil, fmt.Errorf("the kernel's answer: %w", err)
	}
	s, ok := c.Data.Value.(string)
	if !ok && c.Data.Status == "ok" {
		return nil, errors.New("the kernel's answer is not a string")
	}
	return c.Data.decode(s)
}

// comm returns the id of Quiet's comm in the running kernel, making it
// if need be.
func (q *Quiet) comm(ctx context.Context) (string, error) {
	gen, ok := q.acquire(ctx)
	if !ok {
		return "", ctx.Err()
	}
	defer q.release()
	if q.commGen == gen && q.commFailed {
		return "", errNoComm
	}
	if q.commGen == gen && q.commID != "" {
		return q.commID, nil
	}
	q.commID, q.commFailed, q.commGen = "", false, gen
	var eval *evalError
	if _, err := executeValue(ctx, q.Runner, programExpr(quietRegister, "{'get_ipython': get_ipython}")); errors.As(err, &eval) {
		q.commFailed = true // not IPython, or a kernel without comms: not for this kernel
		return "", errNoComm
	} else if err != nil {
		return "", err // try again next time: the kernel may have been busy
	}
	id := uuid.NewString()
	if _, err := q.Runner.Do(ctx, client.Request{MsgType: wire.MsgCommOpen, Content: map[string]any{
		"comm_id": id, "target_name": quietTarget, "data": map[string]any{}}}, client.Handlers{}); err != nil {
		return "", err
	}
	q.commID = id
	return id, nil
}

// forgetComm drops the comm id, so that the next read makes a new one
// (unless ctx ends first: that read finds the comm gone as well).
func (q *Quiet) forgetComm(ctx context.Context, id string) {
	if _, ok := q.acquire(ctx); !ok {
		return
	}
	if q.commID == id {
		q.commID, q.commGen = "", -1
	}
	q.release()
}
