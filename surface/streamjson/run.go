package streamjson

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
)

// Format is print mode's --output-format.
type Format string

// The output formats.
const (
	FormatText       Format = "text"        // the final answer
	FormatJSON       Format = "json"        // the result object
	FormatStreamJSON Format = "stream-json" // one JSON object per line as things happen
)

// Run is one print-mode run over a session host: a prompt, or each user
// message of a stream-json input, as a turn; each turn's events in the
// output format; a result per prompt.
type Run struct {
	Host   *session.Host
	Format Format
	// Prompt is the one prompt; with Input set, the prompts are its user
	// messages instead.
	Prompt string
	// Input is the stream-json input, or nil.
	Input *Input
	// Out and Tr are the output and the transcript of the session's
	// events (Tr emits only with stream-json).
	Out *Writer
	Tr  *Transcript
	// Stdout takes the text format's answers; Stderr the person's notes
	// (errors, denials) in text format.
	Stdout, Stderr io.Writer
	// Approve answers the asks.
	Approve agent.Approver
	// MaxTurns bounds each prompt's model requests; MaxBudget what the
	// run's requests may cost (0: no limit).
	MaxTurns  int
	MaxBudget float64
}

// Prompts runs one turn per prompt and returns the calls denied along the
// way and the last failed turn's error. With stream-json input it
// goes on after a failed turn, and an interrupt control_request cancels
// the running turn.
func (r *Run) Prompts(ctx context.Context) (denied []Denial, failed error) {
	turn := r.turn()
	if r.Input != nil {
		r.Input.OnControl(r.Out, func(subtype string, req json.RawMessage) (map[string]any, error) {
			return r.control(ctx, subtype, req)
		})
	}
	total, prompt := 0.0, r.Prompt
	for n := 0; ; n++ {
		if r.Input != nil {
			p, ok := r.Input.Next(ctx)
			if !ok || r.Input.Err() != nil {
				break
			}
			prompt, turn.Images = p.Text, p.Images
		} else if n > 0 {
			break
		}
		turn.Limits.MaxCost = 0
		if r.MaxBudget > 0 {
			turn.Limits.MaxCost = r.MaxBudget - total
		}
		var res session.Result
		var err error
		if r.MaxBudget > 0 && turn.Limits.MaxCost <= 0 {
			// The budget is spent: no request starts.
			res, err = session.Result{SessionID: r.Tr.sid}, agent.ErrMaxBudget
		} else {
			res, err = r.Host.Submit(ctx, prompt, turn)
		}
		if err == nil {
			err = r.Tr.PromptBlocked()
		}
		total += res.Usage.Cost
		result, d := r.Tr.Result(res, r.Host.Models().Model(), total, err)
		denied = append(denied, d...)
		switch r.Format {
		case FormatText:
			if res.Text != "" {
				fmt.Fprintln(r.Stdout, strings.TrimRight(res.Text, "\n"))
			}
		case FormatJSON, FormatStreamJSON:
			r.Out.Emit("result", result)
		}
		if err != nil {
			failed = fmt.Errorf("ask: %s", ErrorText(err))
			if ctx.Err() != nil || r.Input == nil {
				break
			}
		}
	}
	return denied, failed
}

// control carries out the client's control_requests: Claude Code's
// interrupt (the running turn is cancelled; its result follows, subtype
// error_during_execution), and our rewind ({"subtype": "rewind", "ts": TS,
// "conversation_only": bool}: the session goes back to before the message
// stamped ts and, unless conversation_only, its files; the kernel is left
// as it is, and the report says so).
func (r *Run) control(ctx context.Context, subtype string, req json.RawMessage) (map[string]any, error) {
	switch subtype {
	case "interrupt":
		r.Host.Cancel(ctx)
		return nil, nil
	case "rewind":
		var q struct {
			TS               int64 `json:"ts"`
			ConversationOnly bool  `json:"conversation_only"`
		}
		if err := json.Unmarshal(req, &q); err != nil || q.TS <= 0 {
			return nil, errors.New(`rewind needs "ts": the stamp of the first message to remove`)
		}
		rw, err := r.Host.World().Rewind(ctx, q.TS, session.RewindOptions{ConversationOnly: q.ConversationOnly,
			ConfirmReplay: func(context.Context, []session.CodeRun) bool { return false }})
		if err != nil {
			return nil, err
		}
		r.Tr.System("rewind", map[string]any{"to": q.TS, "removed": rw.Removed,
			"files": rw.Files, "kernel": rw.Kernel, "kernel_note": rw.KernelNote})
		return map[string]any{"removed": rw.Removed, "summary": rw.Summary()}, nil
	case "set_permission_mode", "set_mode":
		// Claude Code's set_permission_mode; an agent mode's name (code,
		// ask, architect, debug, the user's) switches the agent mode.
		var q struct {
			Mode string `json:"mode"`
		}
		if err := json.Unmarshal(req, &q); err != nil || q.Mode == "" {
			return nil, fmt.Errorf(`%s needs "mode"`, subtype)
		}
		if m, err := agent.ParsePermissionMode(q.Mode); err == nil {
			return map[string]any{"mode": string(m)}, r.Host.Modes().SetPermission(ctx, m)
		}
		m, err := r.Host.Modes().SetAgent(ctx, q.Mode)
		if err != nil {
			return nil, err
		}
		return map[string]any{"agent_mode": m.Name, "mode": string(r.Host.Modes().Permission())}, nil
	}
	return nil, fmt.Errorf("unsupported control_request %q (want interrupt, rewind or set_permission_mode)", subtype)
}

// turn is how each prompt's turn is followed.
func (r *Run) turn() session.Follow {
	turn := session.Follow{Approve: r.Approve, OnAsk: r.Tr.Ask, Limits: agent.Limits{MaxRequests: r.MaxTurns}}
	switch r.Format {
	case FormatStreamJSON:
		turn.Output = r.Tr.Output
	case FormatText:
		// What the agent reports as an error (a prompt a hook blocked, a
		// failing hook, …) is for the person at the terminal.
		turn.Events = func(e agent.Event) {
			if e.Kind == agent.EventMessageCreated && e.Message.Say == messages.SayError && e.Message.Decision == nil {
				fmt.Fprintln(r.Stderr, e.Message.Text)
			}
		}
		turn.OnAsk = func(x session.AnsweredAsk) {
			if x.Denied() {
				fmt.Fprintf(r.Stderr, "denied (%s): %s\n", x.Response.By, DescribeAsk(x.Ask))
			}
		}
	}
	return turn
}
