package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentkernel/agentkernel/agent"
	"github.com/agentkernel/agentkernel/headless"
	"github.com/agentkernel/agentkernel/kernel"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/kernel/wire"
	"github.com/agentkernel/agentkernel/messages"
)

// codeCell runs a %%code cell of prompt mode in the backing kernel: its
// outputs go to the cell as they are (execute_result renumbered to the
// cell's count), and it is recorded as cell_executed and handed to the
// model with the next prompt.
func (b *Bridge) codeCell(ctx context.Context, r *kernel.Request, code string, count int) {
	k, err := b.kernelFor(ctx)
	if err != nil {
		b.replyError(r, count, "BackingKernelError", err.Error())
		return
	}
	var c struct {
		AllowStdin bool `json:"allow_stdin"`
	}
	_ = r.Msg.DecodeContent(&c)
	var col headless.Collector
	inputCtx, cancelInput := context.WithCancel(ctx)
	defer cancelInput()
	rep, err := k.Client().Execute(ctx, code, client.ExecuteOptions{AllowStdin: c.AllowStdin}, client.Handlers{
		IOPub: func(m *wire.Message) {
			col.Add(m)
			switch m.Header.MsgType {
			case "status", "execute_input":
				return
			case "execute_result":
				var content map[string]any
				if m.DecodeContent(&content) == nil {
					content["execution_count"] = count
					if err := r.Publish("execute_result", content); err != nil {
						b.log.Debug("relay execute_result", "error", err)
					}
					return
				}
			}
			if err := r.PublishRaw(m.Header.MsgType, m.Content, m.Metadata, m.Buffers); err != nil {
				b.log.Debug("relay", "error", err)
			}
		},
		Input: func(prompt string, password bool) (string, error) { return r.Input(inputCtx, prompt, password) },
	})
	if err != nil {
		if errors.Is(err, client.ErrDead) {
			b.replyError(r, count, "DeadKernelError", fmt.Sprintf(
				"the backing kernel (%s) died; it will be restarted at the next execution", b.cfg.Backing))
			return
		}
		b.replyError(r, count, "BackingKernelError", err.Error())
		return
	}
	res := col.CodeResult()
	output := res.Stdout + res.Stderr + res.Result
	for _, im := range res.Images {
		output += im.Summary() + "\n"
	}
	var st struct {
		Status string   `json:"status"`
		Ename  string   `json:"ename"`
		Evalue string   `json:"evalue"`
		TB     []string `json:"traceback"`
	}
	_ = rep.DecodeContent(&st)
	if st.Status == "error" {
		output += st.Ename + ": " + st.Evalue + "\n"
	}
	if s, err := b.agentFor(ctx); err == nil {
		s.addCell(code, output)
		rec, _ := json.Marshal(map[string]string{"code": code, "output": capText(output, 20000), "status": st.Status})
		if _, err := s.task.Record(ctx, messages.SayCellExecuted, string(rec)); err != nil && !errors.Is(err, agent.ErrBusy) {
			b.log.Warn("record cell", "error", err)
		}
	}
	if st.Status == "error" {
		if err := r.Reply("execute_reply", map[string]any{"status": "error", "execution_count": count,
			"ename": st.Ename, "evalue": st.Evalue, "traceback": st.TB}); err != nil {
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
	if err := r.Reply("complete_reply", map[string]any{"status": "ok", "matches": matches,
		"cursor_start": start, "cursor_end": pos, "metadata": map[string]any{}}); err != nil {
		b.log.Debug("complete_reply", "error", err)
	}
}
