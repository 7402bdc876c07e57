package webview

import "github.com/agentkernel/agentkernel/messages"

// How each ask is answered is decided here, once, from the ask classes of
// package messages, and sent with every ask message (its "answer") and
// every change of the pending ask (a message frame's "pending"): the page
// renders what it is told and keeps no list of ask kinds of its own.

// AskAnswer says how an ask is answered. Frames carry it on every ask
// message, as the message's "answer".
type AskAnswer struct {
	// Class is the ask's class (messages.ClassOf): "idle", "resumable",
	// "interactive" or "non-blocking".
	Class string `json:"class"`
	// Responses are the askResponse answers the ask takes, in the order a
	// panel offers them. With messageResponse among them a text the user
	// types answers the ask (an askResponse with its ts); without it the
	// text is a newTask, which an idle ask's task takes as its next prompt.
	Responses []ResponseKind `json:"responses"`
}

// askAnswers is the answer of every ask kind that package messages knows.
var askAnswers = func() map[messages.Ask]*AskAnswer {
	m := make(map[messages.Ask]*AskAnswer, len(messages.Asks))
	for _, a := range messages.Asks {
		m[a] = answerOf(a)
	}
	return m
}()

// answerOf decides how an ask of kind a is answered.
func answerOf(a messages.Ask) *AskAnswer {
	c := messages.ClassOf(a)
	ans := &AskAnswer{Class: c.String(), Responses: []ResponseKind{}}
	switch {
	case a == messages.AskFollowup:
		// A question: its answer is a text (or one of its suggestions).
		ans.Responses = []ResponseKind{ResponseMessage}
	case c == messages.AskClassInteractive:
		// An approval (code, a tool, an MCP server's tool): a text denies
		// it with the user's words for the model.
		ans.Responses = []ResponseKind{ResponseYes, ResponseAllowAll, ResponseNo, ResponseMessage}
	case a == messages.AskCompletionResult:
		// The task is done: a text is the next prompt.
	case c == messages.AskClassIdle || c == messages.AskClassResumable:
		// Stopped (a failed request, a limit) or interrupted: continue
		// (retry) or stop; a text is the next prompt.
		ans.Responses = []ResponseKind{ResponseYes, ResponseNo}
	}
	return ans
}

// wireMessage is a UI message as frames carry it: an ask says how it is
// answered.
type wireMessage struct {
	messages.UIMessage
	Answer *AskAnswer `json:"answer,omitempty"`
}

func toWire(m messages.UIMessage) wireMessage {
	w := wireMessage{UIMessage: m}
	if m.Type == messages.TypeAsk {
		w.Answer = askAnswers[m.Ask]
	}
	return w
}

func toWireAll(msgs []messages.UIMessage) []wireMessage {
	out := make([]wireMessage, len(msgs))
	for i, m := range msgs {
		out[i] = toWire(m)
	}
	return out
}

func toWirePtr(m *messages.UIMessage) *wireMessage {
	if m == nil {
		return nil
	}
	w := toWire(*m)
	return &w
}

// wireState is a State as the state frame carries it: its messages, and
// its pending ask, as wireMessages (the outer fields shadow State's).
type wireState struct {
	State
	Messages   []wireMessage `json:"messages"`
	PendingAsk *wireMessage  `json:"pendingAsk,omitempty"`
}

func toWireState(st State) wireState {
	return wireState{State: st, Messages: toWireAll(st.Messages), PendingAsk: toWirePtr(st.PendingAsk)}
}
