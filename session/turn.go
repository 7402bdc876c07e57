package session

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/messages"
)

// Follow says how Submit follows its turn.
type Follow struct {
	// Approve answers the turn's asks. When it cannot (it returns false),
	// Submit returns with the ask pending: the next prompt answers it.
	// Nil: every ask is left pending (someone else answers, through
	// Respond).
	Approve agent.Approver
	// Output receives the outputs of the code the agent runs in this turn,
	// unchanged (a notebook relays them to the cell). It travels with the
	// turn (agent.TurnOptions.Output): code the turn runs after Submit
	// returned (it paused on an ask that Respond answered later) still
	// reports here, and a turn another surface started never does.
	Output func(backing.Output)
	// Events receives the turn's events (agent.Turn.Listen).
	Events func(agent.Event)
	// OnAsk is told each ask and its answer, before the answer is given.
	OnAsk func(AnsweredAsk)
	// Limits bound the turn Submit starts (model requests, cost).
	Limits agent.Limits
	// Images are attached to Submit's text (%agent attach, stream-json
	// input's image blocks).
	Images []agent.Image
}

// AnsweredAsk is one ask and the answer it got.
type AnsweredAsk struct {
	Ask      messages.UIMessage
	Response agent.Response
}

// Denied reports whether the answer refused the ask.
func (a AnsweredAsk) Denied() bool { return a.Response.Kind == agent.ResponseNo }

// Result is the outcome of one Submit.
type Result struct {
	SessionID string
	// Text is the final answer: attempt_completion's result, else the
	// text of the model's last message.
	Text string
	// Completed is true when the model called attempt_completion.
	Completed bool
	// NextInput is the code the agent proposed for a new cell
	// (propose_cell), if any.
	NextInput string
	// Usage is the tokens and cost of this turn; Usage.Requests the
	// number of model requests.
	Usage agent.Totals
	// Totals are the session's tokens and cost after the turn.
	Totals   agent.Totals
	Duration time.Duration
	// Asks are the asks answered during the turn, with their answers.
	Asks []AnsweredAsk
	// Pending is set when the turn ended on an ask nobody could answer.
	Pending *messages.UIMessage
}

// Submit sends text to the current session (creating one on first use)
// and follows the turn to its end. It starts a turn, or answers the
// pending ask (a followup's answer, feedback to a completion, a retry).
// When ctx ends the turn is cancelled. The Result is filled in also on
// error, which is then agent.ErrNoProvider, one wrapping
// agent.ErrAPIFailed, agent.ErrMaxRequests or agent.ErrMaxBudget
// (f.Limits), ErrSuperseded, context.Canceled, ….
func (h *Host) Submit(ctx context.Context, text string, f Follow) (Result, error) {
	c, err := h.session(ctx)
	if err != nil {
		return Result{}, err
	}
	p := agent.Prompt{Text: text, Images: f.Images}
	h.logPrompt(ctx, c, p)
	return h.follow(ctx, c, f, func() (*agent.Turn, error) { return c.task.Start(p, turnOptions(f)) })
}

// turnOptions are the agent's options of the turn f follows.
func turnOptions(f Follow) agent.TurnOptions {
	return agent.TurnOptions{Limits: f.Limits, Output: codeSink(f.Output)}
}

// ErrSuperseded is returned by Submit when its turn was stopped by a newer
// prompt (from the web panel, another frontend): what the turn streamed is
// kept, marked partial, and the newer turn goes on.
var ErrSuperseded = errors.New("session: a newer prompt stopped this turn")

// StartPrompt sends p to the current session without following the turn:
// its asks wait for Respond (the web panel answers them). It returns the
// turn p went to.
func (h *Host) StartPrompt(ctx context.Context, p agent.Prompt) (*agent.Turn, error) {
	c, err := h.session(ctx)
	if err != nil {
		return nil, err
	}
	h.logPrompt(ctx, c, p)
	return c.task.Start(p, agent.TurnOptions{})
}

// StartEdit is Edit without following the turn: its asks wait for
// Respond (the web panel answers them).
func (h *Host) StartEdit(ctx context.Context, ts int64, text string, opts RewindOptions) (Rewound, error) {
	rw, err := h.world.Rewind(ctx, ts, opts)
	if err != nil {
		return rw, err
	}
	_, err = h.StartPrompt(ctx, agent.Prompt{Text: text})
	return rw, err
}

// follow runs start, then follows the turn it began to its end, and no
// further: a turn that a newer prompt stopped ends the follow with
// ErrSuperseded, and the newer turn is not followed. Each ask the turn
// pauses on goes to f.Approve.
func (h *Host) follow(ctx context.Context, c *current, f Follow, start func() (*agent.Turn, error)) (Result, error) {
	begin := time.Now()
	task := c.task
	before := task.Totals()
	nAPI := len(task.API())
	res := Result{SessionID: c.id}
	turn, err := start()
	var completion *string
	if err == nil {
		var (
			mu         sync.Mutex
			done, next *string // the listener's: attempt_completion's result, propose_cell's code
		)
		remove := turn.Listen(func(e agent.Event) {
			if e.Kind == agent.EventTaskCompleted || e.Kind == agent.EventSetNextInput {
				text := e.Text
				mu.Lock()
				if e.Kind == agent.EventTaskCompleted {
					done = &text
				} else {
					next = &text
				}
				mu.Unlock()
			}
			if f.Events != nil {
				f.Events(e)
			}
		})
		err = h.answer(ctx, c, turn, f, &res)
		remove()
		mu.Lock()
		completion = done
		if next != nil {
			res.NextInput = *next
		}
		mu.Unlock()
	}
	if ctx.Err() != nil {
		if turn != nil && turn.Err() == nil {
			task.Cancel()
		}
		err = ctx.Err()
	}
	after := task.Totals()
	res.Totals = after
	res.Usage = after.Since(before)
	res.Duration = time.Since(begin)
	if completion != nil {
		res.Completed, res.Text = true, *completion
	} else {
		res.Text = lastAssistantText(task.API(), nAPI)
	}
	return res, err
}

// answer follows turn until it ends, answering each ask it pauses on with
// f.Approve. An ask answered elsewhere meanwhile (the panel, another
// frontend) ends the approver's wait: an ask answered anywhere closes
// everywhere.
func (h *Host) answer(ctx context.Context, c *current, turn *agent.Turn, f Follow, res *Result) error {
	for {
		ask, ok, err := turn.Next(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !ok {
			if turn.Superseded() {
				return ErrSuperseded
			}
			return err
		}
		msg := ask.Message()
		if f.Approve == nil {
			res.Pending = &msg
			return nil
		}
		actx, stop := ask.Context(ctx)
		resp, answered := f.Approve(actx, msg)
		elsewhere := actx.Err() != nil && ctx.Err() == nil
		stop()
		if elsewhere {
			continue // answered by someone else, or rewound away
		}
		if !answered {
			res.Pending = &msg
			return nil
		}
		a := AnsweredAsk{Ask: msg, Response: resp}
		res.Asks = append(res.Asks, a)
		if f.OnAsk != nil {
			f.OnAsk(a)
		}
		h.logAnswer(ctx, c, msg.TS, resp)
		if err := c.task.Respond(msg.TS, resp); err != nil && !errors.Is(err, agent.ErrNoAsk) {
			return err
		}
	}
}

// lastAssistantText returns the text of the last assistant message after
// index from.
func lastAssistantText(api []messages.APIMessage, from int) string {
	for i := len(api) - 1; i >= from && i >= 0; i-- {
		if api[i].Role != messages.RoleAssistant {
			continue
		}
		var parts []string
		for _, b := range api[i].Content {
			if b.Type == messages.BlockText && strings.TrimSpace(b.Text) != "" {
				parts = append(parts, b.Text)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n")
		}
	}
	return ""
}

// Respond answers the current session's pending ask stamped ts. The first
// answer wins; a later one gets agent.ErrNoAsk.
func (h *Host) Respond(ctx context.Context, ts int64, r agent.Response) error {
	c, err := h.session(ctx)
	if err != nil {
		return err
	}
	h.logAnswer(ctx, c, ts, r)
	return c.task.Respond(ts, r)
}

// Cancel stops the current session's running turn, if any, and returns
// when it has ended. ctx only says where the command came from.
func (h *Host) Cancel(ctx context.Context) {
	c := h.active()
	if c != nil {
		h.logCommand(ctx, c, "cancel", "")
		c.task.Cancel()
	}
}

// Busy reports whether the current session runs a turn.
func (h *Host) Busy() bool {
	c := h.active()
	return c != nil && c.task.State() != agent.StateIdle
}
