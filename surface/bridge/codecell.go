package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
)

// codeCell runs a %%code cell of prompt mode in the backing kernel through
// the host, which records it (cell_executed, the code log) and hands it to
// the model with the next prompt: its outputs go to the cell as they are
// (execute_result renumbered to the cell's count).
func (b *Bridge) codeCell(ctx context.Context, r *kernel.Request, code string, count int) {
	var input func(string, bool) (string, error)
	if r.AllowStdin() {
		inputCtx, cancelInput := context.WithCancel(ctx)
		defer cancelInput()
		input = func(prompt string, password bool) (string, error) { return r.Input(inputCtx, prompt, password) }
	}
	res, err := b.host.CodeLog().RunCell(ctx, backing.Exec{Code: code, Input: input, Output: func(o backing.Output) {
		switch o.Type {
		case wire.MsgStatus, wire.MsgExecuteInput:
			return
		case wire.MsgExecuteResult:
			var content wire.DisplayData
			if json.Unmarshal(o.Content, &content) == nil {
				content.ExecutionCount = count
				if err := r.Publish(wire.MsgExecuteResult, content); err != nil {
					b.log.Debug("relay execute_result", "error", err)
				}
				return
			}
		}
		if err := r.PublishRaw(o.Type, o.Content, o.Metadata, o.Buffers); err != nil {
			b.log.Debug("relay", "error", err)
		}
	}})
	if errors.Is(err, context.Canceled) && res.Status != "" {
		err = nil // interrupted, and the kernel said so itself (KeyboardInterrupt)
	}
	switch {
	case errors.Is(err, client.ErrDead):
		b.replyError(r, count, "DeadKernelError", fmt.Sprintf(
			"the backing kernel (%s) died; it will be restarted at the next execution", b.runner.Describe()))
		return
	case errors.Is(err, backing.ErrInterrupted), errors.Is(err, context.Canceled):
		b.replyError(r, count, "KeyboardInterrupt", "interrupted")
		return
	case err != nil:
		b.replyError(r, count, "BackingKernelError", err.Error())
		return
	}
	if e := res.Error; e != nil {
		if err := r.Reply(wire.MsgExecuteReply, wire.ExecuteReply{Status: wire.StatusError, ExecutionCount: count,
			Error:           &wire.Error{EName: e.Name, EValue: e.Value, Traceback: e.Traceback},
			UserExpressions: map[string]any{}, Payload: []any{}}); err != nil {
			b.log.Debug("execute_reply", "error", err)
		}
		return
	}
	b.replyOK(r, count, "")
}

// completeMagic completes %agent subcommands and the cell magics in prompt
// mode; prose has nothing to complete.
func (b *Bridge) completeMagic(r *kernel.Request) {
	var c struct {
		Code      string `json:"code"`
		CursorPos int    `json:"cursor_pos"`
	}
	_ = r.Msg.DecodeContent(&c)
	runes := []rune(c.Code)
	pos := min(max(c.CursorPos, 0), len(runes))
	line := string(runes[:pos])
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	var matches []string
	start := pos
	switch {
	case strings.HasPrefix(line, "%agent "):
		word := strings.TrimPrefix(line, "%agent ")
		if !strings.Contains(word, " ") {
			for _, w := range magicWords {
				if strings.HasPrefix(w, word) {
					matches = append(matches, w)
				}
			}
			start = pos - len([]rune(word))
		}
	case strings.HasPrefix(line, "%"):
		for _, w := range []string{"%agent", "%%code", "%%agent"} {
			if strings.HasPrefix(w, line) {
				matches = append(matches, w)
			}
		}
		start = pos - len([]rune(line))
	}
	if matches == nil {
		matches = []string{}
	}
	if err := r.Reply(wire.MsgCompleteReply, map[string]any{"status": "ok", "matches": matches,
		"cursor_start": start, "cursor_end": pos, "metadata": map[string]any{}}); err != nil {
		b.log.Debug("complete_reply", "error", err)
	}
}
